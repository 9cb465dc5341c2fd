"""Live runs you can read, through the app (inline host, gated providers): elapsed time,
provider and model, text as it streams, queued operator messages until delivered (or handed
back when the run ends first), "cancelled by the operator" after x, new and asking runs taking
the selection unless the operator is busy, and a timer on an ask."""

from __future__ import annotations

import asyncio
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input
from waits import until_app

from io_tui.core.authority.approvals import ApprovalRequest, Decision
from io_tui.core.authority.policy import Policy
from io_tui.core.contract import TaskContract
from io_tui.core.events import OPERATOR_CANCEL
from io_tui.ui.app import IoApp
from io_tui.ui.hosts import InlineHost
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.testing import freeze, prepare_demo_workspace, wait_until_idle
from io_tui.ui.widgets.run_tree import RunTree
from io_tui.ui.widgets.transcript import Transcript

from .conftest import FakeClock
from .slow_provider import GatedProvider, Turn

SIZE = (120, 36)
WRITE = ("write_file", {"path": "notes.txt", "content": "hello\n"})


class Holding:
    """An approver that answers only when the test says so (the run stays asking)."""

    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []
        self.answer: asyncio.Future[Decision] | None = None

    async def decide(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        self.answer = asyncio.get_running_loop().create_future()
        return await self.answer

    async def deny(self, pilot: Pilot[object]) -> None:
        # the run shows "asking" before its ask reaches decide(): wait for it, or the run waits on
        await until_app(pilot, lambda: self.answer is not None, "the ask reached the approver")
        assert self.answer is not None
        if not self.answer.done():
            self.answer.set_result(Decision.deny(reason="test over", decided_by="test"))


async def start(
    pilot: Pilot[object], provider: GatedProvider, goal: str = "count the words"
) -> None:
    app = pilot.app
    assert isinstance(app, IoApp)
    await until_app(pilot, lambda: getattr(app.screen, "ready", False), "the panes")
    host = app.host
    assert isinstance(host, InlineHost)
    workspace = app.store_path.parent / "ws"
    if not workspace.exists():
        prepare_demo_workspace(workspace)
    host.run(TaskContract(goal=goal, workspace=workspace), provider, Policy())


def parts(app: IoApp) -> tuple[MainScreen, RunTree, Transcript]:
    screen = app.screen
    assert isinstance(screen, MainScreen)
    return screen, screen.run_tree, screen.transcript


def step_label(tree: RunTree, run_id: int, step: int) -> str:
    return str(tree.step_nodes[(run_id, step)].label)


async def test_a_streaming_run_shows_its_text_clock_provider_and_model(
    make_app, clock: FakeClock
) -> None:
    provider = GatedProvider([Turn(["Reading ", "the code ", "first."])])
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot, provider)
        _screen, tree, transcript = parts(app)
        await until_app(pilot, lambda: (1, 1) in tree.step_nodes, "the first step")
        assert "thinking…" in step_label(tree, 1, 1)
        provider.release(2)  # two pieces stream in
        await until_app(pilot, lambda: "Reading the code" in transcript.live_text, "streamed text")
        clock.advance(12)
        tree.tick()
        transcript.tick()
        await pilot.pause(0.2)
        assert "writing… 12s" in step_label(tree, 1, 1)
        assert "12s" in str(tree.run_nodes[1].label)
        assert "local-llm · qwen3-8b · running 12s" in transcript.header_text
        assert "⋯ step 1: writing… 12s" in transcript.live_text
        provider.release(3)  # the last piece, the completion, and the run's final step
        await wait_until_idle(pilot)
        assert app.runs[1].status == "finished"
        assert "first." in transcript.text_of(1)
        assert transcript.live_text == ""  # nothing in flight, nothing left streaming
        assert "local-llm · qwen3-8b · finished" in transcript.header_text


