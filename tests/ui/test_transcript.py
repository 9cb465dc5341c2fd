"""The transcript widget on its own: lines per step, following, dropping, the cursor, styles."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.screen import Screen

from io_tui.ui.data import StepData, ToolBlock
from io_tui.ui.widgets import transcript as transcript_module
from io_tui.ui.widgets.transcript import Transcript

SIZE = (60, 12)


class TranscriptHost(App[None]):
    def compose(self) -> ComposeResult:
        yield Transcript()


def _step(n: int, *, text: str = "", tools: int = 0) -> StepData:
    return StepData(
        run_id=1,
        step=n,
        text=text or f"the model says {n}",
        tokens=100 * n,
        tools=[ToolBlock(f"c{n}.{i}", "read_file", {"path": f"f{i}.py"}, "a\nb\nc") for i in range(tools)],
    )  # fmt: skip


async def test_each_step_takes_its_lines_and_a_blank_line_after() -> None:
    app = TranscriptHost()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.query_one(Transcript)
        transcript.show_run(1, [_step(1), _step(2, tools=2)], "the goal")
        await pilot.pause()
        assert transcript.text_of(1).splitlines() == ["step 1 · 100 tok", "  the model says 1"]
        assert transcript.lines_of(1) == range(1, 3)  # after the title
        assert transcript.lines_of(2).start == 4
        assert transcript.virtual_size.height == 4 + 4 + 1
        shown = [transcript.render_line(y).text.rstrip() for y in range(5)]
        assert shown == [
            "run 1: the goal",
            "step 1 · 100 tok",
            "  the model says 1",
            "",
            "step 2 · 200 tok",
        ]
        head = transcript.get_component_rich_style("transcript--head", partial=True).color
        assert head is not None and next(iter(transcript.render_line(1))).style.color == head


async def test_the_streaming_text_grows_and_shrinks_below_the_steps() -> None:
    app = TranscriptHost()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.query_one(Transcript)
        transcript.show_run(1, [_step(1)], "goal")
        await pilot.pause()
        base = transcript.virtual_size.height
        width = transcript.scrollable_content_region.width - 2  # indented by two
        for text, rows in [("hello " * 30, -(-180 // width)), ("x", 1), ("", 0), ("y " * 40, 2)]:
            transcript.set_streaming(text)
            await pilot.pause()
            assert transcript.virtual_size.height == base + rows, text


async def test_a_followed_transcript_stays_at_its_end_without_laying_out_the_screen(
    monkeypatch,
) -> None:
    """New steps append lines and repaint the transcript; only the scrollbar's first
    appearance needs a layout."""
    app = TranscriptHost()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.query_one(Transcript)
        transcript.show_run(1, [_step(n) for n in range(1, 6)], "goal")
        await pilot.pause()
        assert transcript.max_scroll_y > 0
        assert transcript.scroll_y == transcript.max_scroll_y
        layouts = 0
        refresh_layout = Screen._refresh_layout

        def counting(screen, *args, **kwargs):
            nonlocal layouts
            layouts += 1
            return refresh_layout(screen, *args, **kwargs)

        monkeypatch.setattr(Screen, "_refresh_layout", counting)
        for n in range(6, 16):
            transcript.add_steps([_step(n)])
            await pilot.pause()
            assert transcript.scroll_y == transcript.max_scroll_y
            assert transcript.render_line(SIZE[1] - 2).text.strip() == f"the model says {n}"
        assert layouts == 0


async def test_a_transcript_read_above_its_end_keeps_its_lines_while_steps_come_and_go(
    monkeypatch,
) -> None:
    monkeypatch.setattr(transcript_module, "MAX_STEPS", 10)
    app = TranscriptHost()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.query_one(Transcript)
        transcript.show_run(1, [_step(n) for n in range(1, 11)], "goal")
        await pilot.pause()
        transcript.scroll_to_step(4)
        assert transcript.scroll_y < transcript.max_scroll_y
        top = transcript.render_line(0).text
        transcript.add_steps([_step(11), _step(12)])  # drops steps 1 and 2 above the view
        await pilot.pause()
        assert sorted(transcript.steps) == list(range(3, 13))
        assert transcript.render_line(0).text == top
        transcript.scroll_home(animate=False, immediate=True)
        assert "2 earlier steps are in the trace viewer" in transcript.render_line(1).text


async def test_the_cursor_moves_by_step_and_enter_shows_its_results() -> None:
    app = TranscriptHost()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.query_one(Transcript)
        transcript.show_run(1, [_step(1, tools=1), _step(2, tools=1), _step(3)], "goal")
        transcript.focus()
        await pilot.pause()
        await pilot.press("up")  # from nothing, up starts at the last step in view
        assert transcript.cursor_step == 3
        transcript.cursor_step = None
        await pilot.press("down")  # and down at the first
        assert transcript.cursor_step == 1
        await pilot.press("down", "down")
        assert transcript.cursor_step == 3
        await pilot.press("up", "enter")
        assert transcript.cursor_step == 2 and transcript.steps[2].expanded == {0}
        assert "▼ → read_file" in transcript.text_of(2) and "    a" in transcript.text_of(2)
        first = transcript.lines_of(2).start - transcript.scroll_offset.y
        cursor = transcript._styles["cursor"].bgcolor
        assert any(s.style and s.style.bgcolor == cursor for s in transcript.render_line(first))
        assert not any(
            s.style and s.style.bgcolor == cursor
            for s in transcript.render_line(
                transcript.lines_of(1).start - transcript.scroll_offset.y
            )
        )
        await pilot.press("enter")
        assert transcript.steps[2].collapsed


async def test_a_theme_change_redraws_the_steps_in_its_colours() -> None:
    app = TranscriptHost()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.query_one(Transcript)
        transcript.show_run(1, [_step(1)], "goal")
        await pilot.pause()
        before = transcript.render_line(1)
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"
        await pilot.pause()
        await pilot.pause()
        after = transcript.render_line(1)
        assert after.text == before.text
        assert [s.style for s in after] != [s.style for s in before]


async def test_escape_sequences_in_a_run_never_reach_the_screen() -> None:
    """A test runner's colours stay; a clear-screen, a title change or a NUL from a tool's
    output or the model's text is dropped."""
    app = TranscriptHost()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.query_one(Transcript)
        result = "\x1b[31mFAILED\x1b[0m test_x\x1b[2J\x1b]0;pwned\x07\x00"
        data = _step(1, text="ran \x1b[1mpytest\x1b[0m\x1b[H")
        data.tools.append(ToolBlock("c", "run_command", {"argv": ["pytest"]}, result))
        transcript.show_run(1, [data], "goal \x1b[2J")
        transcript.set_expanded(1, frozenset({0}))
        transcript.set_streaming("next \x1b[2Jstep")
        await pilot.pause()
        lines = [transcript.render_line(y) for y in range(transcript.virtual_size.height)]
        shown = "\n".join(line.text for line in lines)
        assert "\x1b" not in shown and "\x00" not in shown
        assert "ran pytest" in shown and "FAILED test_x" in shown and "next step" in shown
        failed = next(line for line in lines if "FAILED" in line.text)
        red = [s for s in failed if s.text == "FAILED" and s.style and s.style.color]
        assert red and red[0].style.color.name == "color(1)"  # type: ignore[union-attr]


