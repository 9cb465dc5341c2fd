"""With no ``OTEL_*`` variable and no ``[otel]`` section, a run exports nothing and imports
none of OpenTelemetry: the CLI does not pay for the extra it does not use (a real headless demo
run in a subprocess, its modules read at exit). With export on and nothing listening, the run
goes on and the SDK's retries are one line on stderr."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import io_tui, user_env

PROBE = (
    "import atexit, sys\n"
    "atexit.register(lambda: sys.stderr.write('OTEL_MODULES=%d\\n' % sum(\n"
    "    m.split('.')[0] == 'opentelemetry' for m in sys.modules)))\n"
    "from io_tui.cli import main\n"
    "sys.argv = ['io-tui', 'demo', '--headless', '--store', sys.argv[1]]\n"
    "raise SystemExit(main())\n"
)


def test_a_run_without_otel_imports_none_of_it(tmp_path: Path) -> None:
    env = user_env(drop=[n for n in user_env() if n.startswith("OTEL_")])
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "store.db")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "OTEL_MODULES=0" in done.stderr, done.stderr


@pytest.mark.skipif(
    importlib.util.find_spec("opentelemetry.sdk") is None,
    reason="the otel extra is not installed: pip install -e '.[otel]'",
)
def test_an_unreachable_collector_is_one_line_and_the_run_goes_on(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = user_env(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
         "OTEL_METRICS_EXPORTER": "none", "OTEL_EXPORTER_OTLP_TIMEOUT": "2"},
        drop=["OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_TRACES_EXPORTER"],
    )  # fmt: skip
    done = io_tui("demo", "--headless", "--store", str(tmp_path / "s.db"), env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "run 1: finished (success)" in done.stdout
    told = [line for line in done.stderr.splitlines() if "OpenTelemetry" in line]
    assert len(told) == 1 and told[0].startswith("io-tui: OpenTelemetry export to "), told
    assert "Transient error" not in done.stderr.replace(told[0], "")
    assert "Traceback" not in done.stderr
