"""A scripted provider that records what each request offered and said, and can run a test's
hook (an await) inside a given request, before its answer."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from io_tui.core.providers.base import CompletionRequest, StreamEvent
from io_tui.core.providers.scripted import Script, ScriptedProvider


class Watching(ScriptedProvider):
    """A script that records what each request offered and said, and runs a hook after one."""

    def __init__(self, turns: list[dict[str, Any]], hooks: dict[int, Callable[[], Any]]) -> None:
        super().__init__(Script.model_validate({"model": "scripted", "turns": turns}))
        self.hooks = hooks
        self.seen: list[tuple[set[str], str]] = []  # (tool names, every message's text)

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamEvent]:
        if request.purpose != "summary":
            said = "\n".join(m.content or "" for m in request.messages)
            self.seen.append(({t.name for t in request.tools}, said))
            hook = self.hooks.get(len(self.seen))
            if hook is not None:
                await hook()
        async for event in super().stream(request):
            yield event