async def test_a_run_loaded_from_a_later_step_says_where_the_earlier_ones_are() -> None:
    app = TranscriptHost()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.query_one(Transcript)
        transcript.show_run(1, [_step(51), _step(52)], "goal")  # the newest MAX_STEPS loaded
        await pilot.pause()
        assert transcript.render_line(0).text.startswith("run 1: goal")
        assert "50 earlier steps are in the trace viewer (t)" in transcript.render_line(1).text


async def test_text_selected_with_the_mouse_is_highlighted_and_copied_as_shown() -> None:
    from textual.geometry import Offset
    from textual.selection import Selection

    app = TranscriptHost()
    async with app.run_test(size=SIZE) as pilot:
        transcript = app.query_one(Transcript)
        transcript.show_run(1, [_step(1), _step(2)], "goal")
        await pilot.pause()
        # from "model says 1" (line 2, after "  the ") to "step 2" (line 4)
        selection = Selection(Offset(6, 2), Offset(6, 4))
        text, ending = transcript.get_selection(selection) or ("", "")
        assert (text, ending) == ("model says 1\n\nstep 2", "\n")
        app.screen.selections = {transcript: selection}
        await pilot.pause()
        chosen = app.screen.get_component_rich_style("screen--selection").bgcolor
        line = list(transcript.render_line(2))
        assert {s.text for s in line if s.style and s.style.bgcolor == chosen} == {"model says 1"}
        assert all(s.style and s.style.meta.get("offset") for s in line)  # where a drag lands
