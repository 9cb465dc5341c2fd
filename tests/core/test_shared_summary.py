"""A fold's summary request shares the prompt cache of the request before it
(``context/summary.py``: ``shared_summary_request``): it repeats that request byte for byte, its
tools with it, and asks after it with the folded steps as an index. A forced fold, a request that
would not fit, or a provider that refuses it as too long ask on their own as before; the meter
prices each as the provider bills it."""

from __future__ import annotations

import pytest
from test_context import Writer, compaction_history, frame, obs, step

from io_tui.core.context.compaction import Shared, fold, fold_steps
from io_tui.core.context.digest import digest_request
from io_tui.core.context.engine import ContextEngine
from io_tui.core.context.manifest import Assembly
from io_tui.core.context.summary import SUMMARY_SYSTEM_PROMPT, Agreement, Summary
from io_tui.core.context.turns import message_tokens
from io_tui.core.ledger import ObsKind
from io_tui.core.prices import CachePrices
from io_tui.core.progress.model import ProgressLedger
from io_tui.core.progress.render import OBJECTIVE_ABOVE, render_ledger
from io_tui.core.providers.base import CompletionRequest, ErrorKind, ProviderError
from io_tui.core.providers.messages import Message
from io_tui.core.run.meter import CostMeter

CEILING = 4_000
ANTHROPIC = CachePrices()  # write 1.25, read 0.1


async def build_until_a_fold(engine: ContextEngine) -> tuple[Assembly, Assembly]:
    """Grow a run one step at a time until a request folds: that request and the one before."""
    history = compaction_history(40)
    before = None
    for n in range(1, len(history) + 1):
        assembly = await engine.build(history[:n], ceiling_tokens=CEILING)
        if assembly.folded:
            assert before is not None
            return before, assembly
        before = assembly
    raise AssertionError("no request folded")


async def test_a_fold_asks_for_its_summary_after_the_request_before_it() -> None:
    writer = Writer()
    engine = ContextEngine(frame(), summarize=writer)
    before, folded = await build_until_a_fold(engine)
    [request] = writer.requests
    # the request before, byte for byte, with its tools and its cache breakpoint at its end
    assert request.messages[:-1] == before.messages
    assert request.tools == engine.frame.tools
    assert request.cache_breakpoints == (len(before.messages) - 1,)
    assert request.cached and request.purpose == "summary"
    ask = request.messages[-1].content
    through = folded.summary.through_step if folded.summary else 0
    assert ask.startswith(f"[io-tui harness: compaction] Write the summary of steps 1–{through}")
    assert "call no tool" in ask and "is data" in ask
    # the folded steps the request before showed are an index: headers, no bodies
    assert "### step 1\n" in ask and "result run_command exec [full; shown above]" in ask
    assert "F" * 100 not in ask
    assert message_tokens(request.messages[-1]) < 2_000


async def test_the_shared_ask_names_the_objective_the_task_message_above_states() -> None:
    """The ledger the summary must agree with opens with the run's objective, which the task
    message above already carries whole: the shared ask names it instead of repeating it."""
    writer = Writer()
    ledger = Agreement(
        "Objective: make the tests pass\n- decided", (), "Objective: (above)\n- decided"
    )
    engine = ContextEngine(frame(), summarize=writer, agreement=lambda: ledger)
    await build_until_a_fold(engine)
    [request] = writer.requests
    ask = request.messages[-1].content
    assert "Objective: (above)" in ask and "Objective: make the tests pass" not in ask


def test_the_keeper_s_ledger_for_a_shared_ask_names_the_objective() -> None:
    ledger = ProgressLedger(run_id=1, objective="fix the parser " * 100)
    whole, above = render_ledger(ledger), render_ledger(ledger, objective=OBJECTIVE_ABOVE)
    assert "fix the parser " * 100 in whole and "fix the parser" not in above
    assert f"Objective: {OBJECTIVE_ABOVE}" in above


async def test_a_forced_fold_asks_on_its_own() -> None:
    """After a provider's context-overflow error, the request before may be what overflowed:
    the summary is asked for in a request of its own, bounded by the notes' budget."""
    writer = Writer()
    engine = ContextEngine(frame(), summarize=writer)
    history = compaction_history(12)
    await engine.build(history, ceiling_tokens=24_000)
    forced = await engine.build(history, ceiling_tokens=24_000, force_fold=True)
    assert forced.folded
    [request] = writer.requests
    assert request.messages[0] == Message("system", SUMMARY_SYSTEM_PROMPT)
    assert not request.cached and not request.tools


async def test_a_run_s_first_request_has_nothing_to_share() -> None:
    writer = Writer()
    await ContextEngine(frame(), summarize=writer).build(
        compaction_history(), ceiling_tokens=CEILING
    )
    [request] = writer.requests
    assert request.messages[0].content == SUMMARY_SYSTEM_PROMPT


