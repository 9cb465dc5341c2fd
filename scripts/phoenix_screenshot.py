"""Render the README's Observability screenshot: the demo run exported to a real Arize Phoenix.

Starts ``phoenix serve`` on 127.0.0.1 (from ``.venv/phoenix``, as the export tests do), runs
``io-tui demo --headless`` with the standard ``OTEL_*`` variables pointed at it, opens the run's
trace in Phoenix's own web UI with headless Chromium and writes ``screenshots/otel-phoenix.png``.
Needs the ``otel`` extra, Phoenix (``make .venv/.installed``) and Chromium (Debian's
``chromium``). Run with ``.venv/bin/python scripts/phoenix_screenshot.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from phoenix import phoenix_executable, start_phoenix  # noqa: E402

OUT = ROOT / "screenshots" / "otel-phoenix.png"
PROJECT = "io-tui-demo"
SIZE = "1600,1000"


def main() -> int:
    executable = phoenix_executable()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if executable is None or chromium is None:
        sys.stderr.write("needs Phoenix (.venv/phoenix) and Chromium (apt-get install chromium)\n")
        return 2
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        server = start_phoenix(executable, work)
        try:
            env = {
                **{k: v for k, v in os.environ.items() if k != "NO_COLOR"},
                "OTEL_EXPORTER_OTLP_ENDPOINT": server.url,
                "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
                "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={PROJECT}",
                "OTEL_METRICS_EXPORTER": "none",
                "IO_TUI_CONFIG_DIR": str(work / "cfg"),
            }
            subprocess.run(
                [sys.executable, "-m", "io_tui", "demo", "--headless", "--store",
                 str(work / "store.db")],
                check=True, env=env, capture_output=True, timeout=300,
            )  # fmt: skip
            root = run_span(server)
            trace_id = root["context"]["trace_id"]
            project_id = project_id_of(server, PROJECT)
            url = f"{server.url}/projects/{project_id}/traces/{trace_id}"
            shoot(chromium, url, work)
        finally:
            server.stop()
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


def run_span(server, within_s: float = 60) -> dict:
    """The run's ``invoke_agent`` span, once Phoenix has it (it ends, and is sent, last)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        roots = [s for s in server.spans(PROJECT) if s["parent_id"] is None]
        if roots:
            return roots[0]
        time.sleep(0.5)
    raise SystemExit("Phoenix never received the run's span")


def project_id_of(server, name: str) -> str:
    for project in server.get("/v1/projects")["data"]:
        if project["name"] == name:
            return str(project["id"])
    raise SystemExit(f"Phoenix has no project {name!r}")


def shoot(chromium: str, url: str, work: Path) -> None:
    OUT.parent.mkdir(exist_ok=True)
    subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={work / 'chromium'}", f"--window-size={SIZE}",
         "--virtual-time-budget=15000", f"--screenshot={OUT}", url],
        check=True, capture_output=True, timeout=180,
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())
