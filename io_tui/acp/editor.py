"""Files and commands through the client, where it offers them (``fs.readTextFile``,
``fs.writeTextFile``, ``terminal``): the editor then reads its open buffers, shows each write as
it lands and runs each command in a terminal the user watches.

Only the performing moves: the tools (``read_file``, ``write_file``, ``edit_file``,
``run_command``) keep their arguments, their gate and the policy that checks it, and the
workspace still resolves every path (a path outside the root is refused before the client is
asked). Each tool is wrapped (``client_tools``) so it acts through a ``ClientWorkspace``; what the
client does not offer stays on io-tui's own primitives. A command in the client's terminal runs
in the client's environment: io-tui's allow-listed environment applies only to its own
``run_command``. Its process-tree kill applies to both: the client's terminal gets the command's
tag in its environment, so whatever is left of it when the call ends (cancelled, timed out, or
stragglers it started) is killed where the client runs on this machine, as it is on io-tui's
own. A client's kill alone is not enough: bubblewrap killed in its first milliseconds leaves the
sandboxed command running, orphaned.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import uuid
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from acp import RequestError, tool_terminal_ref, update_tool_call
from acp.schema import EnvVariable

from io_tui.acp.updates import call_key
from io_tui.core import (
    EXEC_TAG_VAR,
    HAND_BACK,
    ExecResult,
    Tool,
    ToolContext,
    ToolRegistry,
    Workspace,
    WorkspaceError,
    kill_tree,
)

if TYPE_CHECKING:
    from acp import Client

    from io_tui.acp.session import Session
    from io_tui.core import SandboxPlan

log = logging.getLogger("io_tui.acp")

OUTPUT_BYTE_LIMIT = 2 * 1024 * 1024  # what the client keeps of a command's output (its tail)


class Editor:
    """What the client of one session offers for files and commands."""

    def __init__(self, client: Client, session: Session) -> None:
        self.client = client
        self.session = session
        caps = session.capabilities
        fs = caps.fs if caps is not None else None
        self.reads = bool(fs and fs.read_text_file)
        self.writes = bool(fs and fs.write_text_file)
        self.terminals = bool(caps and caps.terminal)

    def workspace(self, ctx: ToolContext, tool_call_id: str) -> ToolContext:
        """``ctx`` acting through the client (``tool_call_id``: where a terminal is shown)."""
        return dataclasses.replace(
            ctx, workspace=ClientWorkspace(ctx.workspace, self, tool_call_id)
        )


@contextlib.contextmanager
def asked_of_client(failed: str) -> Iterator[None]:
    """A request to the client: its error is the tool's (``failed: …``, for the model to
    read); a closed connection means the client went away, and the run is handed back
    (``interrupted``, resumable), as when its process is told to stop."""
    try:
        yield
    except RequestError as exc:
        raise WorkspaceError(f"{failed}: {exc}") from None
    except ConnectionError:
        raise asyncio.CancelledError(HAND_BACK) from None


class ClientWorkspace(Workspace):
    """A run's workspace whose file reads, writes and commands go to the client where it offers
    them; containment and everything else are the workspace's own."""

    def __init__(self, base: Workspace, editor: Editor, tool_call_id: str) -> None:
        super().__init__(base.root, env_allow=base.env_allow)
        self.editor = editor
        self.tool_call_id = tool_call_id

    async def read_text_seen(self, path: str) -> tuple[str, Any]:
        text, seen = await super().read_text_seen(path)  # refusals and what the file was
        if not self.editor.reads:
            return text, seen
        target = str(self.resolve(path))
        with asked_of_client(f"{self.relative(path)}: the client could not read it"):
            answer = await self.editor.client.read_text_file(
                session_id=self.editor.session.id, path=target
            )
        return answer.content, seen  # the editor's buffer, unsaved changes included

    async def write_text(self, path: str, text: str) -> bool:
        if not self.editor.writes:
            return await super().write_text(path, text)
        target = self.resolve(path)
        display = self.relative(target)
        if target == self.root or target.is_dir():
            raise WorkspaceError(f"{display} is a directory; name a file")
        existed = target.exists()
        with asked_of_client(f"{display}: the client could not write it"):
            await self.editor.client.write_text_file(
                session_id=self.editor.session.id, path=str(target), content=text
            )
        return existed

    async def exec(
        self, argv: Sequence[str], timeout_s: float, *, sandbox: SandboxPlan | None = None
    ) -> ExecResult:
        if not self.editor.terminals:
            return await super().exec(argv, timeout_s, sandbox=sandbox)
        if not argv or not argv[0]:
            raise WorkspaceError("argv must name a program as its first element")
        if sandbox is not None:  # the client's terminal shows it; bubblewrap still confines it
            if self.find_program(argv[0]) is None:
                raise WorkspaceError(f"command not found: {argv[0]}")
            argv = sandbox.wrap(argv)
        client, session_id = self.editor.client, self.editor.session.id
        tag = uuid.uuid4().hex
        try:
            with asked_of_client(f"the client could not start {argv[0]}"):
                created = await client.create_terminal(
                    session_id=session_id,
                    command=argv[0],
                    args=list(argv[1:]),
                    env=[EnvVariable(name=EXEC_TAG_VAR, value=tag)],
                    cwd=str(self.root),
                    output_byte_limit=OUTPUT_BYTE_LIMIT,
                )
        except asyncio.CancelledError:  # it may have started: its terminal id is lost with it
            await asyncio.shield(kill_tree(None, tag))
            raise
        terminal = created.terminal_id
        self.editor.session.outbox.put(
            update_tool_call(self.tool_call_id, content=[tool_terminal_ref(terminal)])
        )
        timed_out = False
        try:
            with asked_of_client(f"the client's terminal for {argv[0]} failed"):
                try:
                    await asyncio.wait_for(
                        client.wait_for_terminal_exit(session_id=session_id, terminal_id=terminal),
                        timeout_s,
                    )
                except TimeoutError:
                    timed_out = True
                    await client.kill_terminal(session_id=session_id, terminal_id=terminal)
                output = await client.terminal_output(session_id=session_id, terminal_id=terminal)
        finally:
            await asyncio.shield(kill_tree(None, tag))  # first: the client's release may wait on it
            with contextlib.suppress(Exception):
                await asyncio.shield(
                    client.release_terminal(session_id=session_id, terminal_id=terminal)
                )
        status = output.exit_status
        code = status.exit_code if status is not None else None
        if code is None and (timed_out or (status is not None and status.signal)):
            code = -9
        text = output.output
        if output.truncated:
            text = f"[… the start of the output was dropped by the client …]\n{text}"
        return ExecResult(code, text, timed_out)


