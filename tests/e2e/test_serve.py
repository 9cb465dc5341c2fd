"""``io-tui serve``: the app behind textual-serve, listening on 127.0.0.1 only."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def listening_addresses(port: int) -> set[str]:
    """Local addresses bound to ``port`` in LISTEN state, read from /proc/net/tcp."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, _, hex_port = local.partition(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


def test_serve_answers_on_loopback_only(tmp_path: Path) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "io_tui",
            "serve",
            "--port",
            str(port),
            "--store",
            str(tmp_path / "s.db"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        start_new_session=True,  # its own process group: teardown kills every child
    )
    try:
        page = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                    assert response.status == 200
                    page = response.read().decode()
                    break
            except OSError:
                time.sleep(0.2)
        assert "io-tui" in page
        assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1, nothing else
        # Everything the page loads (stylesheet, script, fonts, images, the app's websocket)
        # comes from 127.0.0.1: textual-serve's own page fetches its font from Google.
        urls = set(re.findall(r"""(?:href|src|url)\s*[=(]\s*["']([^"']+)["']""", page))
        urls |= set(re.findall(r'data-session-websocket-url="([^"]+)"', page))
        assert any(u.endswith(".ttf") for u in urls) and any(u.endswith(".js") for u in urls)
        for url in urls:
            assert url.startswith((f"http://127.0.0.1:{port}/", f"ws://127.0.0.1:{port}/")), url
            if url.startswith("http"):
                with urllib.request.urlopen(url, timeout=5) as response:
                    assert response.status == 200, url
        assert "googleapis" not in page
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