async def test_x_says_cancelled_by_the_operator_and_leaves_no_thinking(make_app) -> None:
    provider = GatedProvider([Turn(["Let me see"])])
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot, provider)
        screen, tree, transcript = parts(app)
        await until_app(pilot, lambda: app.host.is_live(1) and provider.waiting.is_set(), "live")
        screen.select_run(1)
        await pilot.press("x")
        await until_app(pilot, lambda: app.runs[1].status == "cancelled", "cancelled")
        await pilot.pause(0.2)
        assert "■ cancelled by the operator" in transcript.live_text
        label = step_label(tree, 1, 1)
        assert "thinking" not in label and "interrupted" in label
        row = await app.store.runs.get(1)
        assert row is not None and (row.status, row.error) == ("cancelled", OPERATOR_CANCEL)


async def test_a_queued_message_shows_until_delivered_then_sits_in_its_step(make_app) -> None:
    provider = GatedProvider([Turn(["Looking."], [("list_dir", {"path": "."})]), Turn(["Done."])])
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot, provider)
        screen, _tree, transcript = parts(app)
        await until_app(pilot, lambda: provider.waiting.is_set(), "the first request")
        screen.select_run(1)
        await pilot.press("m", *"keep the API", "enter")
        await until_app(pilot, lambda: "operator ▸ keep the API" in transcript.live_text, "queued")
        assert "queued: delivered at the run's next step" in transcript.live_text
        provider.release(2)  # step 1 answers with a tool call; step 2 starts and takes it
        await until_app(pilot, lambda: "delivered to step 2" in transcript.live_text, "delivered")
        provider.release(2)
        await wait_until_idle(pilot)
        assert "operator ▸ keep the API" in transcript.text_of(2)
        assert "keep the API" not in transcript.live_text
        assert "keep the API" in provider.requests[1].messages[-1].content


async def test_a_message_the_run_never_got_is_handed_back_to_the_prompt(make_app) -> None:
    provider = GatedProvider([Turn(["Let me see"])])
    app = make_app(demo=False)
    async with app.run_test(size=SIZE) as pilot:
        await start(pilot, provider)
        screen, _tree, transcript = parts(app)
        await until_app(pilot, lambda: provider.waiting.is_set(), "live")
        screen.select_run(1)
        await pilot.press("m", *"use pathlib", "enter")
        await until_app(pilot, lambda: "use pathlib" in transcript.live_text, "queued")
        await pilot.press("x")
        await until_app(pilot, lambda: app.runs[1].status == "cancelled", "cancelled")
        await pilot.pause(0.2)
        assert "not delivered: the run ended (cancelled) first" in transcript.live_text
        assert screen.query_one("#prompt", Input).value == "use pathlib"
        assert any("back in the prompt" in n.message for n in app._notifications)


async def test_an_asking_run_is_selected_and_its_ask_has_a_timer(make_app, clock) -> None:
    approver = Holding()
    app = make_app(demo=False, approver=approver)
    async with app.run_test(size=SIZE) as pilot:
        first = GatedProvider([Turn(["Waiting"])])
        await start(pilot, first, "the first run")
        screen, tree, transcript = parts(app)
        await until_app(pilot, lambda: screen.selected_run == 1, "the first run selected")
        second = GatedProvider([Turn(["Writing notes."], [WRITE])])
        await start(pilot, second, "the second run")
        await until_app(pilot, lambda: 2 in tree.run_nodes, "the second run")
        await until_app(pilot, lambda: screen.selected_run == 2, "the new run selected (idle)")
        screen.select_run(1)  # the operator looks at run 1 again, and waits
        app.activity.last_key = float("-inf")  # and has pressed no key for a while
        second.release(2)
        await until_app(pilot, lambda: app.runs[2].status == "asking", "asking")
        await until_app(pilot, lambda: screen.selected_run == 2, "the asking run selected")
        clock.advance(45)
        tree.tick()
        transcript.tick()
        await pilot.pause(0.2)
        assert "? asking 45s" in step_label(tree, 2, 1)
        assert "? step 1 waits for your approval · 45s" in transcript.live_text
        await approver.deny(pilot)
        first.release(5)
        second.release(5)
        await wait_until_idle(pilot)


