"""``attention.typing``: the operator is typing while the focused field holds text, an Input's
or a TextArea's (a dialog's editor), though the main screen's start never imports TextArea."""

from __future__ import annotations

from typing import Any

from textual.app import App, ComposeResult
from textual.widgets import Input, TextArea

from io_tui.ui.attention import typing


class Fields(App[None]):
    def compose(self) -> ComposeResult:
        yield Input(id="line")
        yield TextArea(id="text")


async def test_typing_is_text_in_the_focused_field() -> None:
    app = Fields()
    async with app.run_test() as pilot:
        seen: list[Any] = []
        for selector, value in (("#line", ""), ("#line", "fix"), ("#text", ""), ("#text", "x")):
            field = app.query_one(selector)
            if isinstance(field, Input):
                field.value = value
            else:
                field.text = value  # type: ignore[attr-defined]
            field.focus()
            await pilot.pause()
            seen.append(typing(app))
    assert seen == [False, True, False, True]
