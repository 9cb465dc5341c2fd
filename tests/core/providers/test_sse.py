"""SSE decoding through httpx-sse, including a last event without its blank line."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from io_tui.core.providers.sse import aiter_events


async def events_of(*chunks: bytes) -> list[tuple[str, str]]:
    """The events of a body delivered in exactly these chunks."""

    async def body() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    async with client, client.stream("GET", "http://sse.test/") as response:
        return [(e.event, e.data) async for e in aiter_events(response)]


@pytest.mark.parametrize(
    "chunks",
    [
        (b"event: a\ndata: 1\n\nevent: b\ndata: 2",),  # no newline at all after the last
        (b"event: a\ndata: 1\n\nevent: b\ndata: 2\n",),  # one newline, no blank line
        (b"event: a\ndata: 1\n\nevent: b\ndata: 2\n\n",),  # properly terminated
        (b"event: a\r\nda", b"ta: 1\r\n\r\nevent: b\r\ndata: 2"),  # CRLF, split mid-field
    ],
)
async def test_last_event_is_delivered(chunks: tuple[bytes, ...]) -> None:
    assert await events_of(*chunks) == [("a", "1"), ("b", "2")]


async def test_comments_and_multiline_data() -> None:
    got = await events_of(b": keep-alive\n\ndata: x\ndata: y\n\n")
    assert got == [("message", "x\ny")]
