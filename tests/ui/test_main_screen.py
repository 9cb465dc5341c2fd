"""The main screen driven by Pilot against the real demo: run tree, transcript, gauges, prompt."""

from __future__ import annotations

import dataclasses

from textual.message import Message
from textual.widgets import Input
from waits import until

from io_tui.core import build_trace, request_notes
from io_tui.core.events import EventKind
from io_tui.core.store import Store
from io_tui.demo import DEMO_CONTEXT
from io_tui.ui.messages import RunEventsReceived
from io_tui.ui.run_board import Changes
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.testing import wait_until_idle
from io_tui.ui.widgets.gauges import ContextBar, Gauge
from io_tui.ui.widgets.run_tree import RunTree
from io_tui.ui.widgets.transcript import Transcript

from .conftest import SIZE


async def test_demo_fills_tree_transcript_and_gauges(make_app, store_on_both) -> None:
    """The demo on a SQLite file and on PostgreSQL: the same tree, transcript and gauges."""
    messages: list[Message] = []
    app = make_app(store=store_on_both)
    async with app.run_test(size=SIZE, message_hook=messages.append) as pilot:
        await wait_until_idle(pilot)
        run = app.runs[1]
        assert run.status == "finished" and run.outcome == "success"
        tree = app.screen.query_one(RunTree)
        assert set(tree.run_nodes) == {1}
        assert {step for (_, step) in tree.step_nodes} == set(range(1, 11))
        label = str(tree.run_nodes[1].label)
        assert label.startswith("✓ #1 verified ")  # its verification passed: success
        kinds = {e.kind for m in messages if isinstance(m, RunEventsReceived) for e in m.events}
        assert {EventKind.RUN_STARTED, EventKind.TEXT_DELTA, EventKind.RUN_FINISHED} <= kinds
        transcript = app.screen.query_one(Transcript)
        assert sorted(transcript.steps) == list(range(1, 11))
        assert transcript.steps[6].data.tools[0].name == "edit_file"
        assert "decision on request 1: approve" in transcript.text_of(6)
        run_gauge = app.screen.query_one("#gauge-run", Gauge)
        assert run_gauge.value == run.tokens
        request_gauge = app.screen.query_one("#gauge-request", Gauge)
        assert request_gauge.maximum == DEMO_CONTEXT.max_tokens
        # the gauge holds what the ceiling bounds: the whole estimate less the fixed frame
        assert 0 < request_gauge.value <= DEMO_CONTEXT.max_tokens * 1.05
        counted = app.screen.query_one("#gauge-drift", Gauge)  # plain words, no "drift"
        assert counted.value == run.reported_tokens
        assert counted.describe() == f"{run.reported_tokens:,} tok by the provider"
        est, reported = run.est_tokens, run.reported_tokens
        assert est and reported and est != reported  # the scripted count is the o200k one
        direction = "low" if reported > est else "high"
        assert counted.note == f"estimated {est:,}, {abs(reported - est) / est:.0%} {direction}"
        cache = app.screen.query_one("#gauge-cache", Gauge)
        # the scripted provider reports no cache figures; the run's cost is priced all the same
        said = cache.describe()
        assert said.startswith("no cache figures from the provider · this run: ")
        assert said.endswith("× re-sending everything")
        screen = app.screen
        assert isinstance(screen, MainScreen) and screen._figures is not None
        reported = {"prompt_tokens": 4000, "cache_read_tokens": 3000, "cache_reported": True}
        screen._figures = dataclasses.replace(screen._figures, usage=reported)
        screen._refresh_gauges()  # as a provider that caches reports it
        assert cache.describe().startswith("75% of 4,000 prompt tok read from cache · this run: ")
        # the window of the last request, by part, from its stored manifest sections
        breakdown = app.screen.query_one(ContextBar).breakdown
        assert breakdown is not None and breakdown.step == 10
        parts = dict(breakdown.parts)
        assert list(parts) == ["system", "tools", "instructions", "memory", "history", "free"]
        assert parts["tools"] > parts["system"] > 0 and parts["instructions"] > 0
        # the note the demo remembers is in its remember result until a rewrite renders the
        # block again, and the demo's requests never rewrite (they only append)
        assert parts["memory"] == 0 and parts["history"] > 0
        assert parts["memory"] + parts["history"] + parts["free"] == DEMO_CONTEXT.max_tokens
        assert app.events_applied > 50


