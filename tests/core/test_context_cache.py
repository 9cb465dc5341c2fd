"""Cache-aware assembly (DESIGN §3.2, ``core/context/plan.py``): between planned rewrites a run's
requests only append; superseded results that are still current wait for the next rewrite, and
the window moves in steps that leave room for the coming ones."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest
from engine_run import ask, grow

from io_tui.core.context.engine import ContextEngine
from io_tui.core.context.frame import Frame
from io_tui.core.context.live import AGE_MIN_TOKENS
from io_tui.core.context.manifest import EntryState
from io_tui.core.context.plan import Rewrite, extends
from io_tui.core.context.refresh import Fresh
from io_tui.core.context.stubs import apply_echo
from io_tui.core.contract import CHARS_PER_TOKEN, Compaction, TaskContract, estimate_tokens
from io_tui.core.ledger import Observation, ObsKind, Seen, StepRecord
from io_tui.core.prices import CachePrices
from io_tui.core.providers.messages import ToolCall
from io_tui.core.steering.trace import rewrite_line, rewrites_saved
from io_tui.core.text.prefix import common_prefix


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


def force_rewrite(engine: ContextEngine) -> None:
    """A part of the frame is rebuilt (an AGENTS.md edited): the next request rewrites from its
    first message, and takes every pending rewrite with it."""
    engine.reframe(replace(engine.frame, system_prompt=engine.frame.system_prompt + " (v2)"))


async def test_a_rerun_command_stays_pending_until_the_next_rewrite() -> None:
    async def refresh(obs: Observation) -> Fresh:
        return Fresh("current a.py")

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
    # a request that must rewrite anyway (its frame changed) stubs it with it
    force_rewrite(engine)
    again = await ask(engine, records, 4, 24_000)
    assert entry(again, "c2").state is EntryState.DROPPED  # its step is left out with it


async def test_a_rerun_is_sent_as_its_difference_from_the_pending_output_then_whole() -> None:
    """While the earlier output is pending (carried whole), the rerun's is sent as the lines
    that changed (``echoed``), not the same lines twice; a rerun that gives the output carried
    again, to the character, leaves that one current and is left out pointing at it (no
    rewrite to stub it later); the rewrite that stubs the pending one sends the rerun whole."""

    async def refresh(obs: Observation) -> Fresh:
        return Fresh("current a.py")

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
    force_rewrite(engine)
    again = await ask(engine, records, 5, 24_000)
    assert entry(again, "c3").state is EntryState.FULL
    assert {entry(again, c).state for c in ("c2", "c4")} == {EntryState.DROPPED}


async def test_a_write_shown_whole_later_has_its_turn_compact_from_the_next_rewrite() -> None:
    """A write_file whose path a later step read whole: what its call wrote is superseded, so
    its turn is sent compact (as an out-of-window turn) from the next rewrite on, not before
    (the requests only append until then)."""

    async def refresh(obs: Observation) -> Fresh:
        return Fresh("current b.py")

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
    # a request that must rewrite anyway (its frame changed) takes the compact turn
    force_rewrite(engine)
    again = await ask(engine, records, 5, 24_000)
    assert written(again) == "[2,400 chars, superseded: step 3 showed the whole file; in the trace]"


async def rewritten_calls(records: list[StepRecord], ids: tuple[str, ...]) -> dict[str, dict]:
    """The arguments of the calls ``ids`` in a request that rewrites (its frame changed), the
    run's requests built before it."""
    read_c = Observation(1, "r1", "read_file", ObsKind.READ, "c.py", "old c.py")
    steps = [StepRecord(1, "look", (ToolCall("r1", "read_file", {}),), (read_c,)), *records]
    engine = ContextEngine(frame(max_steps=12))
    await grow(engine, steps, 24_000)
    force_rewrite(engine)
    built = await ask(engine, steps, steps[-1].step + 1, 24_000)
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
    # under the size at which a command's output ages out (``live.AGE_MIN_TOKENS``)
    records = [rerun(1, text="F" * 1_900)] + [rerun(n, f"ls d{n}") for n in range(2, 21)]
    records.append(rerun(21, text="F" * 1_899 + "G"))  # not the same output: supersedes c1
    cheap_cache, dear_cache = CachePrices(), CachePrices(write=1.0, read=0.9)
    for prices, state in ((cheap_cache, EntryState.FULL), (dear_cache, EntryState.DROPPED)):
        built = await grow(ContextEngine(frame(prices, max_steps=200)), records, 64_000)
        assert entry(built[-1], "c1").state is state


