"""A real OTLP receiver for the export tests: Arize Phoenix (``phoenix serve``, from the
``arize-phoenix`` package the test bootstrap installs in a virtualenv of its own,
``.venv/phoenix``), on 127.0.0.1 with ports of its own and a scratch working directory; the
spans it stored read back through its REST API.

Phoenix lives apart from io-tui's virtualenv: it is a server with its own pins, and io-tui
talks to it as any user's collector, over OTLP. ``IO_TUI_TEST_PHOENIX`` names another
``phoenix`` executable.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 240  # a cold start imports a large application


def phoenix_executable() -> Path | None:
    named = os.environ.get("IO_TUI_TEST_PHOENIX")
    path = Path(named) if named else ROOT / ".venv" / "phoenix" / "bin" / "phoenix"
    return path if path.is_file() else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Phoenix:
    process: subprocess.Popen[bytes]
    http_port: int
    grpc_port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"http://127.0.0.1:{self.grpc_port}"

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.url + path, timeout=10) as response:
            return json.loads(response.read())

    def spans(self, project: str) -> list[dict[str, Any]]:
        """Every span Phoenix stored for ``project`` (none for a project it has not seen)."""
        found: list[dict[str, Any]] = []
        cursor = ""
        while True:
            try:
                page = self.get(f"/v1/projects/{project}/spans?limit=1000{cursor}")
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    return []
                raise
            found += page["data"]
            if not page.get("next_cursor"):
                return found
            cursor = f"&cursor={page['next_cursor']}"

    def wait_spans(self, project: str, count: int, timeout_s: float = 60) -> list[dict[str, Any]]:
        """``project``'s spans once there are at least ``count`` of them (polled)."""
        deadline = time.monotonic() + timeout_s
        while True:
            spans = self.spans(project)
            if len(spans) >= count or time.monotonic() > deadline:
                return spans
            time.sleep(0.2)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def start_phoenix(executable: Path, workdir: Path) -> Phoenix:
    """``phoenix serve`` on 127.0.0.1, answering its health check (else AssertionError with
    the end of its log)."""
    http_port, grpc_port = free_port(), free_port()
    log = workdir / "phoenix.log"
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(http_port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "DO_NOT_TRACK": "1",
    }
    for name in [n for n in env if n.startswith("OTEL_")]:
        del env[name]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(executable), "serve"], stdout=out, stderr=subprocess.STDOUT, env=env,
            start_new_session=True,
        )  # fmt: skip
    server = Phoenix(process, http_port, grpc_port, log)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with urllib.request.urlopen(f"{server.url}/healthz", timeout=2) as response:
                if response.status == 200:
                    return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.25)
    server.stop()
    raise AssertionError(f"phoenix did not start: {log.read_text(errors='replace')[-2000:]}")
