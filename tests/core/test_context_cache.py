"""Cache-aware assembly (DESIGN §3.2, ``core/context/plan.py``): between planned rewrites a run's
requests only append; superseded results that are still current wait for the next rewrite, and
the window moves in steps that leave room for the coming ones."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

from io_tui.core.context import ContextEngine, EntryState, Frame
from io_tui.core.context.plan import extends
from io_tui.core.context.stubs import apply_echo
from io_tui.core.contract import CachePrices, Compaction, TaskContract
from io_tui.core.ledger import Observation, ObsKind, Seen, StepRecord
from io_tui.core.providers.base import ToolCall


def frame(prices: CachePrices | None = None, max_steps: int = 100) -> Frame:
    contract = TaskContract(
        "fix",
        Path("/ws"),
        max_steps=max_steps,
        compaction=Compaction(enabled=False),
        cache=prices or CachePrices(),
    )
    return Frame("SYSTEM", (), contract)


def rerun(step: int, line: str = "pytest -q", text: str = "") -> StepRecord:
    obs = Observation(
        step, f"c{step}", "run_command", ObsKind.EXEC, line, text or f"run {step}: " + "F" * 800
    )
    return StepRecord(step, f"turn {step}", (ToolCall(obs.call_id, obs.tool, {}),), (obs,))


def entry(assembly, call_id: str):
    return next(e for e in assembly.entries if e.call_id == call_id)


async def grow(engine: ContextEngine, records: list[StepRecord], ceiling: int) -> list:
    """Build every request of a run whose steps are ``records``, as the run loop does."""
    built = []
    for n in range(len(records) + 1):
        asking = StepRecord(n + 1, "")
        built.append(await engine.build([*records[:n], asking], ceiling_tokens=ceiling))
    return built


async def test_a_rerun_command_stays_pending_until_the_next_rewrite() -> None:
    async def refresh(obs: Observation) -> str:
        return "current a.py"

    engine = ContextEngine(frame(max_steps=12), refresh=refresh)
    read = Observation(1, "r1", "read_file", ObsKind.READ, "a.py", "old a.py")
    records = [StepRecord(1, "look", (ToolCall("r1", "read_file", {}),), (read,))]
    records += [rerun(2), rerun(3)]
    built = await grow(engine, records, 24_000)
    last = built[-1]
    assert extends(last.messages, built[-2].messages)  # nothing earlier rewritten
    e = entry(last, "c2")
    assert e.state is EntryState.FULL and e.superseded_by == 3
    assert "step 3 made the same call, stubbed at the next rewrite" in e.reason
    # a request that must rewrite anyway (step 1's read went stale) stubs it with it
    write = Observation(4, "w4", "edit_file", ObsKind.WRITE, "a.py", "edited")
    records.append(StepRecord(4, "edit", (ToolCall("w4", "edit_file", {}),), (write,)))
    again = await engine.build([*records, StepRecord(5, "")], ceiling_tokens=24_000)
    assert entry(again, "r1").state is EntryState.REFRESHED
    assert entry(again, "c2").state is EntryState.DROPPED  # its step is left out with it


async def test_a_rerun_is_sent_as_its_difference_from_the_pending_output_then_whole() -> None:
    """While the earlier output is pending (carried whole), the rerun's is sent as the lines
    that changed (``echoed``), not the same lines twice; a rerun that gives the output carried
    again, to the character, leaves that one current and is left out pointing at it (no
    rewrite to stub it later); the rewrite that stubs the pending one sends the rerun whole."""

    async def refresh(obs: Observation) -> str:
        return "current a.py"

    log = "".join(f"test_{n} PASSED\n" for n in range(60))
    engine = ContextEngine(frame(max_steps=12), refresh=refresh)
    read = Observation(1, "r1", "read_file", ObsKind.READ, "a.py", "old a.py")
    records = [StepRecord(1, "look", (ToolCall("r1", "read_file", {}),), (read,))]
    records += [rerun(2, text=log), rerun(3, text=log.replace("test_7 PASSED", "test_7 FAILED"))]
    records.append(rerun(4, text=records[-1].observations[0].text))
    built = await grow(engine, records, 24_000)
    assert all(extends(b.messages, a.messages) for a, b in pairwise(built))  # append-only
    sent = {m.tool_call_id: m.content for m in built[-1].messages if m.tool_call_id}
    third, fourth = entry(built[-1], "c3"), entry(built[-1], "c4")
    assert entry(built[-1], "c2").state is EntryState.FULL and sent["c2"] == log
    assert third.state is EntryState.ECHOED and "the difference from step 2's" in third.reason
    assert sent["c3"].endswith("@@ -8 +8 @@\n-test_7 PASSED\n+test_7 FAILED\n")
    assert apply_echo(log, sent["c3"]) == records[2].observations[0].text
    assert fourth.state is EntryState.DROPPED and fourth.superseded_by == 3
    assert "step 3's result of the same call is the same, to the character" in fourth.reason
    assert "c4" not in sent
    # a request that must rewrite anyway stubs the pending one: the rerun is sent whole
    write = Observation(5, "w5", "edit_file", ObsKind.WRITE, "a.py", "edited")
    records.append(StepRecord(5, "edit", (ToolCall("w5", "edit_file", {}),), (write,)))
    again = await engine.build([*records, StepRecord(6, "")], ceiling_tokens=24_000)
    assert entry(again, "c3").state is EntryState.FULL
    assert {entry(again, c).state for c in ("c2", "c4")} == {EntryState.DROPPED}


async def test_a_write_shown_whole_later_has_its_turn_compact_from_the_next_rewrite() -> None:
    """A write_file whose path a later step read whole: what its call wrote is superseded, so
    its turn is sent compact (as an out-of-window turn) from the next rewrite on, not before
    (the requests only append until then)."""

    async def refresh(obs: Observation) -> str:
        return "current b.py"

    content = "x = 1\n" * 400
    write = Observation(2, "w2", "write_file", ObsKind.WRITE, "a.py", "wrote a.py")
    read_b = Observation(1, "r1", "read_file", ObsKind.READ, "b.py", "old b.py")
    read_a = Observation(3, "r3", "read_file", ObsKind.READ, "a.py", content)
    records = [
        StepRecord(1, "look", (ToolCall("r1", "read_file", {}),), (read_b,)),
        StepRecord(2, "write", (ToolCall("w2", "write_file", {"content": content}),), (write,)),
        StepRecord(3, "check", (ToolCall("r3", "read_file", {}),), (read_a,)),
        rerun(4),
    ]
    engine = ContextEngine(frame(max_steps=12), refresh=refresh)
    built = await grow(engine, records, 24_000)
    assert all(extends(b.messages, a.messages) for a, b in pairwise(built))

    def written(assembly) -> str:
        calls = [c for m in assembly.messages for c in m.tool_calls if c.id == "w2"]
        return calls[0].arguments["content"]

    assert written(built[-1]) == content
    # a request that must rewrite anyway (step 1's read went stale) takes the compact turn
    edit = Observation(5, "w5", "edit_file", ObsKind.WRITE, "b.py", "edited")
    records.append(StepRecord(5, "edit", (ToolCall("w5", "edit_file", {}),), (edit,)))
    again = await engine.build([*records, StepRecord(6, "")], ceiling_tokens=24_000)
    assert entry(again, "r1").state is EntryState.REFRESHED
    assert written(again) == "[2,400 chars, superseded: step 3 showed the whole file; in the trace]"


async def rewritten_calls(records: list[StepRecord], ids: tuple[str, ...]) -> dict[str, dict]:
    """The arguments of the calls ``ids`` in the request after a rewrite (a read of c.py, the
    first step, went stale), the run's requests built before it."""

    async def refresh(obs: Observation) -> str:
        return "current c.py"

    read_c = Observation(1, "r1", "read_file", ObsKind.READ, "c.py", "old c.py")
    edit_c = Observation(9, "w9", "edit_file", ObsKind.WRITE, "c.py", "edited c.py")
    steps = [
        StepRecord(1, "look", (ToolCall("r1", "read_file", {}),), (read_c,)),
        *records,
        StepRecord(9, "edit", (ToolCall("w9", "edit_file", {}),), (edit_c,)),
    ]
    engine = ContextEngine(frame(max_steps=12), refresh=refresh)
    await grow(engine, steps, 24_000)
    built = await engine.build([*steps, StepRecord(10, "")], ceiling_tokens=24_000)
    return {c.id: c.arguments for m in built.messages for c in m.tool_calls if c.id in ids}


