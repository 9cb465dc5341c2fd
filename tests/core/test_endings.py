"""Each outcome's one mark and wording (``core.endings``), as the tree, the trace, the progress
ledger and ACP show it (issue 29 item 8)."""

from __future__ import annotations

from io_tui.core.run.outcome import Outcome
from io_tui.core.text.endings import ENDINGS, ended_line, ending_of


def test_every_outcome_has_its_own_mark_and_word() -> None:
    assert set(ENDINGS) == {o.value for o in Outcome}
    marks = [e.mark for e in ENDINGS.values()]
    assert len(set(marks)) == len(marks)
    assert [o for o, e in ENDINGS.items() if e.met] == ["success"]  # only a passed check


def test_a_cut_answer_and_a_cancel_say_what_they_are() -> None:
    assert ending_of("finished_truncated").mark == "✂"  # type: ignore[union-attr]
    assert ended_line("cancelled", "cancelled", "cancelled by the operator") == (
        "■ was cancelled by the operator"
    )
    assert ended_line("cancelled", "cancelled") == "■ was cancelled"
    assert ended_line("running", None) == "running" and ending_of("nonsense") is None
