"""One hook command's run: ``sh -c COMMAND`` in the workspace with the moment as JSON on
stdin, held to the rules a command the model runs is held to.

Why the same rules: a hook is a command io-tui starts on a run's behalf, so it gets the
workspace's allow-listed environment (``workspace.command_env``: no credential reaches it by
accident) plus ``CLAUDE_PROJECT_DIR``, its own session and a tag so that a timeout kills its
whole tree (``workspace.kill_tree``), bounded output, and its output redacted
(``untrusted.redact``) before anything shows or stores it.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from io_tui.core.boundary.untrusted import redact
from io_tui.core.boundary.workspace import Workspace, _exited, _OutputSink, command_env, kill_tree
from io_tui.core.hooks.config import HookCommand

OUTPUT_CHARS = 20_000  # of each stream, as stored with the hook's event


@dataclass(frozen=True, slots=True)
class HookRun:
    event: str
    command: str
    source: str  # "config" or the workspace file that configured it
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    error: str | None = None  # it could not start

    @property
    def blocked(self) -> bool:
        """Exit code 2: the hook blocks what it was run for (its stderr says why)."""
        return self.exit_code == 2

    def answer(self) -> dict[str, Any] | None:
        """Its stdout as a JSON object, when it exited 0 with one."""
        if self.exit_code != 0 or not self.stdout.strip().startswith("{"):
            return None
        try:
            data = json.loads(self.stdout)
        except ValueError:
            return None
        return data if isinstance(data, dict) else None


async def run_hook(
    workspace: Workspace, hook: HookCommand, event: str, payload: dict[str, Any], source: str
) -> HookRun:
    tag = uuid.uuid4().hex
    env = command_env(workspace.env_allow, tag) | {
        "CLAUDE_PROJECT_DIR": str(workspace.root),
        "IO_TUI_PROJECT_DIR": str(workspace.root),
    }
    started = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            "sh", "-c", hook.command, cwd=workspace.root, env=env, start_new_session=True,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
    except OSError as exc:
        return HookRun(event, hook.command, source, None, "", "", False, 0.0, str(exc))
    out, err = _OutputSink(), _OutputSink()
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    readers = [
        asyncio.create_task(out.drain(proc.stdout)),
        asyncio.create_task(err.drain(proc.stderr)),
    ]
    waiter = asyncio.create_task(_exited(proc))
    try:
        try:
            proc.stdin.write(json.dumps(payload).encode())
            await proc.stdin.drain()
            proc.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass  # a hook that reads nothing
        await asyncio.wait({waiter}, timeout=hook.timeout)
        timed_out = not waiter.done()
        if not timed_out:
            await asyncio.wait(readers, timeout=1.0)
    finally:
        await kill_tree(proc.pid, tag)
        await asyncio.wait({*readers, waiter}, timeout=5)
        for task in (*readers, waiter):
            task.cancel()
    return HookRun(
        event,
        hook.command,
        source,
        None if timed_out else proc.returncode,
        redact(out.text())[:OUTPUT_CHARS],
        redact(err.text())[:OUTPUT_CHARS],
        timed_out,
        round(time.monotonic() - started, 3),
    )
