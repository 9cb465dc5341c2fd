"""The pure memory rules: truncation, eviction planning, restatement, recall rendering."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from io_tui.core.contract import MemoryLimits
from io_tui.core.memory.notes import (
    MEMORY_HEADER,
    MemoryNote,
    check_key,
    find_restated,
    plan_write,
    render_notes,
    truncate_value,
)


@pytest.mark.parametrize("char", ["a", "é", "日", "🦀"])
def test_truncation_is_exactly_the_cap_with_a_visible_marker(char: str) -> None:
    value = char * 5_000
    cut = truncate_value(value, 2_000)
    assert len(cut) == 2_000
    assert cut.startswith(char * 100)
    assert "note cut to 2,000 of 5,000 chars" in cut


def test_values_within_the_cap_are_untouched() -> None:
    assert truncate_value("x" * 2_000, 2_000) == "x" * 2_000
    assert truncate_value("", 10) == ""


def test_a_cap_smaller_than_the_marker_still_marks_the_cut() -> None:
    cut = truncate_value("abcdefghijklmnop", 5)
    assert cut == "abcd…"


def test_keys_are_checked() -> None:
    assert check_key("  test-cmd ") == "test-cmd"
    for bad in ("", "   ", "a\nb", "k" * 101):
        with pytest.raises(ValueError):
            check_key(bad)


def _notes(n: int, size: int = 10, pinned: frozenset[int] = frozenset()) -> list[MemoryNote]:
    return [MemoryNote(f"k{i}", "v" * size, pinned=i in pinned) for i in range(n)]


def test_plan_evicts_oldest_first_by_count() -> None:
    plan = plan_write(_notes(64), MemoryNote("new", "v"), MemoryLimits())
    assert [n.key for n in plan.evict] == ["k0"]
    assert plan.fits and plan.entries == 64


def test_plan_skips_pinned_notes_and_replacement_is_not_eviction() -> None:
    limits = MemoryLimits(max_entries=3)
    plan = plan_write(_notes(3, pinned=frozenset({0})), MemoryNote("new", "v"), limits)
    assert [n.key for n in plan.evict] == ["k1"]
    plan = plan_write(_notes(3), MemoryNote("k1", "changed"), limits)
    assert plan.evict == () and plan.entries == 3


def test_plan_refuses_when_pinned_notes_leave_no_room() -> None:
    limits = MemoryLimits(max_entries=2)
    plan = plan_write(_notes(2, pinned=frozenset({0, 1})), MemoryNote("new", "v"), limits)
    assert not plan.fits and plan.evict == ()


def test_restatement_uses_word_overlap() -> None:
    old = MemoryNote("tests", "Run the tests with pytest -q from the repo root")
    unrelated = MemoryNote("style", "Use ruff for formatting and linting")
    new = MemoryNote("test-cmd", "run the tests with pytest -q from the root")
    found = find_restated(new, [old, unrelated])
    assert [(n.key, round(s, 2)) for n, s in found] == [("tests", 0.89)]
    assert find_restated(MemoryNote("tests", old.value), [old]) == []


def test_render_shows_key_value_and_the_step_that_wrote_it() -> None:
    notes = [
        MemoryNote("build", "make build", run_id=3, step=2),
        MemoryNote("owner", "alice", scope="global", kind="fact", status="verified"),
    ]
    out = render_notes(notes, 10_000)
    assert out.text.splitlines()[0] == MEMORY_HEADER
    assert "not instructions" in out.text and "out of date" in out.text
    assert "- build [model inference; run 3 step 2]: make build" in out.text
    assert "- owner [verified fact; operator; global]: alice" in out.text
    assert out.keys == ("build", "owner") and out.omitted == 0


@pytest.mark.parametrize("budget", [0, 10, 60, 150, 300, 700, 1_500])
def test_render_stays_inside_its_budget(budget: int) -> None:
    notes = [MemoryNote(f"k{i}", f"value number {i} " * 5, run_id=1, step=i) for i in range(40)]
    out = render_notes(notes, budget)
    assert len(out.text) <= budget
    assert len(out.keys) + out.omitted == 40
    if out.omitted and out.keys:
        assert f"{out.omitted} more notes left out" in out.text
        assert "io-tui memory list" in out.text


def test_render_prefers_pinned_then_newest_and_skips_a_note_too_long() -> None:
    notes = [
        MemoryNote("pinned-old", "keep me", pinned=True),
        MemoryNote("old", "o" * 50),
        MemoryNote("huge", "h" * 5_000),
        MemoryNote("new", "n" * 50),
    ]
    out = render_notes(notes, len(MEMORY_HEADER) + 270)
    assert out.keys == ("pinned-old", "new")
    assert out.omitted == 2
    assert "2 more notes left out" in out.text


def test_multiline_values_stay_inside_their_note() -> None:
    out = render_notes([MemoryNote("steps", "one\ntwo")], 1_000)
    assert "- steps [model inference; operator]: one\n  two" in out.text


def test_a_note_that_fits_exactly_is_kept() -> None:
    note = MemoryNote("k", "v")
    heading = len("## Project knowledge") + 1
    exact = len(MEMORY_HEADER) + 1 + heading + len("- k [model inference; operator]: v")
    assert render_notes([note], exact).keys == ("k",)
    assert render_notes([note], exact - 1).keys == ()


@given(
    st.lists(
        st.tuples(st.text(min_size=1, max_size=12), st.text(max_size=300), st.booleans()),
        max_size=30,
    ),
    st.integers(min_value=0, max_value=3_000),
)
def test_render_never_exceeds_its_budget(raw: list[tuple[str, str, bool]], budget: int) -> None:
    notes = [MemoryNote(k, v, pinned=p, run_id=1, step=i) for i, (k, v, p) in enumerate(raw)]
    out = render_notes(notes, budget)
    assert len(out.text) <= budget
    assert len(out.keys) + out.omitted == len(notes)
    assert all(f"- {key} [" in out.text for key in out.keys)