async def test_an_asking_run_does_not_take_the_cursor_from_a_busy_operator(make_app) -> None:
    approver = Holding()
    app = make_app(demo=False, approver=approver)
    async with app.run_test(size=SIZE) as pilot:
        first = GatedProvider([Turn(["Waiting"])])
        await start(pilot, first, "the first run")
        screen, tree, _transcript = parts(app)
        await until_app(pilot, lambda: screen.selected_run == 1, "the first run selected")
        asking = GatedProvider([Turn(["Writing notes."], [WRITE])])
        await start(pilot, asking, "the second run")
        await until_app(pilot, lambda: 2 in tree.run_nodes, "the second run")
        screen.select_run(1)
        await pilot.press("m", *"half a thought")  # typing into the prompt, for run 1
        asking.release(2)
        await until_app(pilot, lambda: app.runs[2].status == "asking", "asking")
        await pilot.pause(0.3)
        assert screen.selected_run == 1  # the message still goes where it was meant to
        assert screen.query_one("#prompt", Input).value == "half a thought"
        await approver.deny(pilot)
        first.release(5)
        asking.release(5)
        await wait_until_idle(pilot)


# -- pictures ------------------------------------------------------------------------------------


async def _mid_stream(pilot: Pilot[object], provider: GatedProvider, clock: FakeClock) -> None:
    app = pilot.app
    assert isinstance(app, IoApp)
    await start(pilot, provider, "Add a --verbose flag to the CLI and document it")
    screen, tree, transcript = parts(app)
    await until_app(pilot, lambda: provider.waiting.is_set(), "the first request")
    provider.release(2)  # step 1: a tool call
    await until_app(pilot, lambda: 2 in app.runs[1].steps, "step 2")
    await pilot.pause(0.6)  # the followed transcript loads step 1 (at most twice a second)
    provider.release(3)
    await until_app(pilot, lambda: "argparse" in transcript.live_text, "streamed text")
    screen.select_run(1)
    await pilot.press("m", *"keep the old flags working", "enter")
    await until_app(pilot, lambda: "old flags" in transcript.live_text, "queued")
    clock.advance(83)
    tree.tick()
    transcript.tick()
    freeze(app)
    await pilot.pause(0.3)


def _live_app(make_app, tmp_path: Path) -> tuple[IoApp, GatedProvider]:
    provider = GatedProvider(
        [
            Turn(["Listing the project."], [("list_dir", {"path": "."})]),
            Turn(["The CLI is built with ", "argparse in cli.py; ", "adding the flag "]),
        ]
    )
    return make_app(demo=False), provider


def test_live_run_mid_stream_160x48(snap_compare, make_app, tmp_path, clock) -> None:
    """Mid-stream: the run's clock, the step writing for 1m 23s, provider and model in the
    header, the streamed text and a queued operator message under the steps."""
    app, provider = _live_app(make_app, tmp_path)
    assert snap_compare(
        app, terminal_size=(160, 48), run_before=lambda p: _mid_stream(p, provider, clock)
    )


def test_live_run_mid_stream_80x24(snap_compare, make_app, tmp_path, clock) -> None:
    """The same at 80×24."""
    app, provider = _live_app(make_app, tmp_path)
    assert snap_compare(
        app, terminal_size=(80, 24), run_before=lambda p: _mid_stream(p, provider, clock)
    )


def test_durations_and_provider_labels_read_plainly() -> None:
    from io_tui.ui.state import duration, provider_of

    assert [duration(s) for s in (None, 0, 42.9, 65, 3_725)] == [
        "",
        "0s",
        "42s",
        "1m 05s",
        "1h 02m",
    ]
    chain = {"kind": "fallback", "chain": [{"kind": "http", "preset": "ollama", "model": "q"},
                                           {"kind": "http", "preset": "openai", "model": "g"}]}  # fmt: skip
    assert provider_of(chain) == ("ollama>openai", "q")
    assert provider_of({"kind": "scripted", "model": "scripted-demo"}) == (
        "scripted",
        "scripted-demo",
    )
