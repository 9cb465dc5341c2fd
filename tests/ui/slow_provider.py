"""A provider that never finishes its first answer: for interrupt tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from io_tui.core.providers.base import CompletionRequest, TextDelta


class SlowProvider:
    name = "slow"
    model = "slow"

    def describe(self) -> dict[str, Any]:
        return {"kind": "slow"}

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Any]:
        yield TextDelta("thinking")
        await asyncio.sleep(3600)
