"""Server-sent events from an httpx response, via httpx-sse, including a final unterminated one.

The SSE spec drops an event that is not followed by a blank line, and httpx-sse follows it. Real
servers and recorded streams sometimes end right after the last ``data:`` line, and that last
event is often the one that matters (``message_stop``, ``[DONE]``). So the body is re-wrapped
with a trailing blank line before httpx-sse decodes it: a complete stream is unaffected (blank
lines between events are no-ops), an unterminated last event is delivered, and a stream cut in
the middle of an event delivers the fragment, which then fails to decode and is reported as
malformed rather than silently lost.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from httpx_sse import EventSource, ServerSentEvent

__all__ = ["ServerSentEvent", "aiter_events", "is_event_stream"]


class _Terminated(httpx.AsyncByteStream):
    """The decoded body of ``response`` followed by one blank line."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._response.aiter_bytes():
            yield chunk
        yield b"\n\n"

    async def aclose(self) -> None:
        await self._response.aclose()


def is_event_stream(response: httpx.Response) -> bool:
    return "text/event-stream" in response.headers.get("content-type", "")


async def aiter_events(response: httpx.Response) -> AsyncIterator[ServerSentEvent]:
    """Every event of a streamed ``text/event-stream`` response, the last one included."""
    # aiter_bytes has already undone any Content-Encoding, so the copy must not claim one.
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() != "content-encoding"]
    wrapped = httpx.Response(response.status_code, headers=headers, stream=_Terminated(response))
    if response.encoding:
        wrapped.encoding = response.encoding
    source = EventSource(wrapped)
    async for event in source.aiter_sse():
        yield event
