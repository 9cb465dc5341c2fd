"""The diff opens at its first change, and side by side falls back to unified when narrow."""

from __future__ import annotations

from textual.app import App, ComposeResult

from io_tui.ui.widgets.diff_view import DiffView, first_change, side_by_side, unified

OLD = "".join(f"line {n}\n" for n in range(1, 41))
NEW = OLD.replace("line 30\n", "line 30 now reads as a much longer line of code than before\n")


def test_first_change_is_the_first_added_or_removed_line() -> None:
    diff = unified(OLD, NEW, "a.py")
    lines = diff.plain.split("\n")
    assert lines[first_change(diff)] == "-line 30"  # not the ---/+++ header, not context
    left, right = side_by_side(OLD, NEW)
    assert left.plain.split("\n")[first_change(left)].endswith("line 30")
    assert first_change(right) == first_change(left)


def _screen(app: App[None]) -> str:
    """What the terminal shows, as text."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


class OneDiff(App[None]):
    CSS = "DiffView { height: 6; }"

    def __init__(self, split: bool) -> None:
        super().__init__()
        self.diff = DiffView(OLD, NEW, "a.py")
        self.diff.split = split

    def compose(self) -> ComposeResult:
        yield self.diff


async def test_the_diff_opens_at_its_first_change() -> None:
    app = OneDiff(split=False)
    async with app.run_test(size=(80, 10)) as pilot:
        await pilot.pause()
        shown = _screen(app)
        assert "-line 30" in shown and "+line 30 now reads" in shown


async def test_side_by_side_needs_the_width_of_its_changed_line() -> None:
    app = OneDiff(split=True)
    async with app.run_test(size=(80, 10)) as pilot:
        await pilot.pause()
        view = app.diff
        assert view.split and not view.shows_split  # asked for, too narrow: unified
        shown = _screen(app)
        assert "needs a wider window" in shown and "+line 30 now reads as a much longer" in shown
        await pilot.resize_terminal(160, 10)
        await pilot.pause()
        assert view.shows_split
        view.scroll_to_first_change()
        await pilot.pause()
        shown = _screen(app)
        assert "line 30 now reads as a much longer line of code than before" in shown
