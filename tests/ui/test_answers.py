"""A worker's answer that reaches a screen after the app closed is dropped (``ui/answers.py``).

The app prunes every screen's widgets before the screens' queues are empty; an answer still on
its way (a transcript, a ledger, a dialog's listing) then reaches a screen with nothing left to
show it in. A loaded machine made this happen in the suite, with a traceback on the terminal as
the app quit.
"""

from __future__ import annotations

from pathlib import Path

from textual.app import App, ComposeResult
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from io_tui.core.providers.presets import ProbeResult
from io_tui.ui.answers import on_answer
from io_tui.ui.screens.main import MainScreen
from io_tui.ui.screens.new_run import NewRunScreen


class Loaded(Message):
    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text


class Shows(Screen[None]):
    def compose(self) -> ComposeResult:
        yield Static(id="text")

    @on_answer(Loaded)
    def _on_loaded(self, message: Loaded) -> None:
        self.query_one("#text", Static).update(message.text)
        self.shown = message.text


class Shell(App[None]):
    def on_mount(self) -> None:
        self.push_screen(Shows())


async def test_an_answer_is_handled_while_the_screen_lives_and_dropped_after() -> None:
    app = Shell()
    async with app.run_test() as pilot:
        screen = app.screen
        assert isinstance(screen, Shows)
        screen.post_message(Loaded("fresh"))
        await pilot.pause()
        assert screen.shown == "fresh"
    screen._on_loaded(Loaded("late"))  # reaches it now, its widgets pruned with the app
    assert screen.shown == "fresh"


async def test_the_main_screen_drops_a_transcript_or_ledger_that_arrives_as_it_closes(
    make_app,
) -> None:
    app = make_app(demo=False)
    async with app.run_test(size=(120, 40)):
        screen = app.screen
        assert isinstance(screen, MainScreen)
        screen.selected_run = 1
    screen._on_transcript_loaded(MainScreen.TranscriptLoaded(1, [], replace=True))
    screen._on_ledger_loaded(MainScreen.LedgerLoaded(1, None))


async def test_the_new_run_dialog_drops_its_listings_that_arrive_as_the_app_closes(
    make_app, tmp_path: Path
) -> None:
    """The servers' prompts, the runs to continue, the presets' probes and a prompt's text."""
    app = make_app(demo=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("ctrl+n")
        await pilot.pause(0.1)
        dialog = app.screen
        assert isinstance(dialog, NewRunScreen)
    dialog._on_prompts_listed(NewRunScreen.PromptsListed(tmp_path, [], "not listed: timed out"))
    dialog._on_runs_listed(NewRunScreen.RunsListed([("run 1", 1, str(tmp_path))]))
    refused = ProbeResult(False, "refused")
    dialog._on_probed(NewRunScreen.Probed("ollama", "http://127.0.0.1:11434/v1", refused))
    dialog._on_prompt_filled(NewRunScreen.PromptFilled(dialog.opening, "the prompt's text"))