async def test_a_step_whose_writes_are_not_all_shown_whole_keeps_its_turn() -> None:
    """Of a step that wrote two files, the turn is compact only once both are shown whole: the
    content of the one not shown is nowhere else in the request."""
    content = "x = 1\n" * 400
    writes = (
        Observation(2, "wa", "write_file", ObsKind.WRITE, "a.py", "wrote a.py"),
        Observation(2, "wb", "write_file", ObsKind.WRITE, "b.py", "wrote b.py"),
    )
    calls = tuple(ToolCall(o.call_id, "write_file", {"content": content}) for o in writes)
    read_a = Observation(3, "r3", "read_file", ObsKind.READ, "a.py", content)
    records = [
        StepRecord(2, "write both", calls, writes),
        StepRecord(3, "check", (ToolCall("r3", "read_file", {}),), (read_a,)),
    ]
    ids = ("wa", "wb")
    both = await rewritten_calls(records, ids)
    assert {c: a["content"] for c, a in both.items()} == dict.fromkeys(ids, content)
    read_b = Observation(4, "r4", "read_file", ObsKind.READ, "b.py", content)
    records.append(StepRecord(4, "check b", (ToolCall("r4", "read_file", {}),), (read_b,)))
    shown = await rewritten_calls(records, ids)
    assert {c: a["content"] for c, a in shown.items()} == {  # each names the step that showed it
        "wa": "[2,400 chars, superseded: step 3 showed the whole file; in the trace]",
        "wb": "[2,400 chars, superseded: step 4 showed the whole file; in the trace]",
    }


