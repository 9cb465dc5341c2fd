"""Approved commands run in the OS sandbox (bubblewrap): no write outside the workspace and
/tmp, no secret, no network; a refusal names the path or host. Skipped, with the reason, where
this machine cannot make the sandbox's namespaces."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import sys
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from io_tui.core.authority.policy import Policy
from io_tui.core.boundary.sandbox import SandboxPlan, denials, probe
from io_tui.core.boundary.workspace import EXEC_TAG_VAR, Workspace, kill_tree
from io_tui.core.tools.base import ToolContext, ToolError, ToolOutcome
from io_tui.core.tools.command import RunCommand

STATUS = probe()
needs_sandbox = pytest.mark.skipif(
    not STATUS.available, reason=f"no sandbox on this machine: {STATUS.reason}"
)


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory outside /tmp (which the sandbox replaces with its own), removed after."""
    path = Path("/var/tmp") / f"io-tui-sandbox-{uuid.uuid4().hex}"
    path.mkdir(parents=True)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def ctx(outside: Path) -> ToolContext:
    root = outside / "ws"
    root.mkdir()
    return ToolContext(
        workspace=Workspace(root), run_id=1, step=1, cap_chars=20_000, policy=Policy()
    )


async def call(ctx: ToolContext, argv: list[str]) -> ToolOutcome:
    tool = RunCommand()
    return await tool.run(tool.parse({"argv": argv}), ctx)


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