class _ThroughClient(Tool):
    """A built-in tool acting through the client (subclassed per tool by ``client_tools``)."""

    inner_type: ClassVar[type[Tool]]

    def __init__(self, editor: Editor) -> None:
        self.inner = self.inner_type()
        self.editor = editor

    def spec(self) -> Any:
        return self.inner.spec()

    def parse(self, raw: dict[str, Any]) -> Any:
        return self.inner.parse(raw)

    async def gate(self, args: Any, ctx: ToolContext) -> Any:
        return await self.inner.gate(args, self.editor.workspace(ctx, ""))

    async def run(self, args: Any, ctx: ToolContext) -> Any:
        tool_call_id = call_key(ctx.run_id, ctx.call_id)  # the id its updates carry
        return await self.inner.run(args, self.editor.workspace(ctx, tool_call_id))


FILE_TOOLS = ("read_file", "edit_file")  # they read through the client, and edit_file writes
WRITE_TOOLS = ("write_file", "edit_file")
COMMAND_TOOLS = ("run_command",)


def client_tools(registry: ToolRegistry, editor: Editor) -> ToolRegistry:
    """``registry`` with its file and command tools acting through ``editor`` where it offers
    reads, writes or terminals (the same registry, changed in place)."""
    wanted: set[str] = set()
    if editor.reads:
        wanted.update(FILE_TOOLS)
    if editor.writes:
        wanted.update(WRITE_TOOLS)
    if editor.terminals:
        wanted.update(COMMAND_TOOLS)
    for name in sorted(wanted):
        if name not in registry:
            continue
        inner = type(registry.get(name))
        wrapper = type(
            f"Client{inner.__name__}",
            (_ThroughClient,),
            {"name": inner.name, "description": inner.description, "Args": inner.Args,
             "inner_type": inner},
        )  # fmt: skip
        registry.register(wrapper(editor), replace=True)
    return registry