async def test_an_edit_shows_only_its_snippets_so_a_write_it_follows_keeps_its_content() -> None:
    content = "x = 1\n" * 400
    write = Observation(2, "w2", "write_file", ObsKind.WRITE, "a.py", "wrote a.py")
    edit = Observation(3, "e3", "edit_file", ObsKind.WRITE, "a.py", "edited a.py")
    records = [
        StepRecord(2, "write", (ToolCall("w2", "write_file", {"content": content}),), (write,)),
        StepRecord(3, "edit", (ToolCall("e3", "edit_file", {"old": "x", "new": "y"}),), (edit,)),
    ]
    calls = await rewritten_calls(records, ("w2",))
    assert calls["w2"]["content"] == content  # the file's content is nowhere else


async def test_a_step_that_edited_one_file_twice_is_compact_once_the_file_is_shown() -> None:
    long = "y = 2\n" * 40
    edits = tuple(
        Observation(2, f"e{n}", "edit_file", ObsKind.WRITE, "a.py", "edited a.py") for n in (1, 2)
    )
    calls = tuple(ToolCall(o.call_id, "edit_file", {"old": "x", "new": long}) for o in edits)
    read_a = Observation(3, "r3", "read_file", ObsKind.READ, "a.py", "the whole a.py")
    records = [
        StepRecord(2, "edit twice", calls, edits),
        StepRecord(3, "check", (ToolCall("r3", "read_file", {}),), (read_a,)),
    ]
    shown = await rewritten_calls(records, ("e1", "e2"))
    marker = "[240 chars, superseded: step 3 showed the whole file; in the trace]"
    assert shown == {c: {"old": "x", "new": marker} for c in ("e1", "e2")}


