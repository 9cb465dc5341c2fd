"""The run tree with several runs live at once: one shows its steps, the others a line each."""

from __future__ import annotations

from textual.app import App, ComposeResult

from io_tui.ui.state import RunView, StepView
from io_tui.ui.widgets.run_tree import RunTree


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
