"""The inspector's reading of a manifest: every entry state has its filter, and 'carried' means
sent as content (a step folded into the summary is not; the summary is)."""

from __future__ import annotations

from io_tui.core.context import EntryState
from io_tui.ui.manifest import FILTERS, entry_rows, matches
from io_tui.ui.screens.inspector import _cells


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
    ]
}


def test_every_entry_state_has_its_filter() -> None:
    assert {s.value for s in EntryState} <= set(FILTERS)


def test_carried_means_sent_as_content_and_folded_steps_are_not() -> None:
    rows = entry_rows(REQUEST)
    carried = [(r.step, r.kind) for r in rows if matches(r, "carried")]
    assert carried == [(1, "summary"), (3, "exec"), (4, "read")]
    stubs = [(r.step, r.kind) for r in rows if matches(r, "stubs")]
    assert stubs == [(1, "read"), (2, "exec"), (5, "read")]
    assert [r.step for r in rows if matches(r, "capped")] == [3]


def test_a_capped_entry_has_its_own_label_and_style() -> None:
    capped, full = (_cells(r)[0] for r in entry_rows(REQUEST)[3:5])
    assert (capped.plain, full.plain) == ("capped", "full")
    assert capped.style != full.style
