"""A throwaway PostgreSQL 15 server for the tests, and the store fixtures over both backends.

``pg_cluster`` (session-scoped) runs ``initdb`` into a temp dir as an unprivileged user (initdb
refuses root: as root the dir is handed to ``nobody`` and the server runs through ``runuser``),
starts ``postgres`` listening on a unix socket in that dir only (no TCP), and stops it after the
session. Every pytest-xdist worker is a session of its own, so each has its own cluster. Each
test gets a fresh, empty database (``CREATE DATABASE`` from ``template0``: milliseconds).

Where the server binaries are absent the PostgreSQL cases are skipped with the reason; they are
``/usr/lib/postgresql/15/bin`` (Debian's ``postgresql-15``) unless ``IO_TUI_PG_BIN`` names
another directory.

``store_on_both`` is ``store_path`` for the store's own tests: each such test runs once on a
SQLite file and once on a PostgreSQL database (a module imports it as ``store_path``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

PG_BIN = Path(os.environ.get("IO_TUI_PG_BIN") or "/usr/lib/postgresql/15/bin")
MISSING = f"PostgreSQL server binaries not found in {PG_BIN} (apt-get install postgresql-15)"
_UNPRIVILEGED = "nobody"
OWNER_FILE = "owner.pid"  # the test process that started a cluster (``running``)


class Cluster:
    """One running server; ``new_database()`` gives a fresh database's connection URL."""

    def __init__(self, root: Path, *, fsync: bool = False) -> None:
        self.root = root
        self.fsync = fsync  # off for the tests: nothing there must outlive a crash
        self.data = root / "data"
        self.socket_dir = root
        self._names = itertools.count(1)
        self._as_user = _drop_privileges()

    def _run(self, *command: str | Path) -> None:
        subprocess.run(
            [*self._as_user, *map(str, command)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            cwd=self.root,
        )

    def start(self) -> None:
        if self._as_user:
            shutil.chown(self.root, _UNPRIVILEGED)
        self._run(
            PG_BIN / "initdb", "-D", self.data, "-U", "postgres", "-A", "trust",
            "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions",
        )  # fmt: skip
        self._run(PG_BIN / "pg_ctl", "-D", self.data, "-l", self.root / "log", "-o",
                  self._options(), "-w", "start")  # fmt: skip

    def _options(self) -> str:
        options = f"-k {self.socket_dir} -c listen_addresses='' -c max_connections=200"
        if not self.fsync:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        return options

    def stop(self) -> None:
        try:
            self._run(PG_BIN / "pg_ctl", "-D", self.data, "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def restart(self, down_s: float = 0.2) -> None:
        """Stop the server (fast: every connection is cut, as in a restart or a failover),
        leave it down ``down_s``, and start it again, waiting until it accepts connections."""
        import time

        self._run(PG_BIN / "pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")
        time.sleep(down_s)
        self._run(PG_BIN / "pg_ctl", "-D", self.data, "-l", self.root / "log", "-o",
                  self._options(), "-w", "start")  # fmt: skip

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@/{database}?host={self.socket_dir}"

    def sql(self, statement: str, database: str = "postgres") -> None:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute(statement)

    def new_database(self) -> str:
        name = f"t{next(self._names)}"
        self.sql(f"CREATE DATABASE {name} TEMPLATE template0")
        return self.url(name)


def _drop_privileges() -> list[str]:
    """The prefix that runs a command as an unprivileged user when we are root; none otherwise."""
    if os.geteuid() != 0:
        return []
    return ["runuser", "-u", _UNPRIVILEGED, "--"]


def running(cluster: Cluster, what: str) -> Iterator[Cluster]:
    """Start ``cluster`` for a fixture (``yield from``) and stop it after; a server that does not
    start is an error with its log. A cluster left by a test process that died (killed: its
    ``finally`` never ran) is stopped first."""
    _reap_orphans()
    try:
        cluster.start()
    except subprocess.CalledProcessError as exc:
        log = cluster.root / "log"
        detail = log.read_text() if log.exists() else exc.stderr.decode(errors="replace")
        cluster.stop()
        raise RuntimeError(f"{what} did not start: {detail}") from None
    (cluster.root / OWNER_FILE).write_text(str(os.getpid()))
    try:
        yield cluster
    finally:
        cluster.stop()


def _reap_orphans() -> None:
    """Stop the servers under /tmp whose owning test process is gone."""
    for owner in Path("/tmp").glob(f"iotu-*/{OWNER_FILE}"):
        try:
            os.kill(int(owner.read_text()), 0)
        except ProcessLookupError:
            with contextlib.suppress(subprocess.CalledProcessError):  # its server is gone too
                Cluster(owner.parent).stop()
        except (OSError, ValueError):
            continue  # another user's, or being written: leave it


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster]:
    if not (PG_BIN / "initdb").exists():
        pytest.skip(MISSING)
    # short: a unix socket's path must stay under ~107 bytes
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="iotu-pg-", dir="/tmp")))
    yield from running(cluster, "the test PostgreSQL server")


@pytest.fixture
def own_pg_cluster() -> Iterator[Cluster]:
    """A server of the test's own, to restart: the session's serves the other tests."""
    if not (PG_BIN / "initdb").exists():
        pytest.skip(MISSING)
    cluster = Cluster(Path(tempfile.mkdtemp(prefix="iotu-pg-", dir="/tmp")))
    yield from running(cluster, "the test's own PostgreSQL server")


@pytest.fixture
def pg_url(pg_cluster: Cluster) -> str:
    """A fresh, empty database on the session's server."""
    return pg_cluster.new_database()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_on_both(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """A store location that does not exist yet: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        return tmp_path / "store.db"
    return str(request.getfixturevalue("pg_url"))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say it at the end, not only in a skip count: the PostgreSQL cases did not run here."""
    if not (PG_BIN / "initdb").exists():
        terminalreporter.write_line(f"PostgreSQL store tests SKIPPED: {MISSING}", yellow=True)
