"""The app's own MCP hub (``OperatorHub``, ``IoApp.mcp``) and the servers' prompts offered from it.

The runs' servers live in the harness worker. What the operator browses in the app itself (the
resource browser, F6; the prompts in the command palette and the new-run dialog) comes from one
hub of the settings' servers and the user's ``mcp.json``, started the first time one of them
asks and shared by all of them until the app closes: a server is started once per app session,
not once per screen.

In the palette (ctrl+p), "Prompt: server/name" opens the new-run dialog with the prompt's text as
the task. Prompts whose arguments are all optional are filled with the server's defaults; one
that needs an argument is listed with what it needs, and opens the dialog with that prompt
chosen, for the operator to fill its arguments there."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from io_tui.core import McpHub

LOAD_TIMEOUT_S = 60.0


class OperatorHub:
    """The operator's MCP hub: started on first use (``hub``), shared, closed with the app."""

    def __init__(self, servers: dict[str, Any], user_dir: Path) -> None:
        self.servers = servers
        self.user_dir = user_dir
        self.problems: list[str] = []  # the config's, then each server's that failed to start
        self._hub: asyncio.Task[McpHub | None] | None = None
        self._prompts: asyncio.Task[list[Any]] | None = None

    @property
    def configured(self) -> bool:
        return bool(self.servers) or (self.user_dir / "mcp.json").is_file()

    async def hub(self) -> McpHub | None:
        """The started hub (every server ready or failed); None when no server is configured."""
        if self._hub is None:
            self._hub = asyncio.ensure_future(self._start())
        return await asyncio.shield(self._hub)

    async def _start(self) -> McpHub | None:
        from io_tui.core import McpHub, user_servers

        found, problems = user_servers(self.servers, self.user_dir)
        self.problems = list(problems)
        if not found:
            return None
        hub = McpHub(found)
        await hub.start()
        self.problems += hub.problems
        return hub

    async def prompts(self) -> list[Any]:
        """Every ready server's prompts (``PromptRow``), listed once per app session."""
        if self._prompts is None:
            self._prompts = asyncio.ensure_future(self._list_prompts())
        return await asyncio.shield(self._prompts)

    async def _list_prompts(self) -> list[Any]:
        hub = await self.hub()
        return await hub.prompts() if hub is not None else []

    async def prompt_text(self, server: str, name: str, arguments: dict[str, str]) -> str:
        """The prompt's messages as one line of task text; ToolError (or ValueError) if not."""
        hub = await self.hub()
        if hub is None:
            raise ValueError("no MCP servers are configured")
        return " ".join((await hub.prompt_text(server, name, arguments)).split())

    async def aclose(self) -> None:
        """Stop the hub's servers (if it was started); never raises."""
        started, self._hub, self._prompts = self._hub, None, None
        if started is None:
            return
        try:
            hub = await started
        except BaseException:
            return
        if hub is not None:
            await hub.aclose()


@dataclass(frozen=True, slots=True)
class OfferedPrompt:
    title: str  # "Prompt: everything/simple-prompt"
    task: str  # what the new-run dialog opens with
    help: str
    prompt: str | None = None  # "server/name" of one that needs arguments: chosen in the dialog


async def load_prompts(mcp: OperatorHub) -> list[OfferedPrompt]:
    """Every prompt of the operator's servers as a palette entry."""
    offered: list[OfferedPrompt] = []
    for row in await mcp.prompts():
        title = f"Prompt: {row.server}/{row.name}"
        if row.required:
            needs = ", ".join(row.required)
            offered.append(
                OfferedPrompt(
                    title, "", f"needs {needs} · {row.description}", f"{row.server}/{row.name}"
                )
            )
            continue
        try:
            task = await mcp.prompt_text(row.server, row.name, {})
        except Exception as exc:  # a broken prompt is left out, said in its help
            offered.append(OfferedPrompt(title, row.description, f"failed: {exc}"))
            continue
        offered.append(OfferedPrompt(title, task, row.description or "an MCP prompt"))
    return offered


_OFFERED: WeakKeyDictionary[OperatorHub, asyncio.Task[list[OfferedPrompt]]] = WeakKeyDictionary()


class PromptCommands(Provider):
    """The palette's "Prompt: …" entries, made once per app session (the first time it opens)."""

    async def _prompts(self) -> list[OfferedPrompt]:
        mcp: OperatorHub = self.app.mcp  # type: ignore[attr-defined]
        task = _OFFERED.get(mcp)
        if task is None:
            task = _OFFERED[mcp] = asyncio.ensure_future(load_prompts(mcp))
        try:
            return await asyncio.wait_for(asyncio.shield(task), LOAD_TIMEOUT_S)
        except Exception:  # servers that fail to start offer no prompts
            return []

    def _open(self, prompt: OfferedPrompt) -> None:
        app: Any = self.app
        app.action_new_run(prompt.task, prompt=prompt.prompt)

    async def discover(self) -> Hits:
        for prompt in await self._prompts():
            yield DiscoveryHit(prompt.title, partial(self._open, prompt), help=prompt.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for prompt in await self._prompts():
            score = matcher.match(prompt.title)
            if score > 0:
                callback = partial(self._open, prompt)
                yield Hit(score, matcher.highlight(prompt.title), callback, help=prompt.help)
