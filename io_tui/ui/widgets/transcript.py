"""The transcript of one run: model text, tool calls whose results unfold, refusals, approval
decisions and operator messages inline; the streamed text of the step in flight.

Blocks are keyed by step and pruned from the top past ``MAX_BLOCKS`` (the trace viewer has all).
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.style import Style as RichStyle
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

from io_tui.ui.data import StepData, tool_title

MAX_BLOCKS = 40
RESULT_PREVIEW_LINES = 40
NOTE_STYLES = ("operator", "refused", "asking", "decided", "verify", "memory", "note")


class StepBlock(Widget, can_focus=True):
    """One step, drawn as a single widget: its head, operator messages, the model's text, one
    line per tool call and the inline notes (refusals, decisions, verification, memory).

    A tool line shows its result when clicked, or all of them with enter on the focused block.
    One widget per step, not one per line: every mount re-lays-out the screen, and its cost
    grows with the number of widgets on it.
    """

    BINDINGS = [
        Binding("enter", "toggle_all", "Results", id="transcript.toggle", tooltip="Show or hide this step's tool results"),
    ]  # fmt: skip
    DEFAULT_CSS = """
    StepBlock { height: auto; margin: 0 0 1 0; }
    StepBlock:focus { background: $boost; }
    """

    expanded: reactive[frozenset[int]] = reactive(frozenset(), layout=True)

    def __init__(self, data: StepData) -> None:
        super().__init__()
        self.data = data

    @property
    def collapsed(self) -> bool:
        return not self.expanded

    def set_expanded(self, expand: bool) -> None:
        self.expanded = frozenset(range(len(self.data.tools))) if expand else frozenset()

    def action_toggle_tool(self, index: int) -> None:
        self.expanded = self.expanded ^ {index}

    def action_toggle_all(self) -> None:
        self.set_expanded(self.collapsed)

    def render(self) -> RenderableType:
        data = self.data
        rows: list[RenderableType] = [
            Text(f"step {data.step} · {data.tokens:,} tok", self._style("head"))
        ]
        rows += [self._indented(f"operator ▸ {m}", "operator") for m in data.operator_messages]
        if data.text:
            rows.append(self._indented(data.text))
        for index, tool in enumerate(data.tools):
            open_ = index in self.expanded
            title = Text(
                f"{'▼' if open_ else '▶'} {tool_title(tool.name, tool.arguments)}",
                self._style("tool-error" if tool.is_error else "tool")
                + RichStyle(meta={"@click": f"toggle_tool({index})"}),
                no_wrap=True,
                overflow="ellipsis",
            )
            rows.append(Padding(title, (0, 0, 0, 2)))
            if open_:
                rows.append(self._indented(_preview(tool.result), "result", 4))
        rows += [self._indented(line, style) for style, line in data.notes]
        return Group(*rows)

    def _style(self, component: str) -> RichStyle:
        """The transcript's style for a part of a step (styled once there, not per block: a
        component class costs a stylesheet pass on every mount)."""
        parent = self.parent
        if not isinstance(parent, Transcript):
            return RichStyle()
        return parent.get_component_rich_style(f"transcript--{component}", partial=True)

    def _indented(self, text: str, component: str | None = None, by: int = 2) -> Padding:
        style = self._style(component) if component else ""
        return Padding(Text(text, style), (0, 0, 0, by))


class Transcript(VerticalScroll):
    COMPONENT_CLASSES = {
        "transcript--head",
        "transcript--tool",
        "transcript--tool-error",
        "transcript--result",
        *(f"transcript--{style}" for style in NOTE_STYLES),
    }
    DEFAULT_CSS = """
    Transcript > .transcript--head { color: $accent; text-style: bold; }
    Transcript > .transcript--tool { color: $primary; }
    Transcript > .transcript--tool-error { color: $error; }
    Transcript > .transcript--result { color: $foreground-muted; }
    Transcript > .transcript--operator { color: $secondary; }
    Transcript > .transcript--refused { color: $error; }
    Transcript > .transcript--asking { color: $warning; }
    Transcript > .transcript--decided { color: $success; }
    Transcript > .transcript--verify, Transcript > .transcript--memory,
    Transcript > .transcript--note { color: $foreground-muted; }
    Transcript { padding: 0 1; }
    Transcript #streaming { color: $foreground; padding: 0 0 0 2; }
    Transcript #transcript-empty { color: $foreground-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run_id: int | None = None
        self.blocks: dict[int, StepBlock] = {}
        self._streaming = ""
        self._streaming_rows: tuple[int, int] | None = None  # (width, rows) of what is shown

    def compose(self) -> ComposeResult:
        yield Static("Select a run, or press ctrl+n for a new one.", id="transcript-empty")
        yield Static("", id="streaming")

    @property
    def last_step(self) -> int:
        return max(self.blocks, default=0)

    def show_run(self, run_id: int, steps: list[StepData], goal: str) -> None:
        """Replace the content with ``run_id``'s steps (rebuilt from the store)."""
        self.run_id = run_id
        gone = list(self.blocks.values())
        self.blocks.clear()
        self.query_one("#transcript-empty", Static).update(Text(f"run {run_id}: {goal}"))
        self.set_streaming("")
        self.add_steps(steps, gone)

    def add_steps(self, steps: list[StepData], gone: list[StepBlock] | None = None) -> None:
        """Mount a block per step (replacing a block of the same step), then drop the oldest
        past ``MAX_BLOCKS``. Everything leaving goes in one removal: each removal on its own
        would lay out the whole screen again."""
        at_end = self.is_vertical_scroll_end or self.max_scroll_y == 0
        gone = gone or []
        for data in steps:
            block = StepBlock(data)
            old = self.blocks.pop(data.step, None)
            if old is not None:
                block.set_reactive(StepBlock.expanded, old.expanded)
                gone.append(old)
            self.blocks[data.step] = block
        while len(self.blocks) > MAX_BLOCKS:
            gone.append(self.blocks.pop(min(self.blocks)))
        mounted = set(self.children)
        new = [self.blocks[d.step] for d in steps if d.step in self.blocks]
        if new:
            self.mount_all(new, before=self.query_one("#streaming", Static))
        if leaving := [block for block in gone if block in mounted]:
            self.remove_children(leaving)
        if at_end:
            self.call_after_refresh(self.scroll_end, animate=False)

    def set_all_expanded(self, expand: bool) -> None:
        """Show or hide every tool result, keeping the step at the top of the view where it is
        (or the end in view, when following)."""
        at_end = self.is_vertical_scroll_end
        anchor = next(
            (b for b in self.blocks.values() if b.virtual_region.bottom > self.scroll_y), None
        )
        for block in self.blocks.values():
            if block.data.tools:
                block.set_expanded(expand)
        if at_end:
            self.call_after_refresh(self.scroll_end, animate=False)
        elif anchor is not None:
            self.call_after_refresh(self.scroll_to_widget, anchor, animate=False, top=True)

    def set_streaming(self, text: str) -> None:
        """Show the text streaming in for the step in flight. The line stays on screen while
        idle (blank), and is re-laid-out only when the text needs another number of rows:
        a live run streams every step, and a layout pass costs the whole screen."""
        if text == self._streaming:
            return
        streaming = self.query_one("#streaming", Static)
        width = streaming.content_size.width
        rows = (width, self._rows(text, width)) if width > 0 else None
        same_rows = rows is not None and rows == self._streaming_rows
        self._streaming, self._streaming_rows = text, rows
        streaming.update(Text(text), layout=not same_rows)
        if text and (self.is_vertical_scroll_end or self.max_scroll_y == 0):
            self.call_after_refresh(self.scroll_end, animate=False)

    def _rows(self, text: str, width: int) -> int:
        return len(Text(text).wrap(self.app.console, width)) if text else 1


def _preview(result: str | None) -> str:
    if result is None:
        return "(no result recorded yet)"
    lines = result.splitlines()
    if len(lines) <= RESULT_PREVIEW_LINES:
        return result
    shown = "\n".join(lines[:RESULT_PREVIEW_LINES])
    return (
        f"{shown}\n… {len(lines) - RESULT_PREVIEW_LINES} more lines — the trace viewer (t) has all"
    )
