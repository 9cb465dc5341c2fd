"""The guard around a working request (``model_turn.ask_model``): a server's overflow climbs the
degradation ladder's last rungs (a forced fold, then the bounded emergency compaction), then stops
the run safely with a clear reason; what compaction leaves unchanged is never sent again; a frame
beyond the model's window is never sent at all."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from io_tui.cli.trace import print_context
from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.authority.policy import Policy
from io_tui.core.contract import TaskContract
from io_tui.core.providers.base import (
    CompletionRequest,
    ErrorKind,
    ProviderError,
    StreamEvent,
)
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import Outcome, start_run
from io_tui.core.steering.trace import build_trace

READ = {"name": "read_file", "arguments": {"path": "src/app.py"}}
OVERFLOW = "prompt is too long: 210000 tokens > 200000 maximum"


class Overflowing:
    """A scripted provider whose working requests from the ``from_request``-th on overflow
    (``until``: up to that one only)."""

    def __init__(
        self, script: Path, from_request: int, until: int | None = None, **limits: Any
    ) -> None:
        self.inner = ScriptedProvider.from_file(script)
        self.name, self.model = "overflowing", "m"
        self.from_request, self.until = from_request, until
        self.sent: list[CompletionRequest] = []
        self.summaries = 0
        self.max_output_tokens = limits.get("max_output_tokens")
        self.window_tokens = limits.get("window_tokens")

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    async def aclose(self) -> None:
        return None

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamEvent]:
        self.summaries += request.purpose == "summary"
        if request.purpose == "work":
            self.sent.append(request)
            if self.from_request <= len(self.sent) <= (self.until or len(self.sent)):
                raise ProviderError(ErrorKind.CONTEXT_OVERFLOW, OVERFLOW, status=400)
        async for event in self.inner.stream(request):
            yield event


async def run_with(store, workspace: Path, provider: Overflowing):
    harness = Harness(store=store, provider=provider, approver=ApproveAll(), policy=Policy())
    return await start_run(harness, TaskContract("read", workspace, max_steps=30))


async def rungs(store, run_id: int, step: int) -> list[str]:
    """The rung each working request of ``step`` reached, as its stored manifest says."""
    rows = await store.trace.requests(run_id)
    return [r.manifest["rung"] for r in rows if r.step == step and r.purpose == "work"]


async def test_an_overflow_climbs_the_ladder_then_stops_safely(
    store, workspace, write_script, capsys
):
    provider = Overflowing(write_script([{"tool_calls": [READ]}] * 12), from_request=13)
    result = await run_with(store, workspace, provider)
    assert result.outcome is Outcome.STATE_NOT_PRESERVED and result.status == "failed"
    assert result.error and "the required state could not be preserved" in result.error
    assert "after a forced fold and a bounded emergency compaction" in result.error
    assert OVERFLOW in result.error
    first, folded, emergency = provider.sent[-3:]
    assert first.messages != folded.messages  # each rung changed what was sent
    # the forced fold folds what it can into a summary (the twelve reads of one unchanged file
    # are one carried read and eleven left out, so it need not get shorter in messages)
    assert any(m.content.startswith("[Summary of steps 1–") for m in folded.messages)
    assert not any(m.content.startswith("[Summary of steps") for m in first.messages)
    assert emergency.messages != folded.messages
    trace = await build_trace(store, result.run_id)
    last = [r for r in trace["requests"] if r["step"] == 13 and r["purpose"] == "work"]
    assert [r["attempt"] for r in last] == [1, 2, 3] and all(r["error"] for r in last)
    assert await rungs(store, result.run_id, 13) == ["referenced", "summary", "stopped"]
    assert [r["rung"] for r in last] == ["referenced", "summary", "stopped"]  # the trace's
    print_context(trace, 13)  # io-tui trace RUN --context 13
    assert "attempt 3: ceiling" in (out := capsys.readouterr().out) and "· rung stopped" in out
    assert provider.summaries == 1  # the emergency compaction asks no provider
    history = await store.runs.history(result.run_id)
    assert history[-1].step == 13 and not history[-1].tool_calls  # step 13 ran no call


async def test_the_emergency_compaction_can_save_the_run(store, workspace, write_script):
    provider = Overflowing(
        write_script([{"tool_calls": [READ]}] * 12 + [{"text": "done"}]), from_request=13, until=14
    )
    result = await run_with(store, workspace, provider)
    assert result.outcome is Outcome.FINISHED, result.error
    assert await rungs(store, result.run_id, 13) == ["referenced", "summary", "emergency"]
    rows = [
        r for r in await store.trace.requests(result.run_id) if r.step == 13 and r.purpose == "work"
    ]
    first, emergency = rows[0].manifest, rows[-1].manifest
    assert emergency["ceiling_tokens"] * 2 <= first["ceiling_tokens"]  # under half the ceiling
    folded = rows[1].manifest
    assert emergency["est_tokens"] <= folded["est_tokens"]
    assert emergency["summary_through"] >= folded["summary_through"]
    assert provider.summaries == 1  # the forced fold's; the emergency compaction asks none


async def test_what_compaction_leaves_unchanged_is_not_sent_again(store, workspace, write_script):
    provider = Overflowing(write_script([{"text": "x"}]), from_request=1)
    result = await run_with(store, workspace, provider)
    assert result.outcome is Outcome.STATE_NOT_PRESERVED and len(provider.sent) == 1
    assert result.error and "not sent again" in result.error and OVERFLOW in result.error
    assert await rungs(store, result.run_id, 1) == ["whole", "whole", "stopped"]  # nothing folds


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


async def test_a_pre_compact_hook_hears_of_a_summary(store, workspace, write_script, tmp_path):
    """Claude Code's ``PreCompact`` (trigger ``auto``) runs before the summary is asked for,
    and is recorded in the trace as every hook run is."""
    from io_tui.core.hooks.config import HookCommand, HookMatcher
    from io_tui.core.run.origin import RunOrigin
    from io_tui.core.run.settings import RunSettings

    log = tmp_path / "pre_compact.jsonl"
    hook = HookCommand(command=f"cat >> {log}; echo >> {log}")
    origin = RunOrigin(settings=RunSettings(hooks={"PreCompact": [HookMatcher(hooks=[hook])]}))
    provider = Overflowing(write_script([{"tool_calls": [READ]}] * 12), from_request=13)
    harness = Harness(
        store=store, provider=provider, approver=ApproveAll(), policy=Policy(), origin=origin
    )
    result = await start_run(harness, TaskContract("read", workspace, max_steps=30))
    assert provider.summaries == 1
    (heard,) = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    assert (heard["hook_event_name"], heard["trigger"]) == ("PreCompact", "auto")
    events = await store.trace.events(result.run_id)
    assert [e for e in events if e.kind == "hook" and e.detail["event"] == "PreCompact"]
