"""A stream is closed as soon as its answer is taken: a provider's stream still holds its HTTP
response there, and one left to the garbage collector is closed whenever that runs."""

from __future__ import annotations

from collections.abc import AsyncIterator

from io_tui.core.providers.base import (
    Completed,
    CompletionRequest,
    Response,
    StreamEvent,
    TextDelta,
    complete,
)
from io_tui.core.providers.fallback import FallbackProvider
from io_tui.core.providers.messages import Message


class Lingering:
    """A provider whose stream would go on after its answer, and says when it is closed."""

    name = "lingering"
    model = "m"

    def __init__(self) -> None:
        self.closed = False

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamEvent]:
        try:
            yield TextDelta("hi")
            yield Completed(Response("hi", provider=self.name))
            yield TextDelta("never taken")
        finally:
            self.closed = True


REQUEST = CompletionRequest(messages=(Message(role="user", content="hello"),), tools=())


async def test_complete_closes_the_stream_it_answered_from() -> None:
    provider = Lingering()
    assert (await complete(provider, REQUEST)).text == "hi"
    assert provider.closed


async def test_a_fallback_chain_closes_the_stream_it_answered_from() -> None:
    provider = Lingering()
    chain = FallbackProvider(provider, Lingering())
    assert (await complete(chain, REQUEST)).provider == "lingering"
    assert provider.closed
