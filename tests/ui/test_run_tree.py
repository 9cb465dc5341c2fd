"""The run tree with several runs live at once: one shows its steps, the others a line each."""

from __future__ import annotations

from textual.app import App, ComposeResult

from io_tui.ui.state import RunView, StepView
from io_tui.ui.widgets.run_tree import NodeRef, RunTree


class TreeHost(App[None]):
    def compose(self) -> ComposeResult:
        yield RunTree(id="runs")


async def test_only_the_first_live_run_opens_and_a_collapsed_run_counts_its_steps() -> None:
    app = TreeHost()
    async with app.run_test(size=(80, 20)) as pilot:
        tree = app.query_one(RunTree)
        first, second = RunView(1, "first", "/w"), RunView(2, "second", "/w")
        tree.upsert_run(first)
        tree.upsert_run(second)
        for run in (first, second):
            for step in (1, 2):
                run.steps[step] = StepView(step, 100, ["list_dir"], committed=True)
                tree.upsert_step(run, run.steps[step])
            tree.upsert_run(run)
        await pilot.pause()
        assert tree.run_nodes[1].is_expanded and not tree.run_nodes[2].is_expanded
        assert tree.step_nodes[(1, 2)].line >= 0  # displayed
        assert tree.step_nodes[(2, 1)].line == -1  # inside a collapsed run
        assert "2 steps" in str(tree.run_nodes[2].label)

        finished = RunView(3, "third", "/w", status="finished")
        tree.upsert_run(finished)
        assert not tree.run_nodes[3].is_expanded  # a finished run opens when asked to

        second.status = "finished"
        tree.upsert_run(second)
        tree.select_ref(tree.run_nodes[2].data)  # type: ignore[arg-type]
        await pilot.press("enter")
        assert tree.run_nodes[2].is_expanded


def _screen_lines(app: App[None]) -> list[str]:
    tree = app.query_one(RunTree)
    return [strip.text.rstrip() for strip in tree.render_lines(tree.region.reset_offset)]


async def test_kept_lines_are_redrawn_when_what_they_show_changes() -> None:
    """Lines are kept across node additions, so every change a line shows must still reach
    the screen: a label, the cursor, a new sibling below (the guide), and the theme."""
    app = TreeHost()
    async with app.run_test(size=(60, 10)) as pilot:
        tree = app.query_one(RunTree)
        run = RunView(1, "goal", "/w")
        tree.upsert_run(run)
        run.steps[1] = StepView(1, 0, [], committed=False)
        tree.upsert_step(run, run.steps[1])
        await pilot.pause()
        assert _screen_lines(app)[1].endswith("└ step   1 thinking…")

        run.steps[2] = StepView(2, 0, [], committed=False)
        tree.upsert_step(run, run.steps[2])  # the step above now has a sibling below it
        run.steps[1] = StepView(1, 1_500, ["read_file"], committed=True)
        tree.upsert_step(run, run.steps[1])  # and a new label
        tree.upsert_run(run)
        await pilot.pause()
        lines = _screen_lines(app)
        assert "2 steps" in lines[0]
        assert lines[1].endswith("├ step   1 read_file 1.5k tok") and "└ step   2" in lines[2]

        tree.focus()
        tree.move_cursor(tree.step_nodes[(1, 2)])
        await pilot.pause()
        cursor = tree.render_lines(tree.region.reset_offset)[2]
        assert any(seg.style and seg.style.bgcolor for seg in cursor if seg.text.strip())

        dark = tree.render_lines(tree.region.reset_offset)[0]
        app.theme = "textual-light"
        await pilot.pause()
        light = tree.render_lines(tree.region.reset_offset)[0]
        assert [s.style for s in light] != [s.style for s in dark]


async def test_left_and_right_fold_and_unfold_a_run_and_an_ended_run_folds() -> None:
    """Left folds an open run (on a step, it goes to the run first); Right unfolds it, then
    goes to its first step. A live run that ends folds to its line, unless the cursor is on
    one of its steps (issue 29)."""
    app = TreeHost()
    async with app.run_test(size=(80, 20)) as pilot:
        tree = app.query_one(RunTree)
        run = RunView(1, "goal", "/w")
        tree.upsert_run(run)
        for step in (1, 2):
            run.steps[step] = StepView(step, 100, ["list_dir"], committed=True)
            tree.upsert_step(run, run.steps[step])
        tree.focus()
        await pilot.pause()  # the tree's lines built: the cursor can move to a step
        tree.select_ref(NodeRef(1, 2))
        await pilot.pause()
        assert tree.cursor_node is tree.step_nodes[(1, 2)]
        assert tree.run_nodes[1].is_expanded
        await pilot.press("left")
        assert tree.cursor_node is tree.run_nodes[1] and tree.run_nodes[1].is_expanded
        await pilot.press("left")
        assert not tree.run_nodes[1].is_expanded
        await pilot.press("right")
        assert tree.run_nodes[1].is_expanded and tree.cursor_node is tree.run_nodes[1]
        await pilot.press("right")
        assert tree.cursor_node is tree.step_nodes[(1, 1)]

        run.status = "finished"  # the operator is on its step: it stays open
        tree.upsert_run(run)
        assert tree.run_nodes[1].is_expanded

        other = RunView(2, "other", "/w")
        tree.upsert_run(other)
        other.steps[1] = StepView(1, 100, ["list_dir"], committed=True)
        tree.upsert_step(other, other.steps[1])
        tree.run_nodes[2].expand()
        other.status = "finished"
        tree.upsert_run(other)
        assert not tree.run_nodes[2].is_expanded


def test_a_run_listed_before_its_steps_are_read_counts_the_stored_ones() -> None:
    """The store's count stands in until the steps are read: no "0 steps" meanwhile."""
    from types import SimpleNamespace

    from io_tui.ui.run_board import RunBoard
    from io_tui.ui.widgets.run_tree import run_label

    row = SimpleNamespace(
        id=4, goal="g", workspace="/w", status="finished", outcome="success",
        parent_run_id=None, tokens=900, contract={}, created_at=1.0, finished_at=2.0,
        error=None, provider={}, steps=10,
    )  # fmt: skip
    board = RunBoard()
    (view,), stale, _ = board.apply_rows([row], lambda _id: False)
    assert stale == [4] and not view.steps
    assert "10 steps" in run_label(view, {}).plain
