"""Helpers for MCP tests: the npm server-everything and server-filesystem (installed once,
cached), the test server's command line, a free port, and finding processes by an environment
marker (leak checks)."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TEST_SERVER = Path(__file__).with_name("mcp_test_server.py")
EVERYTHING = "@modelcontextprotocol/server-everything"
FILESYSTEM = "@modelcontextprotocol/server-filesystem"
MARK_VAR = "IO_TUI_MCP_TEST_MARK"
# A policy whose layer denies every command run by ``sh``: a server started so is refused.
DENY_SH = """
[[layers]]
name = "project"
[[layers.rules]]
act = "exec"
effect = "deny"
pattern = "sh *"
"""


def server_script_args(mode: str = "serve") -> list[str]:
    return [str(TEST_SERVER), mode]


def npm_cache_dir(package: str = EVERYTHING) -> Path:
    """Where ``package`` is installed: under the repo's .venv when there is one (kept between
    sessions), else a temp dir; server-everything in ``npm-mcp``, another in its own folder."""
    venv = REPO / ".venv"
    base = venv / ".cache" if venv.is_dir() else Path(tempfile.gettempdir()) / "io-tui-test-cache"
    return base / ("npm-mcp" if package == EVERYTHING else f"npm-{package.rpartition('/')[2]}")


@cache
def npm_entry(package: str) -> Path:
    """The installed ``dist/index.js`` of the npm ``package`` (from the npm registry, on first
    use; cached); skips only when npm is missing."""
    npm = shutil.which("npm")
    node = shutil.which("node")
    if npm is None or node is None:
        pytest.skip(f"npm/node not found on PATH: cannot install {package}")
    final = npm_cache_dir(package)
    entry = final / "node_modules" / Path(*package.split("/")) / "dist" / "index.js"
    if entry.is_file():
        return entry
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="npm-mcp-", dir=final.parent))
    command = [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", package]
    output = ""
    for _attempt in range(2):  # one retry for a flaky registry connection
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        output = done.stdout + done.stderr
        if done.returncode == 0:
            break
    else:
        shutil.rmtree(staging, ignore_errors=True)
        pytest.fail(f"npm install {package} failed:\n{output[-3000:]}")
    with contextlib.suppress(OSError):
        os.replace(staging, final)  # another session may have won the race: use theirs
    shutil.rmtree(staging, ignore_errors=True)
    assert entry.is_file(), f"npm installed {package} but {entry} is missing"
    return entry


def server_everything_entry() -> Path:
    """The installed ``dist/index.js`` of server-everything."""
    return npm_entry(EVERYTHING)


def server_filesystem_entry() -> Path:
    """The installed ``dist/index.js`` of server-filesystem (its allowed directories are its
    arguments)."""
    return npm_entry(FILESYSTEM)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            sock.settimeout(0.5)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listened on 127.0.0.1:{port} within {timeout_s}s")


def new_mark() -> str:
    return uuid.uuid4().hex


def processes_with_mark(mark: str) -> list[int]:
    """Live processes whose environment carries ``IO_TUI_MCP_TEST_MARK=mark`` (Linux /proc)."""
    needle = f"{MARK_VAR}={mark}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            state = (entry / "stat").read_text().split(") ", 1)[1][:1]
        except OSError:
            continue
        if needle in environ.split(b"\0") and state != "Z":
            found.append(int(entry.name))
    return found


def parent_of(pid: int) -> int:
    """The parent process id of ``pid`` (Linux /proc)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(") ", 1)[1].split()[1])


def wait_until_gone(mark: str, timeout_s: float = 15.0) -> list[int]:
    """The marked processes still alive after ``timeout_s`` (empty when none leaked)."""
    deadline = time.monotonic() + timeout_s
    alive = processes_with_mark(mark)
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = processes_with_mark(mark)
    return alive


needs_proc = pytest.mark.skipif(
    not Path("/proc/self/environ").exists(), reason="leak checks read /proc (Linux)"
)

PYTHON = sys.executable