def listing(files: int, name: str = "src/pkg/module") -> str:
    """A command's output as ``run_command`` frames it: the command, its exit status, a
    listing of ``files`` names."""
    return "$ ls -R\nexit code 0\n" + "".join(f"{name}_{i}.py\n" for i in range(files))


async def test_a_large_command_output_is_cleared_once_clearing_it_pays() -> None:
    """A listing of 2,000 tokens at step 1 ages out when step 2 has its results in;
    the steps after it add little, so stubbing it saves more over the coming requests than
    rewriting the request after it costs: one planned rewrite clears it to a stub that says
    what it was and how to read it back. Append-only before and after."""
    big = rerun(1, "ls -R", text=listing(400))
    assert len(big.observations[0].text) >= AGE_MIN_TOKENS * CHARS_PER_TOKEN * 4
    records = [big] + [rerun(n, f"ls d{n}", "ok") for n in range(2, 31)]
    built = await grow(ContextEngine(frame()), records, 64_000)
    states = [entry(a, "c1").state for a in built[1:]]  # the requests after step 1's
    cleared = states.index(EntryState.ELIDED)
    assert set(states[:cleared]) == {EntryState.FULL}
    assert set(states[cleared:]) == {EntryState.ELIDED}
    first = built[1 + cleared]
    assert 2 <= 1 + cleared < 10  # not before it aged, and soon after: it pays early
    stub = next(m.content for m in first.messages if m.tool_call_id == "c1")
    assert stub == (
        f"[step 1 run_command ls -R: its output ({estimate_tokens(big.observations[0].text):,} "
        'tokens) cleared, aged out at step 2; recall_result("c1") reads it back. Kept: exit '
        "code 0]"
    )
    assert entry(first, "c1").reason.startswith("a command's output, aged out at step 2")
    rewrite = first.rewrite
    assert rewrite is not None and rewrite.cause == "planned" and rewrite.dropped == ("c1",)
    assert rewrite.expected >= rewrite.price
    assert all(extends(b.messages, a.messages) for a, b in pairwise(built) if b is not first)


