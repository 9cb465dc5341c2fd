"""Helpers for provider tests: recorded streams, synthetic SSE, a scripted mock transport."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from io_tui.core.providers.base import (
    Completed,
    CompletionRequest,
    Provider,
    Response,
    TextDelta,
    ToolSpec,
)
from io_tui.core.providers.messages import Message

WIRE = Path(__file__).resolve().parents[2] / "fixtures" / "wire"


def recorded(name: str) -> bytes:
    """A recorded stream, e.g. ``openai_chat/text_plain.sse``."""
    return (WIRE / name).read_bytes()


def jsonl_as_sse(name: str, *, done: bool = True) -> bytes:
    """A chunks-per-line recording re-framed as SSE ``data:`` events."""
    lines = [line for line in (WIRE / name).read_text().splitlines() if line.strip()]
    body = "".join(f"data: {line}\n\n" for line in lines)
    return (body + ("data: [DONE]\n\n" if done else "")).encode()


def sse(*events: dict[str, Any] | str, named: bool = False) -> bytes:
    """SSE text for synthetic events; with ``named`` each carries ``event: <type>``."""
    out = []
    for event in events:
        data = event if isinstance(event, str) else json.dumps(event)
        prefix = f"event: {event['type']}\n" if named and isinstance(event, dict) else ""
        out.append(f"{prefix}data: {data}\n\n")
    return "".join(out).encode()


def sse_response(body: bytes, status: int = 200) -> httpx.Response:
    return httpx.Response(status, headers={"content-type": "text/event-stream"}, content=body)


@dataclass
class Script:
    """A MockTransport handler answering with the next scripted item, recording each request."""

    items: list[httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]]
    requests: list[httpx.Request] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        item = self.items.pop(0)
        if isinstance(item, Exception):
            raise item
        if callable(item) and not isinstance(item, httpx.Response):
            return item(request)
        return item

    def bodies(self) -> list[Any]:
        return [json.loads(r.content) for r in self.requests]

    @property
    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self)


@dataclass
class Sleeps:
    """An injectable sleep that records what it was asked to wait, and waits for nothing."""

    waits: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


WEATHER = ToolSpec(
    name="get_weather",
    description="Current weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


def ask(text: str = "What's the weather in Paris?", **kw: Any) -> CompletionRequest:
    return CompletionRequest(
        messages=(Message("system", "You are terse."), Message("user", text)), **kw
    )


async def run(
    provider: Provider, request: CompletionRequest | None = None
) -> tuple[list[str], Response]:
    """Drain a stream: the text deltas in order and the single final response."""
    deltas: list[str] = []
    done: list[Response] = []
    async for event in provider.stream(request or ask()):
        if isinstance(event, TextDelta):
            assert not done, "text after Completed"
            deltas.append(event.text)
        elif isinstance(event, Completed):
            done.append(event.response)
    assert len(done) == 1
    return deltas, done[0]
