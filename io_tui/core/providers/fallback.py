"""Try providers in order, moving on when one fails in a way another might not.

Only retryable failures (transport, timeout, rate limit, server) move to the next provider, and
only while nothing has been shown: once a provider has yielded text, its failure is raised as
is (``partial=True``), because the next provider would start its answer from scratch. Context
overflow and request errors are raised at once: the same prompt fails the same way anywhere.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any

from io_tui.core.providers.base import (
    Attempt,
    Completed,
    CompletionRequest,
    Provider,
    ProviderError,
    Retrying,
    StreamEvent,
    TextDelta,
    discover_limits,
)


class FallbackProvider:
    """``primary`` first, then each of ``others`` in turn.

    The ``Response`` says which provider served it (``provider``) and carries every attempt of
    every provider tried, in order.
    """

    def __init__(self, primary: Provider, secondary: Provider, *others: Provider) -> None:
        self.chain: tuple[Provider, ...] = (primary, secondary, *others)
        self.name = ">".join(p.name for p in self.chain)
        self.model = primary.model
        # the primary's output limit stands for the chain's; the window is the smallest one
        # known (what the request is built to fit, whichever provider serves it)
        self.max_output_tokens = getattr(primary, "max_output_tokens", None)
        self.output_set = getattr(primary, "output_set", True)
        self.window_tokens, self.window_source = self._window()

    def _window(self) -> tuple[int | None, str | None]:
        """The smallest window known in the chain, and where it came from."""
        known = [
            (w, getattr(p, "window_source", None))
            for p in self.chain
            if isinstance(w := getattr(p, "window_tokens", None), int)
        ]
        return min(known, key=lambda pair: pair[0]) if known else (None, None)

    async def discover_window(self) -> None:
        """Every provider of the chain whose window is unknown asks its server (``/props``,
        once each); the chain's window is then the smallest known."""
        for provider in self.chain:
            await discover_limits(provider)
        self.window_tokens, self.window_source = self._window()

    @property
    def tools_supported(self) -> bool | None:
        """The primary's word on its chat template's tools (it serves every request it can)."""
        supported = getattr(self.chain[0], "tools_supported", None)
        return supported if isinstance(supported, bool) else None

    def describe(self) -> dict[str, Any]:
        return {"kind": "fallback", "chain": [p.describe() for p in self.chain]}

    def __repr__(self) -> str:
        return f"FallbackProvider({', '.join(repr(p) for p in self.chain)})"

    async def stream(self, request: CompletionRequest) -> AsyncGenerator[StreamEvent, None]:
        earlier: list[Attempt] = []
        for position, provider in enumerate(self.chain):
            emitted = False
            try:
                async with aclosing(provider.stream(request)) as events:
                    async for event in events:
                        if isinstance(event, TextDelta):
                            emitted = True
                            yield event
                        elif isinstance(event, Retrying):
                            yield event
                        elif isinstance(event, Completed):
                            attempts = (*earlier, *event.response.attempts)
                            yield Completed(dataclasses.replace(event.response, attempts=attempts))
                            return
            except ProviderError as error:
                earlier.extend(error.attempts)
                last = position == len(self.chain) - 1
                if emitted or error.partial or not error.retryable or last:
                    raise ProviderError(
                        error.kind,
                        error.message,
                        status=error.status,
                        retry_after=error.retry_after,
                        attempts=earlier,
                        partial=emitted or error.partial,
                    ) from error
        raise AssertionError("unreachable: the chain is never empty")  # pragma: no cover

    async def aclose(self) -> None:
        for provider in self.chain:
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()