async def test_without_a_cache_discount_a_superseded_result_is_stubbed_at_once() -> None:
    engine = ContextEngine(frame(CachePrices(write=1.0, read=1.0)))
    built = await grow(engine, [rerun(1), rerun(2)], 24_000)
    assert entry(built[-1], "c1").state is EntryState.DROPPED


async def test_a_pending_result_is_stubbed_when_its_savings_pay_for_the_rewrite() -> None:
    """Stubbing a rerun's older output saves its tokens on each coming request and rewrites
    everything after it once: not worth it twenty steps back when a cached token costs a tenth
    and a written one 1.25, worth it when caching saves little."""
    records = [rerun(1, text="F" * 6_000)] + [rerun(n, f"ls d{n}") for n in range(2, 21)]
    records.append(rerun(21, text="F" * 5_999 + "G"))  # not the same output: supersedes c1
    cheap_cache, dear_cache = CachePrices(), CachePrices(write=1.0, read=0.9)
    for prices, state in ((cheap_cache, EntryState.FULL), (dear_cache, EntryState.DROPPED)):
        built = await grow(ContextEngine(frame(prices, max_steps=200)), records, 64_000)
        assert entry(built[-1], "c1").state is state


async def test_a_long_run_moves_its_window_rarely() -> None:
    """Sixty distinct commands at a small ceiling: the window is cut ahead of the coming steps,
    so at most one request in four rewrites an earlier message."""
    engine = ContextEngine(frame())
    records = [rerun(n, f"pytest -k t{n}") for n in range(1, 61)]
    built = await grow(engine, records, 8_000)
    rewrites = sum(
        not extends(built[i].messages, built[i - 1].messages) for i in range(1, len(built))
    )
    assert rewrites <= len(built) // 4
    assert all(a.est_tokens <= 8_000 for a in built)


async def test_what_the_rewriting_step_supersedes_waits_for_the_next_rewrite() -> None:
    """The request for step 4 must rewrite (a write made step 1's read stale); step 4 then runs
    the tests again. That rerun came after the rewrite, so the next request keeps the earlier
    output pending instead of rewriting a second time in a row."""

    async def refresh(obs: Observation) -> str:
        return "current a.py"

    engine = ContextEngine(frame(max_steps=12), refresh=refresh)
    read = Observation(1, "r1", "read_file", ObsKind.READ, "a.py", "old a.py")
    write = Observation(3, "w3", "edit_file", ObsKind.WRITE, "a.py", "edited a.py")
    records = [
        StepRecord(1, "look", (ToolCall("r1", "read_file", {}),), (read,)),
        rerun(2),
        StepRecord(3, "edit", (ToolCall("w3", "edit_file", {}),), (write,)),
        rerun(4),
    ]
    built = await grow(engine, records, 24_000)
    assert not extends(built[3].messages, built[2].messages)  # step 4's request: re-read
    assert entry(built[3], "r1").state is EntryState.REFRESHED
    assert extends(built[4].messages, built[3].messages)  # and no second rewrite after it
    e = entry(built[4], "c2")
    assert e.state is EntryState.FULL and e.superseded_by == 4
    assert "stubbed at the next rewrite" in e.reason


async def test_a_window_that_must_move_leaves_half_of_itself_for_the_coming_steps() -> None:
    """At 3,000 tokens sixty distinct commands pass the window again and again: each cut leaves
    room for the coming steps (up to half the window), so the window moves every 8 requests
    (a third left room for 6)."""
    records = [rerun(n, f"pytest -k t{n}") for n in range(1, 61)]
    built = await grow(ContextEngine(frame()), records, 3_000)
    moved = [i for i in range(1, len(built)) if not extends(built[i].messages, built[i - 1].messages)]  # fmt: skip
    assert len(moved) >= 5 and all(b - a >= 8 for a, b in pairwise(moved))
    assert all(a.est_tokens <= 3_000 for a in built)


