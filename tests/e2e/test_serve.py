"""``io-tui serve``: the app behind textual-serve, listening on 127.0.0.1 only."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def serving(tmp_path: Path) -> Iterator[tuple[int, str]]:
    """``io-tui serve`` on a free port, its config and store in ``tmp_path``: (port, page)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["IO_TUI_CONFIG_DIR"] = str(tmp_path / "cfg")
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
        cwd=tmp_path,
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
        yield port, page
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)


def test_serve_answers_on_loopback_only(tmp_path: Path) -> None:
    with serving(tmp_path) as (port, page):
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


CHROMIUM = shutil.which("chromium")
# as the machine's notes advise: no background connections to a network that is closed
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (.ci/run installs Debian's)")
def test_keys_typed_in_a_browser_before_any_click_start_a_run(tmp_path: Path) -> None:
    """The page gives the terminal the keyboard once the app has drawn: ctrl+n, a task and
    ctrl+s typed without a click start the run (the page took keys only after a click, and the
    app, told it had no focus, showed an empty footer)."""
    playwright = pytest.importorskip("playwright.sync_api")
    with serving(tmp_path) as (port, _page), playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"http://127.0.0.1:{port}/")
        page.wait_for_selector("body.-first-byte", timeout=30_000)
        focused = "document.activeElement.classList.contains('xterm-helper-textarea')"
        page.wait_for_function(focused, timeout=10_000)
        page.keyboard.press("Control+n")
        page.keyboard.type("say hi from a browser")
        page.keyboard.press("Control+s")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not goals(tmp_path / "s.db"):
            time.sleep(0.2)
        browser.close()
    assert goals(tmp_path / "s.db") == ["say hi from a browser"]


def goals(store: Path) -> list[str]:
    if not store.exists():
        return []
    with sqlite3.connect(store) as conn:
        try:
            return [row[0] for row in conn.execute("SELECT goal FROM runs ORDER BY id")]
        except sqlite3.OperationalError:  # not made yet
            return []