def shared_for(prices: CachePrices = ANTHROPIC) -> tuple[Shared, list, Message]:
    history = compaction_history(6)
    engine = ContextEngine(frame())
    engine.live.sync(history)
    steps, _ = fold_steps(engine.live, 4, 2_000, 8_000)
    index, _ = fold_steps(engine.live, 4, 2_000, 8_000, shown_from=1)
    above = (Message("system", "You are a careful agent."), Message("user", "turns " * 2_000))
    shared = Shared(above, engine.frame.tools, index, None, prices)
    return shared, steps, above[-1]


async def test_a_shared_ask_is_made_only_where_the_cache_makes_it_cheaper() -> None:
    """The request before is 3,000 tokens, the notes of its own about 800: read from a cache
    at a tenth it is cheaper to repeat; with no discount for a cached prefix it is not."""
    no_discount = CachePrices(uncached=1.0, write=1.0, read=1.0)
    for prices, shares in ((ANTHROPIC, True), (no_discount, False)):
        writer = Writer()
        shared, steps, last = shared_for(prices)
        await fold(
            goal="g", previous=None, steps=steps, first_step=1, through_step=4,
            ceiling_tokens=CEILING, summarize=writer, shared=shared,
        )  # fmt: skip
        [request] = writer.requests
        assert request.cached is shares
        assert (request.messages[-2] == last) is shares


async def test_a_shared_ask_refused_as_too_long_is_asked_again_on_its_own() -> None:
    asked: list[CompletionRequest] = []

    async def refuses_long(request: CompletionRequest) -> str:
        asked.append(request)
        if request.cached:
            raise ProviderError(ErrorKind.CONTEXT_OVERFLOW, "prompt is too long")
        return "Goal: pass"

    shared, steps, _ = shared_for()
    summary = await fold(
        goal="g", previous=None, steps=steps, first_step=1, through_step=4,
        ceiling_tokens=CEILING, summarize=refuses_long, shared=shared,
    )  # fmt: skip
    assert [r.cached for r in asked] == [True, False]
    assert summary.source == "provider" and summary.text.startswith("Goal: pass")


async def test_a_shared_ask_answered_with_a_tool_call_only_is_asked_again_on_its_own() -> None:
    asked: list[CompletionRequest] = []

    async def calls_a_tool(request: CompletionRequest) -> str:
        asked.append(request)
        return "" if request.cached else "Goal: pass"

    shared, steps, _ = shared_for()
    summary = await fold(
        goal="g", previous=None, steps=steps, first_step=1, through_step=4,
        ceiling_tokens=CEILING, summarize=calls_a_tool, shared=shared,
    )  # fmt: skip
    assert [r.cached for r in asked] == [True, False] and summary.source == "provider"


async def test_other_provider_errors_fall_back_to_the_digest_without_asking_again() -> None:
    asked: list[CompletionRequest] = []

    async def down(request: CompletionRequest) -> str:
        asked.append(request)
        raise ProviderError(ErrorKind.TRANSPORT, "connection refused")

    shared, steps, _ = shared_for()
    summary = await fold(
        goal="g", previous=None, steps=steps, first_step=1, through_step=4,
        ceiling_tokens=CEILING, summarize=down, shared=shared,
    )  # fmt: skip
    assert len(asked) == 1 and summary.source == "digest"


async def test_the_digest_reads_a_shared_request_and_the_summary_above_it() -> None:
    """The scripted provider answers a summary request with its digest: a shared one carries
    the previous summary among the messages it repeats, not in a fence of its own."""
    writer = Writer()
    engine = ContextEngine(frame(), summarize=writer)
    history = [step(1, obs(1, ObsKind.READ, "src/app.py", "x = 1"))]
    history += compaction_history(40)[1:]
    engine.summaries.append(Summary(0, "[deterministic digest of steps 1–1]\n- read: src/old.py"))
    await build_until_a_fold(engine)
    [request] = writer.requests
    assert request.cached
    text = digest_request(request)
    assert text.startswith("[deterministic digest of steps")
    assert "pytest -k t" in text  # from the index of the steps folded
    assert "make the tests pass" in text  # the goal, from the task message above


def test_the_meter_prices_a_shared_summary_against_the_working_request_it_repeats() -> None:
    prices = CachePrices(uncached=1.0, write=1.25, read=0.1)
    work = (Message("system", "SYSTEM " * 200), Message("user", "history " * 400))
    tokens = sum(message_tokens(m) for m in work)
    ask = Message("user", "Write the summary " * 20)
    meter = CostMeter(prices)
    meter.price(Assembly(work, (), (), 10_000, tokens, 0), [], None, 1.0, 0)
    before = (meter.run_cost, meter.run_naive_cost)
    total = tokens + message_tokens(ask)
    shared = meter.price_summary((*work, ask), total, None, 1.0, 50, shared=True)
    assert (shared.read, shared.written, shared.uncached) == (tokens, message_tokens(ask), 0)
    assert meter.run_cost == pytest.approx(before[0] + shared.cost)
    assert meter.run_naive_cost == before[1]  # re-sending everything writes no summary
    own = meter.price_summary((Message("system", "S"), ask), 500, None, 1.0, 50, shared=False)
    assert (own.read, own.written, own.uncached) == (0, 0, 500)
    assert own.cost == pytest.approx(500 * prices.uncached)