async def test_a_command_output_is_not_cleared_when_it_cannot_pay() -> None:
    """The same listing in a run allowed three steps: when it ages, the one request left
    would not read back what rewriting the request after it costs, so it stays. Never pending,
    however long the run: an output just under the size that ages, a test run's (the
    verification's evidence), and one whose command may print files' own lines (what an agent
    quotes when it edits). No rewrite is made for any."""
    size = AGE_MIN_TOKENS * CHARS_PER_TOKEN
    cases = [
        ("ls -R", listing(400), 3, 3),
        ("ls -R", "x " * (size // 2 - 1), 30, 100),
        ("pytest -q", listing(400), 30, 100),
        ("bash -c 'nl -ba src/a.py | grep -C 5 visit'", listing(400), 30, 100),
    ]
    for line, text, steps, max_steps in cases:
        records = [rerun(1, line, text=text)]
        records += [rerun(n, f"ls d{n}", listing(100, "lib")) for n in range(2, steps + 1)]
        built = await grow(ContextEngine(frame(max_steps=max_steps)), records, 64_000)
        assert {entry(a, "c1").state for a in built[1:]} == {EntryState.FULL}, line
        assert all(extends(b.messages, a.messages) for a, b in pairwise(built)), line


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
    """The request for step 3 must rewrite (its frame changed); step 3 then runs the tests
    again. That rerun came after the rewrite, so the next request keeps the earlier output
    pending instead of rewriting a second time in a row."""
    engine = ContextEngine(frame(max_steps=12))
    read = Observation(1, "r1", "read_file", ObsKind.READ, "a.py", "old a.py")
    records = [StepRecord(1, "look", (ToolCall("r1", "read_file", {}),), (read,)), rerun(2)]
    built = [await ask(engine, records[:n], n + 1, 24_000) for n in range(3)]
    force_rewrite(engine)
    rewriting = await ask(engine, records, 3, 24_000)
    assert not extends(rewriting.messages, built[-1].messages)
    after = await ask(engine, [*records, rerun(3)], 4, 24_000)
    assert extends(after.messages, rewriting.messages)  # and no second rewrite after it
    e = entry(after, "c2")
    assert e.state is EntryState.FULL and e.superseded_by == 3
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

    async def same_hits(obs: Observation) -> Fresh:  # what step 3's request finds: the same
        return Fresh(hits, (after,))

    engine = ContextEngine(frame(), refresh=same_hits)
    built = await grow(engine, records, 24_000)
    assert all(extends(b.messages, a.messages) for a, b in pairwise(built))
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

    read = Observation(3, "r3", "read_file", ObsKind.READ, "a.py", "old a.py")
    records = [
        remember(1, "the tests run with pytest"),
        remember(2, "x" * 200),
        StepRecord(3, "look", (ToolCall("r3", "read_file", {}),), (read,)),
    ]
    engine = ContextEngine(frame())
    built = await grow(engine, records, 24_000)
    assert all(extends(b.messages, a.messages) for a, b in pairwise(built))
    assert entry(built[3], "m1").state is EntryState.FULL
    force_rewrite(engine)
    built.append(await ask(engine, records, 4, 24_000))
    noted = entry(built[4], "m1")
    assert noted.state is EntryState.SUPERSEDED and "its call carries the note" in noted.reason
    sent = {m.tool_call_id: m.content for m in built[4].messages if m.tool_call_id}
    assert sent["m1"].startswith("[step 1 remember 'k1': saved as its call says; recall_result")
    assert entry(built[4], "m2").state is EntryState.FULL


# -- rewrites planned by price, and each one recorded (DESIGN §3.2) ------------------------


async def test_a_rewrite_that_does_not_pay_is_not_made_and_one_that_pays_is_recorded() -> None:
    """The same history under two price lists: with Anthropic's (write 1.25, read 0.1) the
    stub of a 1,900-char output twenty steps back does not repay rewriting twenty steps, so
    every request only appends; where caching saves little it does, and the request that
    makes it records why (``planned``), what it dropped, what it cost and what it expects."""
    # under the size at which a command's output ages out (``live.AGE_MIN_TOKENS``)
    records = [rerun(1, text="F" * 1_900)] + [rerun(n, f"ls d{n}") for n in range(2, 21)]
    records.append(rerun(21, text="F" * 1_899 + "G"))
    cheap = await grow(ContextEngine(frame(CachePrices(), max_steps=200)), records, 64_000)
    assert all(b.rewrite is None for b in cheap)
    assert all(extends(b.messages, a.messages) for a, b in pairwise(cheap))
    dear_prices = CachePrices(write=1.0, read=0.9)
    dear = await grow(ContextEngine(frame(dear_prices, max_steps=200)), records, 64_000)
    made = [b for b in dear if b.rewrite is not None]
    assert len(made) == 1
    rewrite = made[0].rewrite
    assert rewrite is not None and rewrite.cause == "planned"
    assert rewrite.dropped == ("c1",)
    assert rewrite.price == pytest.approx(rewrite.rewritten_tokens * (1.0 - 0.9))
    assert rewrite.expected == pytest.approx(rewrite.saved_tokens * 0.9 * rewrite.horizon)
    assert rewrite.expected >= rewrite.price  # it was made because it pays


async def test_a_cut_the_ceiling_forces_is_the_rewrite_and_takes_the_pending_drops() -> None:
    """Sixty commands under a small ceiling: every request that changes an earlier message
    says so, the window's cuts as ``window``; the others only append."""
    records = [rerun(n, f"pytest -k t{n}") for n in range(1, 61)]
    built = await grow(ContextEngine(frame()), records, 3_000)
    for a, b in pairwise(built):
        if b.rewrite is None:
            assert extends(b.messages, a.messages)
        else:
            assert not extends(b.messages, a.messages)
            assert b.rewrite.kept_messages == common_prefix(a.messages, b.messages)
    causes = {b.rewrite.cause for b in built if b.rewrite is not None}
    assert causes == {"window"}
    assert all(b.est_tokens <= 3_000 for b in built)


async def test_the_trace_says_what_a_rewrite_saved_once_requests_came_after_it() -> None:
    rewrite = Rewrite("planned", 5, 1_000, 900.0, 400, 10, 400.0, 0.1, ("c1",))
    requests = [
        {"purpose": "work", "rewrite": None},
        {"purpose": "work", "rewrite": rewrite.to_json()},
        {"purpose": "work", "rewrite": None},
        {"purpose": "summary", "rewrite": None},
        {"purpose": "work", "rewrite": None},
    ]
    rewrites_saved(requests)
    saved = requests[1]["rewrite"]
    assert (saved["requests_after"], saved["saved"]) == (2, 80.0)  # 400 tokens × 0.1 × 2
    line = rewrite_line(saved)
    assert line.startswith("rewrote the prefix (planned: what it drops repays the rewrite)")
    assert "expected to save 400 over 10 requests, saved 80 over 2 requests" in line