def grep(step: int, text: str, seen: tuple[Seen, ...]) -> StepRecord:
    obs = Observation(step, f"g{step}", "grep", ObsKind.GREP, "TODO", text, seen=seen)
    return StepRecord(step, "search", (ToolCall(obs.call_id, "grep", {}),), (obs,))


async def test_a_rerun_that_gives_the_carried_result_again_leaves_it_where_it_is() -> None:
    """A grep made stale by a write, run again with the same hits to the character: the earlier
    result is current again and stays carried as it was (no rewrite later to stub it); the
    rerun is left out, pointing at it. A rerun with other hits supersedes it as before."""
    hits = "a.py:1: TODO one\n"
    before, after = Seen("a.py", 10, 1, "d0"), Seen("a.py", 12, 2, "d1")
    write = Observation(2, "w2", "edit_file", ObsKind.WRITE, "a.py", "edited a.py")
    records = [
        grep(1, hits, (before,)),
        StepRecord(2, "edit", (ToolCall("w2", "edit_file", {}),), (write,)),
        grep(3, hits, (after,)),
        rerun(4),
    ]
    engine = ContextEngine(frame())
    built = await grow(engine, records, 24_000)
    assert all(extends(b.messages, a.messages) for a, b in pairwise(built[3:]))
    first, again = entry(built[-1], "g1"), entry(built[-1], "g3")
    assert first.state is EntryState.FULL and first.reason == "carried whole"
    assert again.state is EntryState.DROPPED and again.superseded_by == 1
    assert "step 1's result of the same call is the same, to the character" in again.reason
    other = grep(5, "a.py:1: TODO two\n", (Seen("a.py", 12, 3, "d2"),))
    last = await engine.build([*records, other, StepRecord(6, "")], ceiling_tokens=24_000)
    assert entry(last, "g1").superseded_by == 5 and entry(last, "g5").state is EntryState.FULL


def remember(step: int, value: str) -> StepRecord:
    args = {"key": f"k{step}", "value": value}
    obs = Observation(step, f"m{step}", "remember", ObsKind.MEMORY, f"k{step}", "Remembered.")
    return StepRecord(step, "note", (ToolCall(obs.call_id, "remember", args),), (obs,))


async def test_a_remember_result_is_a_stub_from_the_rewrite_after_it_was_shown() -> None:
    """Once a request showed a remember result, the next rewrite stubs it: its call, sent with
    it, says what was saved. Not before (the requests only append), and not when the call's
    value is too long for a compact turn to carry whole."""

    async def refresh(obs: Observation) -> str:
        return "current a.py"

    read = Observation(3, "r3", "read_file", ObsKind.READ, "a.py", "old a.py")
    write = Observation(4, "w4", "edit_file", ObsKind.WRITE, "a.py", "edited a.py")
    records = [
        remember(1, "the tests run with pytest"),
        remember(2, "x" * 200),
        StepRecord(3, "look", (ToolCall("r3", "read_file", {}),), (read,)),
        StepRecord(4, "edit", (ToolCall("w4", "edit_file", {}),), (write,)),
    ]
    built = await grow(ContextEngine(frame(), refresh=refresh), records, 24_000)
    assert all(extends(b.messages, a.messages) for a, b in pairwise(built[:4]))
    assert entry(built[3], "m1").state is EntryState.FULL
    assert not extends(built[4].messages, built[3].messages)  # step 3's read is re-read
    noted = entry(built[4], "m1")
    assert noted.state is EntryState.SUPERSEDED and "its call carries the note" in noted.reason
    sent = {m.tool_call_id: m.content for m in built[4].messages if m.tool_call_id}
    assert sent["m1"].startswith("[step 1 remember 'k1': saved as its call says; recall_result")
    assert entry(built[4], "m2").state is EntryState.FULL
