""" "Why did it forget X?": an entry's lifecycle and the compaction ledger, read off the stored
manifests of real scripted runs (a real store, the real tools and context engine)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Any

from io_tui.core import (
    ApproveAll,
    ContextBudget,
    Harness,
    Policy,
    ScriptedProvider,
    Store,
    TaskContract,
    build_trace,
    lifecycles,
    start_run,
)
from io_tui.core.steering.lifecycle import Lifecycle, Phase, Recalled


def read(path: str, offset: int, limit: int) -> dict[str, Any]:
    args = {"path": path, "offset": offset, "limit": limit}
    return {"tool_calls": [{"name": "read_file", "arguments": args}]}


# prints a file, as ``cat`` would, in words that do not say so: its output ages out
# (``checks.shows_file_lines``)
PRINT = [sys.executable, "-c", "print(open('big.txt').read())"]


def session(workspace: Path, later_reads: int, lines: int) -> list[dict[str, Any]]:
    """A command whose output is too big for one entry, one file read twice (the second read
    is covered by the first), then ``later_reads`` reads of ``lines`` lines that push the old
    ones out of the window."""
    for i in range(12):
        body = "".join(f"def f{i}_{j}(x):\n    return x + {j}\n" for j in range(120))
        (workspace / f"m{i}.py").write_text(body)
    (workspace / "big.txt").write_text(
        "\n".join(f"row {n} " + "lorem ipsum " * 8 for n in range(900))
    )
    cat = {"tool_calls": [{"name": "run_command", "arguments": {"argv": PRINT}}]}
    turns = [cat, read("m0.py", 1, 100), read("m0.py", 1, 100)]
    turns += [read(f"m{i % 12}.py", 101 + 10 * (i // 12), lines) for i in range(1, later_reads)]
    return turns


async def run(
    store: Store, workspace: Path, write_script, turns: list[dict[str, Any]], ceiling: int
) -> dict[str, Any]:
    script = write_script([*turns, {"text": "done"}])
    harness = Harness(
        store=store,
        provider=ScriptedProvider.from_file(script),
        approver=ApproveAll(),
        policy=Policy(),
    )
    contract = TaskContract("look around", workspace, max_steps=100, context=ContextBudget(ceiling))
    await start_run(harness, contract)
    return await build_trace(store, 1)


async def test_an_entry_is_followed_from_capped_to_collapsed_and_recalled_by_handle(
    store: Store, workspace: Path, write_script
) -> None:
    turns = session(workspace, 30, 60)
    for handle in ("call_1_1", "r1.s1.call_1_1"):  # the call id, and the ledger's handle
        args = {"handle": handle, "offset": 100}
        turns.append({"tool_calls": [{"name": "recall_result", "arguments": args}]})
    trace = await run(store, workspace, write_script, turns, 8_000)
    requests = [r for r in trace["requests"] if r["purpose"] == "work"]

    (cat,) = lifecycles(trace, "call_1_1").matches
    assert cat.matched == "call id" and cat.kind == "exec" and cat.target == shlex.join(PRINT)
    # its output aged out at step 2 (sent on until a rewrite cleared it), then the window
    # collapsed its step
    assert [p.state for p in cat.phases] == ["capped", "capped", "elided", "collapsed"]
    capped, aged, cleared = cat.phases[:3]
    assert aged.label() == f"{capped.label()}, aged out at step 2: cleared at the next rewrite"
    assert cleared.label() == "cleared (aged out at step 2)"
    assert capped.first == 2 and capped.kept_chars is not None and capped.total_chars is not None
    assert capped.kept_chars < capped.total_chars
    # every request after its step is one phase's, in order, with no gap
    assert sum(p.requests for p in cat.phases) == sum(1 for r in requests if r["step"] > 1)
    assert all(a.last < b.first for a, b in zip(cat.phases, cat.phases[1:], strict=False))
    last = len(turns)
    assert [(r.step, r.offset) for r in cat.recalls] == [(last - 1, 100), (last, 100)]
    assert cat.story() == (
        f"{capped.label()} → {aged.label()} → {cleared.label()} → collapsed → recalled by "
        f"handle at step {last - 1}"
        f" → recalled by handle at step {last}"
    )

    again = lifecycles(trace, "call_3_1").matches[0]
    # the same lines as step 2's read, to the character: its step is left out, pointing at it
    assert again.phases[0].label() == "dropped (superseded by step 2)"
    assert again.now == "collapsed"


async def test_the_ledger_says_what_each_summary_replaced_and_text_finds_the_entry(
    store: Store, workspace: Path, write_script
) -> None:
    trace = await run(store, workspace, write_script, session(workspace, 80, 10), 8_000)
    report = lifecycles(trace, "row 899")  # in the command's output only
    (cat,) = report.matches
    assert cat.call_id == "call_1_1" and cat.matched == "result"
    first, second = report.ledger[:2]
    assert first.rewrote is None and second.rewrote == first.through
    assert first.first == 1 and first.written_at > first.through
    # the first summary replaced the oldest steps' results; the second the ones after them
    assert [s for s, *_ in first.replaced] == list(range(1, first.through + 1))
    assert all(first.through < s <= second.through for s, *_ in second.replaced)
    assert first.text and first.source in ("provider", "digest")
    assert first.replaced_text(limit=2) == (
        f"step 1 exec {shlex.join(PRINT)}, step 2 read m0.py and {len(first.replaced) - 2} more"
    )
    states = [p.label() for p in cat.phases]
    assert states[-2:] == [
        f"folded into summary {first.through}",
        f"folded into summary {second.through}",
    ]
    # the folded entry's phase starts at the request that first carried the summary
    assert cat.phases[-2].first == first.written_at

    by_target = lifecycles(trace, "M0.PY")  # case does not matter; targets before text
    assert [m.call_id for m in by_target.matches][:2] == ["call_2_1", "call_3_1"]
    assert {m.matched for m in by_target.matches} == {"target"}
    assert lifecycles(trace, "no such thing anywhere").matches == ()
    assert report.to_json()["compaction_ledger"][1]["rewrote"] == first.through


def test_the_story_is_in_the_order_things_happened() -> None:
    """A recall sits where it was made; phases that differ only in their reason read as one."""
    phases = (
        Phase("full", 2, 5, 4),
        Phase("elided", 6, 9, 4, "older than this request's window"),
        Phase("elided", 10, 12, 3, "older than this request's window (and stale: edited)"),
        Phase("summary", 13, 20, 8, summary=11),
    )
    recalls = (Recalled(7, "call_7_1"), Recalled(21, "call_21_1"))
    entry = Lifecycle("call_1_1", 1, "read_file", "read", "a.py", phases, recalls)
    assert entry.story() == (
        "full → elided → recalled by handle at step 7 → elided → folded into summary 11"
        " → recalled by handle at step 21"
    )
    assert entry.now == "folded into summary 11"
    never = Lifecycle("call_9_1", 9, "read_file", "read", "a.py", ())
    assert never.story() == "never sent: no request came after it" and never.now == "never sent"
