"""What each request costs with prompt caching, beside re-sending everything (``run/meter.py``):
priced from the provider's own cache figures where it reports them, estimated from the prefix
otherwise, with the run's running ratio; and through a real run, recorded with each request."""

from __future__ import annotations

import pytest

from io_tui.core.context.manifest import Assembly
from io_tui.core.context.turns import message_tokens
from io_tui.core.contract import estimate_tokens
from io_tui.core.ledger import Observation, ObsKind, StepRecord
from io_tui.core.prices import CachePrices
from io_tui.core.providers.base import Usage
from io_tui.core.providers.messages import Message, ToolCall
from io_tui.core.run.meter import CostMeter

PRICES = CachePrices(uncached=1.0, write=1.25, read=0.1)


def request(*messages: Message) -> Assembly:
    tokens = sum(message_tokens(m) for m in messages)
    return Assembly(messages, (), (), 10_000, tokens, 0)


def step(n: int, text: str) -> StepRecord:
    call = ToolCall(f"c{n}", "run_command", {"argv": ["ls"]})
    result = Observation(n, f"c{n}", "run_command", ObsKind.EXEC, "ls", text)
    return StepRecord(n, f"turn {n}", (call,), (result,))


def test_an_append_only_run_is_priced_as_re_sending_everything_is() -> None:
    """Each request repeats the last and appends its newest step: io-tui's estimate and the
    naive baseline are the same requests, so the same cost, and the ratio 1.0."""
    meter = CostMeter(PRICES)
    frame = (Message("system", "SYSTEM " * 50), Message("user", "GOAL " * 20))
    first = meter.price(request(*frame), [], None, 1.0, 10)
    assert (first.source, first.read) == ("estimated", 0)
    assert first.cost == pytest.approx(first.written * 1.25)
    history, messages = [], list(frame)
    for n in (1, 2, 3):
        record = step(n, f"output {n} " * 40)
        history.append(record)
        messages += [
            Message("assistant", record.text, record.tool_calls),
            Message("tool", record.observations[0].text, tool_call_id=f"c{n}"),
        ]
        cost = meter.price(request(*messages), history, None, 1.0, 10)
        previous = sum(message_tokens(m) for m in messages[:-2])
        assert cost.read == previous  # the whole earlier request, from the cache
        assert cost.cost == pytest.approx(cost.naive_cost, rel=0.02)
    assert cost.ratio == pytest.approx(1.0, rel=0.02)


def test_a_request_that_changes_an_early_message_costs_more_than_appending() -> None:
    meter = CostMeter(PRICES)
    frame = [Message("system", "SYSTEM " * 50), Message("user", "GOAL")]
    meter.price(request(*frame, Message("user", "A" * 2_000)), [], None, 1.0, 0)
    changed = meter.price(
        request(*frame, Message("user", "B" * 2_000)), [step(1, "x")], None, 1.0, 0
    )
    assert changed.read == sum(message_tokens(m) for m in frame)  # only the frame was cached
    assert changed.cost > changed.naive_cost


def test_the_providers_own_cache_figures_win() -> None:
    """Anthropic's reads and writes as reported, the rest uncached; a provider reporting only
    what it read (OpenAI, llama.cpp) has the rest written."""
    meter = CostMeter(PRICES)
    a = request(Message("system", "S"), Message("user", "G"))
    usage = Usage(prompt_tokens=1_000, completion_tokens=50, cache_read_tokens=600,
                  cache_write_tokens=300, cache_reported=True)  # fmt: skip
    cost = meter.price(a, [], usage, 1.0, 0)
    assert (cost.source, cost.read, cost.written, cost.uncached, cost.output) == (
        "reported",
        600,
        300,
        100,
        50,
    )
    assert cost.cost == pytest.approx(600 * 0.1 + 300 * 1.25 + 100)
    openai = Usage(prompt_tokens=1_000, cache_read_tokens=600, cache_reported=True)
    cost = CostMeter(PRICES).price(a, [], openai, 1.0, 0)
    assert (cost.read, cost.written, cost.uncached) == (600, 400, 0)


def test_the_naive_baseline_counts_each_step_whole_once() -> None:
    meter = CostMeter(PRICES)
    first = request(Message("system", "S" * 100))
    meter.price(first, [], None, 1.0, 0)
    history = [step(1, "one " * 100), step(2, "two " * 100)]
    cost = meter.price(first, history, None, 1.0, 0)  # io-tui sent nothing new: all cached
    whole = sum(
        message_tokens(Message("assistant", r.text, r.tool_calls)) + estimate_tokens(r.observations[0].text)
        for r in history
    )  # fmt: skip
    assert cost.naive_tokens == first.total_est_tokens + whole
    assert cost.naive_cost == pytest.approx(first.total_est_tokens * 0.1 + whole * 1.25)
    assert cost.ratio is not None and cost.ratio < 1.0