@needs_sandbox
async def test_a_write_to_home_is_refused_and_named(
    ctx: ToolContext, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = outside / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    target = home / "planted.txt"
    out = await call(ctx, py(f"open({str(target)!r}, 'w').write('x')"))
    assert not target.exists()
    assert out.is_error and out.data["sandboxed"] is True
    assert out.data["denied"] == [{"kind": "write", "what": str(target)}]
    assert f"[sandbox] refused write to {target}" in out.text
    inside = await call(
        ctx, py("open('made.txt', 'w').write('ok'); import tempfile; tempfile.mkstemp()")
    )
    assert not inside.is_error and (ctx.workspace.root / "made.txt").read_text() == "ok"


@needs_sandbox
async def test_a_secret_is_not_readable(
    ctx: ToolContext, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = outside / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN FAKE KEY----- s3cr3t\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret=s3cr3t\n")
    monkeypatch.setenv("HOME", str(home))
    out = await call(
        ctx, ["cat", str(home / ".ssh" / "id_rsa"), str(home / ".aws" / "credentials")]
    )
    assert "s3cr3t" not in out.text
    assert out.is_error
    assert {"kind": "read", "what": str(home / ".ssh")} in out.data["denied"]


@needs_sandbox
async def test_no_connection_leaves_the_sandbox_not_even_to_localhost(ctx: ToolContext) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list[Any] = []
    server.settimeout(5)

    def serve() -> None:
        with contextlib.suppress(OSError):
            accepted.append(server.accept())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        out = await call(
            ctx, py(f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3)")
        )
    finally:
        server.close()
        thread.join()
    assert accepted == []
    assert out.is_error
    assert out.data["denied"] == [{"kind": "net", "what": f"127.0.0.1:{port}"}]


@needs_sandbox
async def test_the_rerun_outside_is_the_operators_own_decision(
    ctx: ToolContext, outside: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = outside / "planted.txt"
    asked: list[tuple[str, list[str], list[Any]]] = []

    async def escalate(call_id: str, argv: list[str], refused: list[Any]) -> bool:
        asked.append((call_id, argv, refused))
        return True

    from dataclasses import replace

    argv = py(f"open({str(target)!r}, 'w').write('x')")
    out = await call(replace(ctx, escalate=escalate, call_id="c1"), argv)
    assert [(c, a) for c, a, _ in asked] == [("c1", argv)]
    assert target.read_text() == "x"  # it ran outside, once approved
    assert "(outside the sandbox, approved by the operator)" in out.text
    assert out.data["rerun_outside_sandbox"] is True and not out.is_error


@needs_sandbox
async def test_the_callers_tmp_is_not_seen_and_a_miss_there_is_named(ctx: ToolContext) -> None:
    """The sandbox's /tmp is its own: a file the operator left in theirs is not read, a marker
    written into a directory of theirs is not made there, and each failure names the path."""
    with tempfile.TemporaryDirectory(dir="/tmp") as theirs:
        note = Path(theirs) / "fix.patch"
        note.write_text("hunk one\n")
        read = await call(ctx, ["cat", str(note)])
        assert read.is_error and "hunk one" not in read.text
        assert read.data["denied"] == [{"kind": "tmp", "what": str(note)}]
        assert f"[sandbox] refused use of {note} (the caller's /tmp" in read.text
        marker = Path(theirs) / "started"
        wrote = await call(ctx, ["touch", str(marker)])
        assert not marker.exists()
        assert wrote.data["denied"] == [{"kind": "tmp", "what": str(marker)}]
        missing = await call(ctx, ["cat", "/tmp/io-tui-nothing-here-" + uuid.uuid4().hex])
        assert missing.is_error and "denied" not in missing.data  # missing out here too


async def test_require_refuses_commands_where_there_is_no_sandbox(ctx: ToolContext) -> None:
    policy = Policy.from_json({"sandbox": {"enabled": False, "require": True}})
    with pytest.raises(ToolError, match=r"requires a sandbox .* did not run"):
        await RunCommand().run(
            RunCommand().parse({"argv": ["true"]}),
            ToolContext(workspace=ctx.workspace, run_id=1, step=1, cap_chars=1000, policy=policy),
        )


async def test_without_a_sandbox_the_result_says_so(ctx: ToolContext) -> None:
    policy = Policy.from_json({"sandbox": {"enabled": False}})
    ctx = ToolContext(workspace=ctx.workspace, run_id=1, step=1, cap_chars=1000, policy=policy)
    out = await call(ctx, ["true"])
    assert "[not sandboxed: the policy turns the sandbox off" in out.text
    assert out.data["sandboxed"] is False


def test_denials_name_what_was_refused(tmp_path: Path) -> None:
    plan = SandboxPlan(tmp_path, network=False, hidden=(Path("/h/.ssh"),))
    said = denials(
        "touch: cannot touch '/etc/x': Read-only file system\n"
        "curl: (6) Could not resolve host: example.com\n",
        ["curl", "https://example.com/x"],
        plan,
    )
    assert [d.describe() for d in said] == [
        "write to /etc/x (outside the workspace and /tmp)",
        "connection to example.com (the sandbox has no network)",
    ]
    assert denials("FAILED test_x - assert 1 == 2", ["pytest"], plan) == []
    with tempfile.NamedTemporaryFile(dir="/tmp") as theirs:  # the caller's /tmp, not the box's
        said = denials(f"cat: {theirs.name}: No such file or directory\n", ["cat"], plan)
        assert [d.describe() for d in said] == [
            f"use of {theirs.name} (the caller's /tmp: the sandbox has one of its own)"
        ]
    assert denials("cat: /tmp/nothing/x: No such file or directory\n", ["cat"], plan) == []


def _running(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker`` (a zombie's reads empty)."""
    found = []
    for name in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if marker.encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                found.append(int(name))
    return found


@needs_sandbox
async def test_a_command_cancelled_as_it_starts_leaves_nothing_running(outside: Path) -> None:
    """Cancelled in bubblewrap's first milliseconds, before it has armed --die-with-parent."""
    workspace = Workspace(outside)
    box = SandboxPlan(outside)
    for attempt in range(5):
        marker = f"{600 + attempt}.{uuid.uuid4().int % 10_000}"
        task = asyncio.create_task(workspace.exec(["sleep", marker], 60, sandbox=box))
        await asyncio.sleep(0.001 * attempt)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            async with asyncio.timeout(10):  # a start cancelled in asyncio waits on the tree
                await task
        await asyncio.sleep(0.2)  # what would be left has had the time to start
        assert _running(marker) == []


@needs_sandbox
async def test_the_tag_ends_a_sandboxed_command_another_program_started(outside: Path) -> None:
    """An editor's terminal (ACP) runs the command and kills only bubblewrap: killed in its
    first milliseconds, bubblewrap leaves the command running, orphaned. The tag the terminal
    was given in its environment finds it."""
    marker = f"601.{uuid.uuid4().int % 10_000}"
    tag = uuid.uuid4().hex
    argv = SandboxPlan(outside).wrap(["sleep", marker])
    env = {**os.environ, EXEC_TAG_VAR: tag}
    editor = await asyncio.create_subprocess_exec(
        *argv, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL
    )
    editor.kill()  # the editor's own kill, at once
    await editor.wait()
    await kill_tree(None, tag)
    await asyncio.sleep(0.2)
    assert _running(marker) == []
