"""Providers that hold a run in a live state: for interrupt, streaming and steering tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from io_tui.core.providers.base import Attempt, Completed, CompletionRequest, Response, TextDelta
from io_tui.core.providers.messages import ToolCall


class SlowProvider:
    """Never finishes its first answer."""

    name = "slow"
    model = "slow"

    def describe(self) -> dict[str, Any]:
        return {"kind": "slow"}

    async def aclose(self) -> None:
        return None

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Any]:
        yield TextDelta("thinking")
        await asyncio.sleep(3600)


@dataclass(frozen=True, slots=True)
class Turn:
    pieces: Sequence[str]  # the text, streamed piece by piece
    tool_calls: Sequence[tuple[str, dict[str, Any]]] = ()


class GatedProvider:
    """Streams each turn's pieces, each only when the test lets one through (``release``); the
    turn completes once every piece is out and the test releases once more. What it was asked
    is kept (``requests``)."""

    name = "local-llm"
    model = "qwen3-8b"

    def __init__(self, turns: Sequence[Turn]) -> None:
        self.turns = list(turns)
        self.requests: list[CompletionRequest] = []
        self._gate: asyncio.Queue[None] = asyncio.Queue()
        self.waiting = asyncio.Event()  # set while it waits for a release

    def describe(self) -> dict[str, Any]:
        return {"kind": "gated"}

    async def aclose(self) -> None:
        return None

    def release(self, times: int = 1) -> None:
        for _ in range(times):
            self._gate.put_nowait(None)

    async def _wait(self) -> None:
        self.waiting.set()
        await self._gate.get()
        self.waiting.clear()

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Any]:
        self.requests.append(request)
        turn = self.turns.pop(0) if self.turns else Turn(["done"])
        for piece in turn.pieces:
            await self._wait()
            yield TextDelta(piece)
        await self._wait()
        calls = tuple(
            ToolCall(f"call_{len(self.requests)}_{n}", name, args)
            for n, (name, args) in enumerate(turn.tool_calls)
        )
        text = "".join(turn.pieces)
        attempt = Attempt(provider=self.name, model=self.model, usage=None)
        finish = "tool_calls" if calls else "stop"
        yield Completed(Response(text, calls, None, finish, self.model, self.name, (attempt,)))
