"""Prompt-cache accounting: cached prefixes, their price, where and why they broke."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.context.cache import (
    annotate,
    cached_prefix,
    explain,
    message_key,
    request_cost,
    request_hit_rate,
    run_cache,
    stored_tokens,
    tools_tokens,
    usage_hit_rate,
)
from io_tui.core.contract import TaskContract
from io_tui.core.prices import CachePrices
from io_tui.core.providers.base import CompletionRequest, StreamEvent, Usage
from io_tui.core.providers.messages import Message, ToolCall
from io_tui.core.providers.presets import make_provider
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import Outcome, start_run
from io_tui.core.steering.trace import build_trace
from io_tui.core.text.heads import MEMORY_HEADER

WIRE = Path(__file__).resolve().parents[1] / "fixtures" / "wire"


def keys(*messages: Message) -> list[str]:
    return [message_key(m.to_json()) for m in messages]


SYSTEM = Message("system", "be careful")
TASK = Message("user", "Goal: fix it")
CALL = Message("assistant", "", (ToolCall("c1", "read_file", {"path": "a.txt"}),))
RESULT = Message("tool", "1│a", tool_call_id="c1")


def test_message_key_is_byte_exact_and_order_free() -> None:
    assert message_key({"role": "user", "content": "x"}) == message_key(
        {"content": "x", "role": "user"}
    )
    assert message_key({"role": "user", "content": "x"}) != message_key(
        {"role": "user", "content": "x "}
    )
    assert message_key({"role": "user", "content": "é"}) == '{"content":"é","role":"user"}'


def test_first_request_has_no_cached_prefix() -> None:
    prefix = cached_prefix(None, keys(SYSTEM, TASK), [10, 5])
    assert (prefix.items, prefix.tokens, prefix.rewrote) == (0, 0, False)


def test_an_append_only_request_caches_all_of_the_previous_one() -> None:
    previous = keys(SYSTEM, TASK)
    prefix = cached_prefix(previous, keys(SYSTEM, TASK, CALL, RESULT), [10, 5, 3, 2])
    assert (prefix.items, prefix.tokens, prefix.rewrote) == (2, 15, False)


def test_a_changed_earlier_message_rewrites_the_prefix() -> None:
    stub = Message("tool", "[superseded]", tool_call_id="c1")
    previous = keys(SYSTEM, TASK, CALL, RESULT)
    prefix = cached_prefix(previous, keys(SYSTEM, TASK, CALL, stub), [10, 5, 3, 1])
    assert (prefix.items, prefix.tokens, prefix.rewrote) == (3, 18, True)


def test_a_dropped_last_message_is_a_rewrite_too() -> None:
    prefix = cached_prefix(keys(SYSTEM, TASK, CALL), keys(SYSTEM, TASK), [10, 5])
    assert prefix.rewrote and prefix.items == 2


def test_request_cost_prices_the_prefix_at_read_and_the_rest_at_write() -> None:
    anthropic = CachePrices()
    assert request_cost(1_000, 0, anthropic) == pytest.approx(1_250)
    assert request_cost(1_000, 800, anthropic) == pytest.approx(80 + 250)
    openai = CachePrices(write=1.0, read=0.25, min_prefix_tokens=1_024)
    assert request_cost(2_000, 1_000, openai) == pytest.approx(2_000)  # under the minimum
    assert request_cost(2_000, 1_500, openai) == pytest.approx(375 + 500)


# -- through a real run: the wire's cache fields, the trace's prefix analysis ----------------


class Capturing:
    """The scripted provider, keeping every request it was sent."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner, self.name, self.model = inner, inner.name, inner.model
        self.requests: list[CompletionRequest] = []

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        async for event in self.inner.stream(request):
            yield event


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def test_a_run_explains_each_prefix_break(store, workspace, write_script) -> None:
    script = write_script(
        [
            call("read_file", path="src/app.py"),
            call("read_file", path="README.md"),
            call("write_file", path="src/app.py", content="x = 1\n"),  # corrected after: no break
            call("write_file", path="AGENTS.md", content="Use tabs.\n"),  # the frame changes
            call("remember", key="style", value="tabs"),  # shows in its result: no rewrite
            {"text": "done"},
        ]
    )
    provider = Capturing(ScriptedProvider.from_file(script))
    harness = Harness(store, provider, ApproveAll())
    result = await start_run(harness, TaskContract("look", workspace))
    assert result.outcome is Outcome.FINISHED
    sent = provider.requests
    assert len({r.cache_key for r in sent}) == 1 and sent[0].cache_key
    assert sent[0].cache_breakpoints == (1,)  # the frame is the whole first request
    assert all(r.cache_breakpoints[-1] == len(r.messages) - 1 for r in sent[1:])

    requests = (await build_trace(store, result.run_id))["requests"]
    caches = [r["cache"] for r in requests]
    assert [c["broke_at"] is None for c in caches] == [True, True, True, True, False, True]
    assert caches[1]["cached_messages"] == len(requests[0]["messages"])
    assert caches[1]["cached_prefix_tokens"] == sum(
        stored_tokens(m) for m in requests[0]["messages"]
    ) + tools_tokens(requests[0])
    corrected = requests[3]["messages"][-1]["content"]  # the read out of date, corrected after
    assert corrected.startswith("[correction of step 1's read of src/app.py: step 3 wrote")
    fifth = caches[4]
    assert fifth["broke_at"] == 2 == fifth["cached_messages"]  # past the system and contract
    assert fifth["why"] == "the frame's AGENTS.md was inserted before step 1's turn", fifth["why"]
    assert caches[5]["cache_read_tokens"] is None  # the script reports no usage

    summary = run_cache(requests)
    assert (summary.requests, summary.rewrites, summary.source) == (6, 1, "estimated")
    rate, source = request_hit_rate(requests[1])
    assert source == "estimated"
    whole = sum(stored_tokens(m) for m in requests[1]["messages"]) + tools_tokens(requests[1])
    assert caches[1]["prompt_tokens_est"] == whole  # counted as the cached prefix is
    assert rate == pytest.approx(caches[1]["cached_prefix_tokens"] / whole)
    assert request_hit_rate(requests[0]) == (0.0, "estimated")
    assert summary.hit_rate is not None and 0.3 < summary.hit_rate < 1


