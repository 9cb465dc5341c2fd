"""The test bootstrap's PostgreSQL server does not outlive a test process that is killed: the
next start stops it (``pg_cluster.running``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pg_cluster import MISSING, PG_BIN, _reap_orphans

SUPPORT = Path(__file__).parent / "support"


def _server_of(root: str) -> bool:
    found = subprocess.run(["pgrep", "-f", f"postgres -D {root}/data"], capture_output=True)
    return found.returncode == 0


def test_a_cluster_whose_test_process_was_killed_is_stopped_by_the_next_start() -> None:
    if not (PG_BIN / "initdb").exists():
        pytest.skip(MISSING)
    code = textwrap.dedent(f"""
        import sys, tempfile, time
        from pathlib import Path
        sys.path.insert(0, {str(SUPPORT)!r})
        from pg_cluster import Cluster, running
        root = Path(tempfile.mkdtemp(prefix="iotu-pg-", dir="/tmp"))
        server = running(Cluster(root), "the orphan server")  # held: its finally runs at exit
        next(server)
        print(root, flush=True)
        time.sleep(600)
    """)
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None
    root = owner.stdout.readline().strip()
    assert root and _server_of(root)
    os.kill(owner.pid, signal.SIGKILL)  # its fixture's ``finally`` never runs
    owner.wait()
    assert _server_of(root)  # left running: what would pile up over sessions
    _reap_orphans()
    assert not _server_of(root) and not Path(root).exists()
