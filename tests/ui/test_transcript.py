"""The streaming line: its height follows the text's rows, and it stays (blank) when idle."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from io_tui.ui.widgets.transcript import Transcript


class TranscriptHost(App[None]):
    def compose(self) -> ComposeResult:
        yield Transcript()


async def test_the_streaming_line_grows_and_shrinks_with_its_text() -> None:
    app = TranscriptHost()
    async with app.run_test(size=(60, 12)) as pilot:
        transcript = app.query_one(Transcript)
        line = transcript.query_one("#streaming", Static)
        await pilot.pause()
        for text, rows in [
            ("hello " * 30, 4),
            ("hello " * 31, 4),
            ("x", 1),
            ("", 1),
            ("y " * 40, 2),
        ]:
            transcript.set_streaming(text)
            await pilot.pause()
            assert line.size.height == rows, text