async def test_reported_cache_tokens_reach_the_store_and_the_trace(
    store, workspace, monkeypatch
) -> None:
    """A real llama.cpp stream (its slot reused 24 of 40 prompt tokens) through the llamacpp
    preset, the run loop, the store and the trace."""
    body = (WIRE / "llamacpp_chat" / "prefix_reused.sse").read_bytes()

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body)

    provider = make_provider("llamacpp", model="m", transport=httpx.MockTransport(answer))
    result = await start_run(Harness(store, provider, ApproveAll()), TaskContract("hi", workspace))
    [request] = (await build_trace(store, result.run_id))["requests"]
    assert request["usage"]["cache_read_tokens"] == 24 and request["usage"]["cache_reported"]
    assert request["cache"]["cache_read_tokens"] == 24
    assert request["cache"]["cache_write_tokens"] == 0
    summary = run_cache([request])
    assert summary.source == "reported" and summary.hit_rate == pytest.approx(24 / 40)
    assert usage_hit_rate(request["usage"]) == pytest.approx(24 / 40)
    assert request_hit_rate(request) == (pytest.approx(24 / 40), "reported")


def test_usage_hit_rate_needs_reported_cache_figures() -> None:
    assert usage_hit_rate(None) is None
    assert usage_hit_rate(Usage(100, 5, cache_read_tokens=0).to_json()) is None
    reported = Usage(100, 5, cache_read_tokens=0, cache_reported=True)
    assert usage_hit_rate(reported.to_json()) == 0.0
    assert usage_hit_rate(Usage(200, 5, 150, 10, cache_reported=True).to_json()) == 0.75


FRAME = [{"role": "system", "content": "sys"}, {"role": "user", "content": "Goal: g"}]
SECTIONS = [
    {"name": "system", "source": "harness", "est_tokens": 1, "fixed": True},
    {"name": "tools", "source": "2 tool schemas", "est_tokens": 40, "fixed": True},
    {"name": "contract", "source": "task", "est_tokens": 2, "fixed": True},
]


