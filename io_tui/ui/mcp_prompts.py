"""The MCP servers' prompts in the command palette (ctrl+p): "Prompt: server/name" opens the
new-run dialog with the prompt's text as the task, to read, edit and start.

The prompts are fetched once per app, the first time the palette opens, from a hub of the
settings' servers and the user's ``mcp.json`` started for that and stopped after (the runs'
servers live in the harness worker). Prompts whose arguments are all optional are offered, filled
with the server's defaults; one that needs an argument is listed with what it needs, and opens
the dialog with its description so the operator writes the task."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import partial
from typing import Any
from weakref import WeakKeyDictionary

from textual.command import DiscoveryHit, Hit, Hits, Provider

from io_tui.paths import config_dir

LOAD_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class OfferedPrompt:
    title: str  # "Prompt: everything/simple-prompt"
    task: str  # what the new-run dialog opens with
    help: str


_LOADED: WeakKeyDictionary[Any, asyncio.Task[list[OfferedPrompt]]] = WeakKeyDictionary()


async def load_prompts(servers: dict[str, Any]) -> list[OfferedPrompt]:
    """Every prompt of ``servers`` (and the user's ``mcp.json``'s) as a palette entry."""
    from io_tui.core import McpHub, user_servers

    found, _problems = user_servers(servers, config_dir())
    if not found:
        return []
    offered: list[OfferedPrompt] = []
    async with McpHub(found) as hub:
        for row in await hub.prompts():
            title = f"Prompt: {row.server}/{row.name}"
            if row.required:
                needs = ", ".join(row.required)
                task = f"{row.description} (MCP prompt {row.server}/{row.name}; needs {needs})"
                offered.append(OfferedPrompt(title, task, f"needs {needs} · {row.description}"))
                continue
            try:
                text = await hub.prompt_text(row.server, row.name, {})
            except Exception as exc:  # a broken prompt is left out, said in its help
                offered.append(OfferedPrompt(title, row.description, f"failed: {exc}"))
                continue
            task = " ".join(text.split())  # the dialog's task is one line
            offered.append(OfferedPrompt(title, task, row.description or "an MCP prompt"))
    return offered


class PromptCommands(Provider):
    """The palette's "Prompt: …" entries."""

    async def _prompts(self) -> list[OfferedPrompt]:
        app: Any = self.app
        servers = dict(app.settings.mcp.servers)
        task = _LOADED.get(app)
        if task is None:
            task = _LOADED[app] = asyncio.ensure_future(load_prompts(servers))
        try:
            return await asyncio.wait_for(asyncio.shield(task), LOAD_TIMEOUT_S)
        except Exception:  # servers that fail to start offer no prompts
            return []

    def _open(self, task: str) -> None:
        app: Any = self.app
        app.action_new_run(task)

    async def discover(self) -> Hits:
        for prompt in await self._prompts():
            yield DiscoveryHit(prompt.title, partial(self._open, prompt.task), help=prompt.help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for prompt in await self._prompts():
            score = matcher.match(prompt.title)
            if score > 0:
                callback = partial(self._open, prompt.task)
                yield Hit(score, matcher.highlight(prompt.title), callback, help=prompt.help)
