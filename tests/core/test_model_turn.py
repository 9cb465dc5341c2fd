"""The guard around a working request (``model_turn.ask_model``): a server's overflow gets one
compaction, then a clear failure; what compaction leaves unchanged is never sent again; a frame
beyond the model's window is never sent at all."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from io_tui.core.approvals import ApproveAll
from io_tui.core.contract import TaskContract
from io_tui.core.harness import Harness
from io_tui.core.policy import Policy
from io_tui.core.providers.base import (
    CompletionRequest,
    ErrorKind,
    ProviderError,
    StreamEvent,
)
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run import Outcome, start_run
from io_tui.core.trace import build_trace

READ = {"name": "read_file", "arguments": {"path": "src/app.py"}}
OVERFLOW = "prompt is too long: 210000 tokens > 200000 maximum"


class Overflowing:
    """A scripted provider whose working requests from the ``from_request``-th on overflow."""

    def __init__(self, script: Path, from_request: int, **limits: Any) -> None:
        self.inner = ScriptedProvider.from_file(script)
        self.name, self.model = "overflowing", "m"
        self.from_request = from_request
        self.sent: list[CompletionRequest] = []
        self.max_output_tokens = limits.get("max_output_tokens")
        self.window_tokens = limits.get("window_tokens")

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    async def aclose(self) -> None:
        return None

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamEvent]:
        if request.purpose == "work":
            self.sent.append(request)
            if len(self.sent) >= self.from_request:
                raise ProviderError(ErrorKind.CONTEXT_OVERFLOW, OVERFLOW, status=400)
        async for event in self.inner.stream(request):
            yield event


async def run_with(store, workspace: Path, provider: Overflowing):
    harness = Harness(store=store, provider=provider, approver=ApproveAll(), policy=Policy())
    return await start_run(harness, TaskContract("read", workspace, max_steps=30))


async def test_an_overflow_compacts_once_then_fails_clearly(store, workspace, write_script):
    provider = Overflowing(write_script([{"tool_calls": [READ]}] * 12), from_request=13)
    result = await run_with(store, workspace, provider)
    assert result.outcome is Outcome.CONTEXT_OVERFLOW
    assert result.error and "still does not fit after compacting once" in result.error
    assert OVERFLOW in result.error
    first, second = provider.sent[-2:]
    assert first.messages != second.messages  # the retry was compacted, not resent as it was
    # the retry folds what it can into a summary (the twelve reads of one unchanged file are
    # one carried read and eleven left out, so it does not get shorter in messages)
    assert any(m.content.startswith("[Summary of steps 1–") for m in second.messages)
    assert not any(m.content.startswith("[Summary of steps") for m in first.messages)
    trace = await build_trace(store, result.run_id)
    last = [r for r in trace["requests"] if r["step"] == 13 and r["purpose"] == "work"]
    assert [r["attempt"] for r in last] == [1, 2] and all(r["error"] for r in last)


async def test_what_compaction_leaves_unchanged_is_not_sent_again(store, workspace, write_script):
    provider = Overflowing(write_script([{"text": "x"}]), from_request=1)
    result = await run_with(store, workspace, provider)
    assert result.outcome is Outcome.CONTEXT_OVERFLOW and len(provider.sent) == 1
    assert result.error and "not sent again" in result.error and OVERFLOW in result.error


async def test_a_frame_beyond_the_window_is_refused_before_sending(store, workspace, write_script):
    provider = Overflowing(
        write_script([{"text": "x"}]), from_request=99, max_output_tokens=4_000, window_tokens=5_000
    )
    result = await run_with(store, workspace, provider)
    assert result.outcome is Outcome.CONTEXT_OVERFLOW and provider.sent == []
    assert result.error and "refused before sending" in result.error
    assert "limit of 4,000 exceed the model's window of 5,000" in result.error
    trace = await build_trace(store, result.run_id)
    assert trace["requests"][0]["error"] == result.error
