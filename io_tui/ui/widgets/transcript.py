"""The transcript of one run: model text, collapsible tool blocks with results, refusals,
approval decisions and operator messages inline; the streamed text of the step in flight.

Blocks are keyed by step and pruned from the top past ``MAX_BLOCKS`` (the trace viewer has all).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Collapsible, Static

from io_tui.ui.data import StepData, tool_title

MAX_BLOCKS = 40
RESULT_PREVIEW_LINES = 40


class ToolBlock(Collapsible):
    """One tool call, collapsed to its title; expanded it shows the (previewed) result."""

    DEFAULT_CSS = """
    ToolBlock { padding: 0; margin: 0; border: none; background: transparent; }
    ToolBlock > Contents { padding: 0 0 0 2; }
    ToolBlock.-error CollapsibleTitle { color: $error; }
    ToolBlock .result { color: $foreground-muted; }
    """


class StepBlock(Vertical):
    DEFAULT_CSS = """
    StepBlock { height: auto; margin: 0 0 1 0; }
    StepBlock .step-head { color: $accent; text-style: bold; }
    StepBlock .model-text { padding: 0 0 0 2; }
    StepBlock .operator { color: $secondary; padding: 0 0 0 2; }
    StepBlock .refused { color: $error; padding: 0 0 0 2; }
    StepBlock .asking { color: $warning; padding: 0 0 0 2; }
    StepBlock .decided { color: $success; padding: 0 0 0 2; }
    StepBlock .verify, StepBlock .memory, StepBlock .note { color: $foreground-muted; padding: 0 0 0 2; }
    """

    def __init__(self, data: StepData) -> None:
        super().__init__()
        self.data = data

    def compose(self) -> ComposeResult:
        data = self.data
        yield Static(f"step {data.step} · {data.tokens:,} tok", classes="step-head")
        for message in data.operator_messages:
            yield Static(Text(f"operator ▸ {message}"), classes="operator")
        if data.text:
            yield Static(Text(data.text), classes="model-text")
        for tool in data.tools:
            block = ToolBlock(
                Static(Text(_preview(tool.result)), classes="result"),
                title=tool_title(tool.name, tool.arguments),
                collapsed=True,
            )
            block.set_class(tool.is_error, "-error")
            yield block
        for style, line in data.notes:
            yield Static(Text(line), classes=style)


class Transcript(VerticalScroll):
    DEFAULT_CSS = """
    Transcript { padding: 0 1; }
    Transcript #streaming { color: $foreground; padding: 0 0 0 2; }
    Transcript #streaming.-idle { display: none; }
    Transcript #transcript-empty { color: $foreground-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run_id: int | None = None
        self.blocks: dict[int, StepBlock] = {}
        self._streaming = ""

    def compose(self) -> ComposeResult:
        yield Static("Select a run, or press ctrl+n for a new one.", id="transcript-empty")
        yield Static("", id="streaming", classes="-idle")

    @property
    def last_step(self) -> int:
        return max(self.blocks, default=0)

    def show_run(self, run_id: int, steps: list[StepData], goal: str) -> None:
        """Replace the content with ``run_id``'s steps (rebuilt from the store)."""
        self.run_id = run_id
        for block in self.blocks.values():
            block.remove()
        self.blocks.clear()
        self.query_one("#transcript-empty", Static).update(Text(f"run {run_id}: {goal}"))
        self.set_streaming("")
        self.add_steps(steps)

    def add_steps(self, steps: list[StepData]) -> None:
        at_end = self.is_vertical_scroll_end or self.max_scroll_y == 0
        streaming = self.query_one("#streaming", Static)
        new = []
        for data in steps:
            old = self.blocks.pop(data.step, None)
            if old is not None:
                old.remove()
            block = StepBlock(data)
            self.blocks[data.step] = block
            new.append(block)
        if new:
            self.mount_all(new, before=streaming)
        while len(self.blocks) > MAX_BLOCKS:
            oldest = min(self.blocks)
            self.blocks.pop(oldest).remove()
        if at_end:
            self.call_after_refresh(self.scroll_end, animate=False)

    def set_streaming(self, text: str) -> None:
        if text == self._streaming:
            return
        self._streaming = text
        streaming = self.query_one("#streaming", Static)
        streaming.update(Text(text))
        streaming.set_class(not text, "-idle")
        if text and (self.is_vertical_scroll_end or self.max_scroll_y == 0):
            self.call_after_refresh(self.scroll_end, animate=False)


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