async def test_selecting_a_step_scrolls_transcript_and_updates_request_gauge(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen.select_run(1, 3)
        await wait_until_idle(pilot)
        assert (screen.selected_run, screen.selected_step) == (1, 3)
        assert "step 3" in screen.query_one("#gauge-request", Gauge).note


async def test_keys_move_through_the_tree(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        screen = app.screen
        assert isinstance(screen, MainScreen)
        await pilot.press("down", "down")
        await pilot.pause(0.2)
        assert screen.selected_step == 2


async def test_expand_key_opens_every_tool_block(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        transcript = app.screen.query_one(Transcript)
        await pilot.press("e")
        steps = transcript.steps.values()
        assert steps and not any(s.collapsed for s in steps if s.has_tools)
        assert "▼ " in transcript.text_of(9) and "▶ " not in transcript.text_of(9)
        await pilot.press("e")
        assert all(s.collapsed for s in transcript.steps.values())
        assert "▶ " in transcript.text_of(9) and "▼ " not in transcript.text_of(9)


async def test_follow_up_prompt_starts_a_seeded_run(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        main = app.screen
        assert isinstance(main, MainScreen)
        # a follow-up needs run 1 finished on screen (to a live run, the prompt steers it)
        finished = lambda: getattr(main.runs.get(1), "status", None) == "finished"  # noqa: E731
        await until(finished, "run 1 finished on screen", 60)
        await pilot.press("m")
        prompt = app.screen.query_one("#prompt", Input)
        assert prompt.has_focus
        await pilot.press(*"now add a docstring")
        await pilot.press("enter")
        await until(lambda: main.runs.get(2) is not None, "run 2 on screen", 60)
        await wait_until_idle(pilot)
        row = await app.store.runs.get(2)
        assert row is not None and row.seed_run_id == 1
        assert row.goal == "now add a docstring"
        constraints = " ".join(row.contract.get("constraints", []))
        assert "continues run 1" in constraints and "Fixed word_count" in constraints
        tree = app.screen.query_one(RunTree)
        assert 2 in tree.run_nodes
        # linked to the run it follows, in the tree and the transcript's header; the demo's
        # script has nothing left, and its empty last step says so
        await until(lambda: main.runs[2].status == "finished", "run 2 finished", 60)
        await wait_until_idle(pilot)
        assert "follows #1 · 1 step" in str(tree.run_nodes[2].label)
        main.select_run(2, None)
        transcript = main.query_one(Transcript)
        await until(lambda: transcript.run_id == 2 and 1 in transcript.steps, "run 2 shown", 60)
        await wait_until_idle(pilot)
        assert "finished · follows run 1" in transcript.header_text
        assert "nothing to do: the model made no call and wrote no answer" in (
            transcript.text_of(1)
        )


async def test_message_to_a_live_run_is_delivered_and_interrupt_cancels(make_app, tmp_path) -> None:
    """Steering: an operator message reaches the run at its next step; x cancels the run."""
    from io_tui.core.authority.approvals import DeferAll

    app = make_app(approver=DeferAll())  # the ask is deferred → the demo pauses
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        run = app.runs[1]
        assert run.status == "paused"
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen.select_run(1)
        await pilot.press("m")  # focuses the prompt (deferred): type once it has
        await until(lambda: screen.prompt.has_focus, "the prompt focused")
        await pilot.press(*"keep the API", "enter")
        await wait_until_idle(pilot)
        pending = await app.store.db.fetchall(
            "SELECT text, delivered_step FROM operator_messages WHERE run_id = 1"
        )
        assert [(r["text"], r["delivered_step"]) for r in pending] == [("keep the API", None)]


async def test_interrupt_cancels_a_live_run(make_app) -> None:
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        import asyncio

        from io_tui.core.authority.policy import Policy
        from io_tui.core.contract import TaskContract
        from io_tui.ui.hosts import InlineHost
        from io_tui.ui.testing import prepare_demo_workspace

        from .slow_provider import SlowProvider

        workspace = prepare_demo_workspace(app.store_path.parent / "ws")
        host = app.host
        assert isinstance(host, InlineHost)
        host.run(TaskContract(goal="slow", workspace=workspace), SlowProvider(), Policy())
        await until(
            lambda: 1 in app.runs and app.runs[1].status == "running" and host.is_live(1),
            "the run under way",
            30,
        )
        screen = app.screen
        assert isinstance(screen, MainScreen)
        await until(lambda: screen.ready, "the panes mounted")  # a loaded machine mounts late
        screen.select_run(1)
        # the request in flight: the budgets pane says it was sent (nothing is recorded yet)
        bar = screen.query_one(ContextBar)
        await until(lambda: "step 1's request sent" in str(bar.render()), "the request sent")
        assert "the answer is streaming" in str(bar.render())
        await pilot.press("x")
        await wait_until_idle(pilot)
        await asyncio.sleep(0)
        row = await app.store.runs.get(1)
        assert row is not None and row.status == "cancelled" and row.outcome == "cancelled"
        assert app.runs[1].status == "cancelled"
        # what had streamed is kept, marked interrupted: in the tree, the transcript, the trace
        tree = screen.query_one(RunTree)
        await until(lambda: "interrupted" in str(tree.step_nodes[(1, 1)].label), "the step")
        assert str(tree.run_nodes[1].label).startswith("■ #1 cancelled 1 step ")
        transcript = screen.query_one(Transcript)
        await until(lambda: 1 in transcript.steps, "step 1 in the transcript")
        shown = transcript.text_of(1)
        assert "thinking" in shown
        assert "■ interrupted: the run was cancelled while this answer streamed" in shown
        trace = await build_trace(app.store, 1)
        (step,) = trace["steps"]
        assert step["text"] == "thinking" and step["decision"] == {"interrupted": True}
        (request,) = trace["requests"]
        assert request["partial"]["text"] == "thinking"
        assert request["error"] == "interrupted: the run was cancelled while the answer streamed"
        assert "request 1 interrupted" in "\n".join(request_notes([request]))
        progress = trace["progress"]
        assert not progress["failures"]  # an operator's cancel is not a failure to fix
        assert list(progress["remaining"]) == [
            "the objective is not met: run 1 was cancelled by the operator"
        ]


async def test_a_tool_line_unfolds_on_click_and_a_step_on_enter(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        transcript = app.screen.query_one(Transcript)
        transcript.scroll_to_step(9)  # grep, one tool call
        await pilot.pause()
        rows = transcript.text_of(9).splitlines()
        tool_row = next(i for i, row in enumerate(rows) if "▶ → grep" in row)
        # the transcript's border and padding come before its first line and column
        at = (1 + 1 + 4, 1 + transcript.lines_of(9).start - transcript.scroll_y + tool_row)
        await pilot.click(transcript, offset=at)
        assert transcript.steps[9].expanded == {0}
        assert "word_count" in transcript.text_of(9).split("▼ → grep", 1)[1]  # the grep hits
        await pilot.click(transcript, offset=at)
        assert transcript.steps[9].collapsed
        transcript.focus()
        await pilot.press("enter")
        assert transcript.steps[9].expanded == {0}


async def test_expanding_every_tool_keeps_the_step_at_the_top_in_view(make_app) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        transcript = app.screen.query_one(Transcript)
        transcript.scroll_to_step(5)
        await pilot.pause()
        app.screen.query_one(RunTree).focus()
        await pilot.press("e")
        await pilot.pause(0.2)
        assert transcript.scroll_y in transcript.lines_of(5)
        assert not transcript.steps[5].collapsed


async def test_a_live_run_repaints_the_gauges_at_most_ten_times_a_second(
    make_app, monkeypatch
) -> None:
    """Every batch of a live run changes its figures; the gauges take the latest at ~10 Hz
    (the interval is stretched here so that a slow machine cannot blur the two cases)."""
    import io_tui.ui.screens.main as main_screen

    monkeypatch.setattr(main_screen, "GAUGE_INTERVAL", 3.0)  # a loaded machine once took > 1 s
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        from io_tui.ui.state import RunView

        await pilot.pause()  # the panes mount after the first frame
        screen = app.screen
        assert isinstance(screen, MainScreen) and screen.ready
        run = app.runs[1] = RunView(1, "goal", "/w")
        screen.upsert_run(run)
        # selected, the run's figures are read from the store and shown when read: that read
        # repaints the gauges on its own, so it is done before the throttle is watched
        await wait_until_idle(pilot)
        gauge = screen.query_one("#gauge-run", Gauge)
        for tokens in range(100, 2_100, 100):  # twenty batches in one loop turn
            run.tokens = tokens
            screen.apply_changes(Changes(runs={1}))
        await pilot.pause()
        assert gauge.value == 2_000  # one repaint, with the latest figure
        run.tokens = 2_500
        screen.apply_changes(Changes(runs={1}))
        await pilot.pause()
        assert gauge.value == 2_000  # within the interval of the last repaint: waits for the tick
        await pilot.pause(3.2)
        assert gauge.value == 2_500


async def test_quitting_while_a_run_asks_pauses_it_durably_in_the_app_loop(make_app) -> None:
    """As with the worker process: the ask is deferred and the run pauses (its request waits
    in the inbox), rather than ending cancelled."""
    from io_tui.ui.screens.approval import ApprovalScreen

    app = make_app(approve=False)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(200):
            if isinstance(app.screen, ApprovalScreen):
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, ApprovalScreen)
        await app.action_quit()
    async with await Store.open(app.store_path) as store:
        row = await store.runs.get(1)
        assert row is not None and (row.status, row.outcome) == ("paused", "awaiting_approval")
        assert [r.request.run_id for r in await store.approvals.pending()] == [1]


async def test_events_that_arrive_while_the_app_shuts_down_touch_no_widget(make_app) -> None:
    """The host can hand over a batch at any moment, also while quitting removes the screens'
    widgets (CI once saw ``NoMatches: '#runs'`` there): the batch is folded into the run views,
    and no screen is offered to paint it."""
    from textual.widget import Widget

    from io_tui.core.events import RunEvent

    seen: list[object] = []

    class LateBatch(Widget):
        def on_unmount(self) -> None:
            event = RunEvent(run_id=1, step=99, kind=EventKind.TEXT_DELTA, detail={"text": "late"})
            seen.append(self.app.main_screen())
            self.app.on_run_events_received(RunEventsReceived((event,)))  # type: ignore[attr-defined]
            seen.append(self.app.events_applied)  # type: ignore[attr-defined]

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        applied = app.events_applied
        assert app.main_screen() is app.screen  # while running, the main screen takes batches
        await app.screen.mount(LateBatch())
    assert seen == [None, applied + 1]


async def test_the_footer_is_out_of_sight_while_a_modal_covers_the_screen(make_app) -> None:
    """Under an approval the main screen's footer listed keys that did nothing (i, t, x): it is
    hidden while the modal is up, and back, with the keys that apply, once it is answered."""
    from io_tui.ui.screens.approval import ApprovalScreen
    from io_tui.ui.widgets.footer import ScreenFooter

    app = make_app(approve=False)
    async with app.run_test(size=SIZE) as pilot:
        await until(lambda: isinstance(app.screen, ApprovalScreen), "the demo's ask", 30)
        main = app.main_screen()
        assert main is not None
        footer = main.query_one(ScreenFooter)
        # the footer hears of the new screen through the app's signal, a message after it
        await until(lambda: not footer.display, "the footer out of sight")
        await until(lambda: app.screen.armed, "the modal armed")  # type: ignore[attr-defined]
        await pilot.press("escape")  # defer
        await until(lambda: app.screen is main, "the main screen again")
        assert footer.display


async def test_the_footer_is_rebuilt_only_when_its_keys_change(make_app) -> None:
    """Textual's footer rebuilt its ~15 keys on every focus move and selection (each key
    restyled three times as it mounted): this one only when the keys it lists change, and a
    change made while a modal covers it once the modal is gone."""
    from io_tui.ui.screens.help import HelpScreen
    from io_tui.ui.widgets.footer import ScreenFooter

    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until_idle(pilot)
        main = app.main_screen()
        assert main is not None
        footer = main.query_one(ScreenFooter)
        listed = [str(key.description) for key in footer.children]
        built = 0
        compose = footer.compose

        def counted():  # type: ignore[no-untyped-def]
            nonlocal built
            built += 1
            return compose()

        footer.compose = counted  # type: ignore[method-assign]
        main.select_run(1, 3)
        await pilot.press("down", "down")  # another step: the same keys
        main.refresh_bindings()
        await pilot.pause(0.3)
        assert built == 0
        await pilot.press("f1")
        await until(lambda: isinstance(app.screen, HelpScreen), "the help")
        main.query_one("#prompt", Input).focus()  # the keys change under the modal
        await pilot.pause(0.3)
        assert built == 0 and not footer.display
        await pilot.press("escape")
        await until(lambda: app.screen is main and built == 1, "rebuilt once in sight")
        await pilot.pause(0.3)
        assert (
            built == 1
            and footer.display
            and [str(key.description) for key in footer.children] != listed
        )
