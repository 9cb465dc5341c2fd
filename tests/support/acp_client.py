"""An ACP client for the tests, built on the protocol package's own client side: it spawns a real
``io-tui acp`` process, records every update, answers permission requests from a list (or waits
for the test to answer), and offers files and terminals on the real disk as an editor does."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from acp import spawn_agent_process
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)


class EditorClient:
    """What an editor answers: permission choices, files, terminals; everything it was sent."""

    def __init__(self, answers: list[str] | None = None) -> None:
        self.answers = list(answers or [])  # option ids, in order; "cancel": the test cancels
        self.updates: list[Any] = []
        self.permissions: list[Any] = []  # the requests, as they came
        self.asked = asyncio.Event()
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.terminals: dict[str, asyncio.subprocess.Process] = {}
        self.outputs: dict[str, bytes] = {}
        self.terminal_started = asyncio.Event()
        self.process: asyncio.subprocess.Process | None = None  # the io-tui acp process
        self.release: asyncio.Future[str | None] | None = None  # set: the test answers
        self.forms: list[tuple[str, Any]] = []  # elicitations: (message, mode)
        self.form_answer: Any = None  # what create_elicitation answers (None: cancel)

    # the protocol's client methods

    async def session_update(self, session_id: str, update: Any, **_: Any) -> None:
        self.updates.append(update)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **_: Any
    ) -> RequestPermissionResponse:
        self.permissions.append((tool_call, options))
        self.asked.set()
        choice = self.answers.pop(0) if self.answers else "cancel"
        if choice == "hold":  # the test decides elsewhere, or cancels
            self.release = asyncio.get_running_loop().create_future()
            choice = await self.release or "cancel"
        if choice == "cancel":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=choice)
        )

    async def create_elicitation(self, message: str, mode: Any, **_: Any) -> Any:
        from acp.schema import CancelElicitationResponse

        self.forms.append((message, mode))
        return self.form_answer or CancelElicitationResponse(action="cancel")

    async def read_text_file(self, session_id: str, path: str, **_: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        text = await asyncio.to_thread(Path(path).read_text, encoding="utf-8")
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **_: Any
    ) -> WriteTextFileResponse:
        self.writes.append(path)
        await asyncio.to_thread(Path(path).write_text, content, encoding="utf-8")
        return WriteTextFileResponse()

    async def create_terminal(
        self, session_id: str, command: str, args: list[str] | None = None, cwd: str | None = None,
        env: list[EnvVariable] | None = None, **_: Any,
    ) -> CreateTerminalResponse:  # fmt: skip
        # as an editor does: its own environment, plus what the agent asked for
        environ = {**os.environ, **{var.name: var.value for var in env or []}}
        proc = await asyncio.create_subprocess_exec(
            command, *(args or []), cwd=cwd, env=environ, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT, stdin=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        terminal_id = f"term-{len(self.terminals) + 1}"
        self.terminals[terminal_id] = proc
        self.terminal_started.set()
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> WaitForTerminalExitResponse:
        proc = self.terminals[terminal_id]
        assert proc.stdout is not None
        self.outputs[terminal_id] = await proc.stdout.read()
        code = await proc.wait()
        return WaitForTerminalExitResponse(exit_code=code if code >= 0 else None)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **_: Any
    ) -> TerminalOutputResponse:
        proc = self.terminals[terminal_id]
        status = None
        if proc.returncode is not None:
            code = proc.returncode
            status = TerminalExitStatus(exit_code=code if code >= 0 else None)
        text = self.outputs.get(terminal_id, b"").decode()
        return TerminalOutputResponse(output=text, truncated=False, exit_status=status)

    async def kill_terminal(self, session_id: str, terminal_id: str, **_: Any) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.terminals[terminal_id].kill()

    async def release_terminal(self, session_id: str, terminal_id: str, **_: Any) -> None:
        proc = self.terminals[terminal_id]
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()

    # what the tests read back

    def of_kind(self, kind: str) -> list[Any]:
        return [u for u in self.updates if u.session_update == kind]

    def agent_text(self) -> str:
        return "".join(u.content.text for u in self.of_kind("agent_message_chunk"))

    def tool_updates(self, status: str) -> list[Any]:
        return [
            u
            for u in self.updates
            if u.session_update in ("tool_call", "tool_call_update") and u.status == status
        ]


CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)


@contextlib.asynccontextmanager
async def io_tui_acp(
    client: EditorClient, *args: str, capabilities: ClientCapabilities | None = CAPABILITIES,
    stderr: Path | None = None,
) -> AsyncIterator[Any]:  # fmt: skip
    """A real ``io-tui acp`` process, initialized, and the SDK's connection to it."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    err = await asyncio.to_thread(open, stderr or os.devnull, "wb")
    with err:
        async with spawn_agent_process(
            client, sys.executable, "-m", "io_tui", "acp", *args, env=env,
            transport_kwargs={"stderr": err},
            use_unstable_protocol=True,  # elicitation/create, for the clients that offer forms
        ) as (conn, process):  # fmt: skip
            client.process = process
            await conn.initialize(
                protocol_version=1,
                client_capabilities=capabilities,
                client_info=Implementation(name="test-editor", title="Test Editor", version="1"),
            )
            yield conn