def stored(*body: dict[str, Any], entries=(), memory_keys=()) -> dict[str, Any]:
    return {
        "messages": FRAME + list(body),
        "sections": SECTIONS,
        "entries": list(entries),
        "memory_keys": list(memory_keys),
    }


def turn(step: int) -> dict[str, Any]:
    call = {"id": f"c{step}", "name": "run_command", "arguments": {"argv": ["pytest"]}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def result(step: int, text: str) -> dict[str, Any]:
    return {"role": "tool", "content": text, "tool_call_id": f"c{step}"}


def entry(step: int, state: str, reason: str = "", by: int | None = None) -> dict[str, Any]:
    return {
        "step": step, "call_id": f"c{step}", "kind": "exec", "target": "pytest",
        "state": state, "reason": reason, "superseded_by": by,
    }  # fmt: skip


def test_why_names_the_part_and_what_became_of_it() -> None:
    two = stored(turn(1), result(1, "1 failed"), turn(2), result(2, "ok"),
                 entries=[entry(1, "full"), entry(2, "full")])  # fmt: skip
    superseded = stored(
        turn(1), result(1, "[stub]"), turn(2), result(2, "ok"),
        entries=[entry(1, "superseded", "a later run of the same command", 2), entry(2, "full")],
    )  # fmt: skip
    found = explain(two, superseded)
    assert (found.broke_at, found.cached_messages) == (3, 3)
    assert found.cached_tokens == 40 + sum(stored_tokens(m) for m in two["messages"][:3])
    assert found.why == (
        "step 1's exec of pytest became a stub: a later run of the same command (step 2)"
    )
    folded = stored(
        {"role": "user", "content": "[Summary of steps 1–1, written when …]\nran pytest"},
        turn(2), result(2, "ok"),
        entries=[entry(1, "summary", "folded into the compaction summary"), entry(2, "full")],
    )  # fmt: skip
    assert explain(two, folded).why == ("the compaction summary was inserted before step 1's turn")
    shortened = stored({"role": "assistant", "content": "…", "tool_calls": turn(1)["tool_calls"]},
                       result(1, "1 failed"), entries=[entry(1, "full")])  # fmt: skip
    assert explain(two, shortened).why == "step 1's turn was shortened: its results left the window"
    gone = stored(turn(2), result(2, "ok"), entries=[entry(1, "collapsed"), entry(2, "full")])
    assert explain(two, gone).why == (
        "step 1's turn was dropped: its results were collapsed into one line"
    )


def test_a_changed_memory_block_names_the_notes() -> None:
    memory = {"role": "user", "content": MEMORY_HEADER + "\n- style: tabs"}
    before = stored(memory, turn(1), result(1, "x"), entries=[entry(1, "full")],
                    memory_keys=["style"])  # fmt: skip
    after = stored({**memory, "content": memory["content"] + "\n- lint: ruff"}, turn(1),
                   result(1, "x"), entries=[entry(1, "full")], memory_keys=["style", "lint"])  # fmt: skip
    assert explain(before, after).why == "the memory block changed: +lint"
    assert explain(before, before).broke_at is None


def test_the_estimated_hit_rate_counts_the_prompt_as_its_cached_prefix_is() -> None:
    """A llama.cpp run: its calibrated ``est_tokens`` leave out the tool schemas the server
    drops, but the cached prefix counts them; the hit rate compares like with like (it was
    121% on a real llama.cpp session)."""
    first = stored(turn(1), result(1, "1 failed")) | {"purpose": "work", "est_tokens": 9}
    second = stored(turn(1), result(1, "1 failed"), turn(2), result(2, "ok"))
    second |= {"purpose": "work", "est_tokens": 12}
    annotate([first, second])
    whole = sum(stored_tokens(m) for m in second["messages"]) + 40
    assert second["cache"]["prompt_tokens_est"] == whole
    rate, source = request_hit_rate(second)
    assert source == "estimated" and rate == pytest.approx(
        second["cache"]["cached_prefix_tokens"] / whole
    )
    summary = run_cache([first, second])
    assert summary.hit_rate is not None and summary.hit_rate < 1
