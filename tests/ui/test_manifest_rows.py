"""The inspector's reading of a manifest: every entry state has its filter, and 'carried' means
sent as content (a step folded into the summary is not; the summary is)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from io_tui.core.context.engine import ContextEngine
from io_tui.core.context.frame import Frame
from io_tui.core.context.manifest import EntryState, ManifestEntry
from io_tui.core.contract import Compaction, TaskContract
from io_tui.core.ledger import Observation, ObsKind, StepRecord
from io_tui.core.providers.messages import ToolCall
from io_tui.ui.manifest import (
    FILTERS,
    diff_requests,
    entry_text,
    keyed_entries,
    matches,
    sent_text,
)
from io_tui.ui.screens.inspector import _cells


def rows_of(request: dict[str, Any]) -> list[ManifestEntry]:
    return list(keyed_entries(request).values())


def entry(step: int, kind: str, state: str, **extra: object) -> dict[str, object]:
    return {
        "step": step,
        "kind": kind,
        "target": f"t{step}",
        "state": state,
        "reason": "r",
        **extra,
    }


REQUEST = {
    "entries": [
        entry(1, "read", "summary"),  # folded
        entry(1, "summary", "summary"),  # the summary standing in for it
        entry(2, "exec", "collapsed"),
        entry(3, "exec", "capped", kept_chars=3_800, total_chars=8_809),
        entry(4, "read", "full"),
        entry(5, "read", "superseded", superseded_by=6),
        entry(6, "exec", "dropped", superseded_by=7, chars=0, est_tokens=0),
    ]
}


def test_every_entry_state_has_its_filter() -> None:
    assert {s.value for s in EntryState} <= set(FILTERS)


def test_carried_means_sent_as_content_and_folded_steps_are_not() -> None:
    rows = rows_of(REQUEST)
    carried = [(r.step, r.kind) for r in rows if matches(r, "carried")]
    assert carried == [(1, "summary"), (3, "exec"), (4, "read")]
    stubs = [(r.step, r.kind) for r in rows if matches(r, "stubs")]
    assert stubs == [(1, "read"), (2, "exec"), (5, "read"), (6, "exec")]
    assert [r.step for r in rows if matches(r, "capped")] == [3]
    assert [r.step for r in rows if matches(r, "dropped")] == [6]


def test_a_dropped_entry_says_it_was_left_out_and_which_step_superseded_it() -> None:
    dropped, stub = rows_of(REQUEST)[6], rows_of(REQUEST)[5]
    state, *_, reason = _cells(dropped)
    assert (state.plain, reason) == ("dropped", "r → step 7")
    assert state.style != _cells(stub)[0].style  # not drawn like a stub that is sent
    assert sent_text(SENT, dropped) is None  # nothing of it was sent


def test_the_diff_tells_a_step_left_out_from_a_result_stubbed() -> None:
    before = {
        "entries": [
            entry(1, "exec", "full"),
            entry(2, "read", "full"),
            entry(3, "grep", "superseded", superseded_by=4),
            entry(5, "list", "full"),
        ]
    }
    after = {
        "entries": [
            entry(1, "exec", "dropped", superseded_by=4),
            entry(2, "read", "superseded", superseded_by=4),
            entry(3, "grep", "dropped", superseded_by=4),
            entry(4, "exec", "full"),
        ]
    }
    diff = diff_requests(before, after)
    assert [r.step for r in diff.added] == [4]
    assert [r.step for r in diff.stubbed] == [2]
    assert [r.step for r in diff.dropped] == [1, 3]  # carried or a stub before: left out now
    assert [r.step for r in diff.removed] == [5]
    assert diff_requests(after, after).dropped == []  # only what is newly left out


def test_a_capped_entry_has_its_own_label_and_style() -> None:
    capped, full = (_cells(r)[0] for r in rows_of(REQUEST)[3:5])
    assert (capped.plain, full.plain) == ("capped", "full")
    assert capped.style != full.style


SENT = {
    "messages": [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "[Summary of steps 1–2, written when they were folded]\nS"},
        {"role": "user", "content": "[Steps 3–4 collapsed: 2 older tool results]"},
        {"role": "tool", "content": "head […] tail", "tool_call_id": "c5"},
        {
            "role": "tool",
            "content": "[step 6 read_file a.py: superseded by step 7]",
            "tool_call_id": "c6",
        },
        {"role": "user", "content": "[result of step 8 grep TODO]\nx.py:1:TODO"},
    ],
    "entries": [
        entry(1, "read", "summary", call_id="c1"),
        entry(2, "summary", "summary", call_id="summary:2", target="steps 1–2"),
        entry(3, "exec", "collapsed", call_id="c3"),
        entry(4, "collapse", "collapsed", call_id="collapse", target="steps 3–4"),
        entry(5, "exec", "capped", call_id="c5"),
        entry(6, "read", "superseded", call_id="c6", superseded_by=7),
        entry(8, "grep", "full", call_id="c8", target="TODO"),
    ],
}
TRACE = {
    "steps": [
        {
            "step": n,
            "result": "",
            "observations": [
                {"call_id": f"c{n}", "kind": "exec", "target": "t", "full_text": f"whole {n}"}
            ],
        }
        for n in (1, 3, 5, 6, 8)
    ]
    + [
        {
            "step": 9,
            "observations": [
                {"call_id": "c9a", "kind": "read", "target": "a.py", "full_text": "all of a"},
                {"call_id": "c9b", "kind": "read", "target": "a.py", "full_text": "lines 1-3"},
            ],
        }
    ]
}


def test_the_text_sent_for_each_entry_is_found_in_the_request_as_sent() -> None:
    sent = {r.step: sent_text(SENT, r) for r in rows_of(SENT)}
    assert sent == {
        1: None,  # folded: the summary stands for it
        2: SENT["messages"][1]["content"],
        3: None,  # collapsed: the line stands for it
        4: SENT["messages"][2]["content"],
        5: "head […] tail",
        6: "[step 6 read_file a.py: superseded by step 7]",
        8: "[result of step 8 grep TODO]\nx.py:1:TODO",
    }


def test_the_recorded_text_is_the_entry_s_own_call_and_lines_have_none() -> None:
    rows = {r.step: r for r in rows_of(SENT)}
    assert entry_text(TRACE["steps"], rows[5]) == "whole 5"
    assert (
        entry_text(TRACE["steps"], rows[2]) is None and entry_text(TRACE["steps"], rows[4]) is None
    )
    second = rows_of({"entries": [entry(9, "read", "full", call_id="c9b", target="a.py")]})[0]
    assert (
        entry_text(TRACE["steps"], second) == "lines 1-3"
    )  # not the first read of a.py in that step


async def test_the_engine_s_summary_and_collapse_lines_are_found_as_sent() -> None:
    """The lines' openings the inspector looks for are the ones the engine writes. Each step
    runs another command: reruns of one command would supersede each other, and a step whose
    every result is superseded is left out (``dropped``), not collapsed."""
    steps = []
    for n in range(1, 80):
        o = Observation(
            n, f"c{n}", "run_command", ObsKind.EXEC, f"pytest -k t{n}", f"run {n} " + "F" * 1_200
        )
        steps.append(StepRecord(n, f"turn {n}", (ToolCall(o.call_id, o.tool, {}),), (o,)))
    kinds = set()
    for fold in (True, False):
        compaction = Compaction(enabled=fold)
        frame = Frame("system", (), TaskContract("goal", Path("/ws"), compaction=compaction))
        engine = ContextEngine(frame)
        assembly = await engine.build(steps, ceiling_tokens=2_000, force_fold=fold)
        request = {
            "messages": [m.to_json() for m in assembly.messages],
            "entries": [e.to_json() for e in assembly.entries],
        }
        lines = [r for r in rows_of(request) if r.call_id == "collapse" or r.kind == "summary"]
        for row in lines:
            sent = sent_text(request, row)
            assert sent is not None and len(sent) == row.chars
            kinds.add(row.kind)
    assert kinds == {"summary", "collapse"}
