"""The transcript of one run: model text, tool calls whose results unfold, refusals, approval
decisions and operator messages inline; below the steps, the live part of the run it follows
(``follow``): operator messages queued for it until their step shows them, the text streaming
in for the step in flight, and one status line — what the step waits for and since when
(``thinking… 12s``, ``waits for your approval · 1m 05s``), or how the run ended
(``cancelled by the operator``). The header names the run's provider, model and elapsed time.
The live part is redrawn at most ~10 times a second, and once a second while the run is live.

It is one line-drawing widget (Textual's Line API), not a widget per step: each step is
rendered once into strips at the current width and kept, and a frame draws only the visible
lines. A followed run appends lines and repaints the transcript alone, where a mounted widget
would lay out the whole screen again (~45 ms each time on a busy screen).

Steps are keyed by number and the oldest are dropped past ``MAX_STEPS`` (the trace viewer has
all of them). One step is the cursor: ↑/↓ move it, enter shows or hides its tool results, a
click on a tool line shows or hides that result. Text dragged over with the mouse is selected
(``ctrl+c`` copies it, as the lines show it).
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

from io_tui.core import OPERATOR_CANCEL, ended_line, ending_of
from io_tui.ui.data import StepData, tool_title
from io_tui.ui.state import RunView, duration, since
from io_tui.ui.terminal_text import styled
from io_tui.ui.throttle import Throttle
from io_tui.ui.widgets.call_progress import progress_line
from io_tui.ui.widgets.scrollbars import ThrottledScrollbars

MAX_STEPS = 200
RESULT_PREVIEW_LINES = 40
LIVE_INTERVAL = 0.1  # seconds: the live part is redrawn at most ~10 times a second
TICK_S = 1.0  # seconds: a live run's clocks move on
NOTE_STYLES = ("operator", "refused", "asking", "decided", "verify", "memory", "note", "warning")
PARTS = (
    "title", "meta", "head", "tool", "tool-error", "result", "streaming", "cursor",
    "status", "ended", *NOTE_STYLES,
)  # fmt: skip
# a step with no text and no call: the model ended the run with nothing to say or do
NOTHING_TO_DO = "· nothing to do: the model made no call and wrote no answer"
STEP_META = "transcript-step"  # what a line's segments carry: the step they belong to


@dataclass(slots=True)
class ShownStep:
    """A step in the transcript, whether its tool results are shown, and its rendered lines
    (for ``width``; rendered again when the width, the styles or ``expanded`` change)."""

    data: StepData
    expanded: frozenset[int] = frozenset()
    lines: list[Strip] = field(default_factory=list)
    width: int = 0

    @property
    def has_tools(self) -> bool:
        return bool(self.data.tools)

    @property
    def collapsed(self) -> bool:
        return not self.expanded


class Transcript(ThrottledScrollbars, ScrollView, can_focus=True):
    BINDINGS = [
        Binding("enter", "toggle_step", "Results", id="transcript.toggle", tooltip="Show or hide the current step's tool results"),
        Binding("up", "move_cursor(-1)", "Previous step", show=False, id="transcript.previous", tooltip="Previous step"),
        Binding("down", "move_cursor(1)", "Next step", show=False, id="transcript.next", tooltip="Next step"),
    ]  # fmt: skip
    COMPONENT_CLASSES = {f"transcript--{part}" for part in PARTS}
    DEFAULT_CSS = """
    Transcript { padding: 0 1; overflow-x: hidden; scrollbar-gutter: stable; }
    Transcript > .transcript--title { color: $foreground-muted; }
    Transcript > .transcript--meta { color: $foreground-muted; text-style: dim; }
    Transcript > .transcript--status { color: $accent; }
    Transcript > .transcript--ended { color: $warning; text-style: bold; }
    Transcript > .transcript--head { color: $accent; text-style: bold; }
    Transcript > .transcript--tool { color: $primary; }
    Transcript > .transcript--tool-error { color: $error; }
    Transcript > .transcript--result { color: $foreground-muted; }
    Transcript > .transcript--streaming { color: $foreground; }
    Transcript > .transcript--cursor { background: $boost; }
    Transcript > .transcript--operator { color: $secondary; }
    Transcript > .transcript--refused { color: $error; }
    Transcript > .transcript--asking { color: $warning; }
    Transcript > .transcript--warning { color: $warning; text-style: bold; }
    Transcript > .transcript--decided { color: $success; }
    Transcript > .transcript--verify, Transcript > .transcript--memory,
    Transcript > .transcript--note { color: $foreground-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.run_id: int | None = None
        self.steps: dict[int, ShownStep] = {}
        self.cursor_step: int | None = None
        self.title = "Select a run, or press ctrl+n for a new one."
        self.streaming = ""
        self.run: RunView | None = None  # the run followed (its live part), if any
        self._schedule_live = Throttle(self, LIVE_INTERVAL, self._redraw_live)
        self._order: list[int] = []  # step numbers, ascending
        self._starts: list[int] = []  # the line each step starts on
        self._head: list[Strip] = []  # the title's lines
        self._tail: list[Strip] = []  # the streaming text's lines
        self._tail_y = 0  # the line the streaming text starts on
        self._styles: dict[str, Style] = {}
        self._base = Style()
        self._styles_stale = True

    # -- what is shown -------------------------------------------------------------------------

    @property
    def last_step(self) -> int:
        return self._order[-1] if self._order else 0

    @property
    def has_collapsed_tools(self) -> bool:
        return any(shown.collapsed for shown in self.steps.values() if shown.has_tools)

    def show_run(self, run_id: int, steps: list[StepData], goal: str) -> None:
        """Replace the content with ``run_id``'s steps (rebuilt from the store)."""
        self.run_id = run_id
        self.steps.clear()
        self.cursor_step = None
        self.title = f"run {run_id}: {goal}"
        self.streaming = ""
        if self.run is not None and self.run.id != run_id:
            self.run = None
        self.scroll_to(y=0, animate=False, immediate=True)
        self.add_steps(steps)

    def add_steps(self, steps: list[StepData]) -> None:
        """Add or replace steps (a replaced step keeps its shown results), dropping the oldest
        past ``MAX_STEPS``; a transcript scrolled to its end stays at its end."""
        at_end, anchor = self._at_end(), self._anchor()
        for data in steps:
            old = self.steps.get(data.step)
            self.steps[data.step] = ShownStep(data, old.expanded if old else frozenset())
        if len(self.steps) > MAX_STEPS:
            for step in sorted(self.steps)[: len(self.steps) - MAX_STEPS]:
                del self.steps[step]
        self._relayout()
        self._keep_view(at_end, anchor)

    def on_mount(self) -> None:
        self.set_interval(TICK_S, self.tick)

    def follow(self, run: RunView) -> None:
        """Show ``run``'s live part (queued messages, streaming text, status) below its steps;
        redrawn at most ~10 times a second."""
        self.run = run
        self._schedule_live()

    def set_streaming(self, text: str) -> None:
        """Show the text streaming in for the step in flight, below the steps (at once)."""
        if text == self.streaming:
            return
        self.streaming = text
        self._redraw_tail()

    def tick(self) -> None:
        """A live run's clocks moved on: redraw its header and live part."""
        if self.run is not None and self.run.live:
            self._schedule_live()

    def _redraw_live(self) -> None:
        run = self.run
        if run is None or run.id != self.run_id:
            return
        self.streaming = run.streaming
        head = self._render_head(self._width)
        if [s.text for s in head] != [s.text for s in self._head]:
            at_end, anchor = self._at_end(), self._anchor()
            self._relayout()  # the header's lines move every step
            self._keep_view(at_end, anchor)
            return
        self._redraw_tail()

    def _redraw_tail(self) -> None:
        at_end = self._at_end()
        rows = len(self._tail)
        tail = self._render_tail()
        if [s.text for s in tail] == [s.text for s in self._tail]:
            return
        self._tail = tail
        if len(self._tail) != rows:
            self._resize_virtual()
        self.refresh_lines(self._tail_y, max(rows, len(self._tail)))
        if self._tail and at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def text_of(self, step: int) -> str:
        """The step's lines as plain text (what the screen shows of it)."""
        return "\n".join(strip.text.rstrip() for strip in self.steps[step].lines)

    @property
    def live_text(self) -> str:
        """The live part below the steps, as plain text (what the screen shows of it)."""
        return "\n".join(strip.text.rstrip() for strip in self._tail)

    @property
    def header_text(self) -> str:
        return "\n".join(strip.text.rstrip() for strip in self._head)

    def lines_of(self, step: int) -> range:
        """The transcript lines the step occupies."""
        index = self._order.index(step)
        return range(self._starts[index], self._starts[index] + len(self.steps[step].lines))

    # -- steering the view ---------------------------------------------------------------------

    def scroll_to_step(self, step: int) -> None:
        """Make ``step`` the cursor and put its first line at the top of the view."""
        if step in self.steps:
            self.cursor_step = step
            self.scroll_to(y=self.lines_of(step).start, animate=False, immediate=True)
            self.refresh()

    def set_expanded(self, step: int, expanded: frozenset[int]) -> None:
        shown = self.steps[step]
        if shown.expanded != expanded:
            shown.expanded, shown.width = expanded, 0
            self._relayout()

    def set_all_expanded(self, expand: bool) -> None:
        """Show or hide every tool result, keeping the step at the top of the view there (or
        the end in view, when following)."""
        at_end, anchor = self._at_end(), self._anchor()
        for shown in self.steps.values():
            if shown.has_tools:
                shown.expanded = frozenset(range(len(shown.data.tools))) if expand else frozenset()
                shown.width = 0
        self._relayout()
        self._keep_view(at_end, anchor and (anchor[0], 0))

    def action_toggle_tool(self, step: int, index: int) -> None:
        if step in self.steps:
            self.set_expanded(step, self.steps[step].expanded ^ {index})

    def action_toggle_step(self) -> None:
        shown = self.steps.get(self.cursor_step) if self.cursor_step is not None else None
        if shown is not None and shown.has_tools:
            every = frozenset(range(len(shown.data.tools)))
            self.set_expanded(shown.data.step, frozenset() if shown.expanded else every)

    def action_move_cursor(self, by: int) -> None:
        """The next or previous step; with no cursor yet, the first or last step in view."""
        if not self._order:
            return
        if self.cursor_step in self.steps:
            index = self._order.index(self.cursor_step) + by
        else:
            top = self.scroll_offset.y + (self.size.height - 1 if by < 0 else 0)
            index = bisect_right(self._starts, top) - 1
        index = min(max(index, 0), len(self._order) - 1)
        self.cursor_step = self._order[index]
        self.refresh()
        lines = self.lines_of(self.cursor_step)
        self.scroll_to_region(
            Region(0, lines.start, 1, max(1, len(lines))), animate=False, immediate=True, top=False
        )

    def on_click(self, event: events.Click) -> None:
        step = event.style.meta.get(STEP_META)
        if step is not None and step != self.cursor_step:
            self.cursor_step = step
            self.refresh()

    def on_focus(self) -> None:
        self.refresh()  # the cursor step is highlighted while focused

    def on_blur(self) -> None:
        self.refresh()

    # -- layout --------------------------------------------------------------------------------

    @property
    def _width(self) -> int:
        return self.scrollable_content_region.width

    def _at_end(self) -> bool:
        return self.scroll_y >= self.max_scroll_y

    def _anchor(self) -> tuple[int, int] | None:
        """The step at the top of the view, and how many of its lines are above the view."""
        index = bisect_right(self._starts, self.scroll_offset.y) - 1
        if index < 0:
            return None
        return self._order[index], self.scroll_offset.y - self._starts[index]

    def _keep_view(self, at_end: bool, anchor: tuple[int, int] | None) -> None:
        """After lines changed: stay at the end when following, else keep the anchor step's
        lines where they were (steps dropped or redrawn above it move it)."""
        if at_end:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        elif anchor is not None and anchor[0] in self.steps:
            y = self.lines_of(anchor[0]).start + anchor[1]
            self.scroll_to(y=y, animate=False, immediate=True)

    def _relayout(self) -> None:
        """Render what is not rendered at this width, place every step's lines, and repaint."""
        width = self._width
        if width <= 0:
            return
        self._restyle()
        self._order = sorted(self.steps)
        self._head = self._render_head(width)
        self._starts = []
        y = len(self._head)
        for step in self._order:
            shown = self.steps[step]
            if shown.width != width:
                shown.lines, shown.width = self._render_step(shown, width), width
            self._starts.append(y)
            y += len(shown.lines) + 1  # a blank line after each step
        self._tail_y = y
        self._tail = self._render_tail()
        self._resize_virtual()
        self.refresh()

    def _resize_virtual(self) -> None:
        """Set the virtual size without a layout of the screen (which setting ``virtual_size``
        asks for: this widget's box never depends on its content); the scrollbar follows."""
        self.set_reactive(
            ScrollView.virtual_size, Size(self._width, self._tail_y + len(self._tail))
        )
        self.follow_virtual_size()

    def on_resize(self, event: events.Resize) -> None:
        self._relayout()

    def notify_style_update(self) -> None:
        """A theme or pseudo-class change (focus, hover): the parts' styles are read again,
        and the lines drawn again only if those changed."""
        self._styles_stale = True
        super().notify_style_update()
        self.call_later(self._relayout_if_restyled)

    def _relayout_if_restyled(self) -> None:
        if self._restyle():
            self._relayout()

    def _restyle(self) -> bool:
        """Read the parts' styles; True if they changed, and then every rendered step is
        stale."""
        if not self._styles_stale or not self.is_mounted:
            return False
        self._styles_stale = False
        styles = {
            part: self.get_component_rich_style(f"transcript--{part}", partial=True)
            for part in PARTS
        }
        base = self.rich_style
        if styles == self._styles and base == self._base:
            return False
        self._styles, self._base = styles, base
        for shown in self.steps.values():
            shown.width = 0
        return True

    # -- rendering -----------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        line_y = self.scroll_offset.y + y
        width = self._width
        if not self._head and width > 0:  # the first frame: its Resize lays the lines out after
            self._restyle()
            self._head = self._render_head(width)
        strip = self._line_at(line_y)
        if strip is None:
            strip = Strip.blank(width, self._base)
        elif strip.cell_length != width:
            strip = strip.crop_extend(0, width, self._base)
        if (selection := self.text_selection) is not None:
            strip = self._selected(strip, selection.get_span(line_y))
        return strip.apply_offsets(0, line_y)  # where a mouse selection starts and ends

    # -- selecting text with the mouse ---------------------------------------------------------

    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected text, as the lines show it (copied with the terminal's usual keys)."""
        lines = (self._line_at(y) for y in range(self.virtual_size.height))
        text = "\n".join(line.text.rstrip() if line else "" for line in lines)
        return selection.extract(text), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self.refresh()

    def _selected(self, strip: Strip, span: tuple[int, int] | None) -> Strip:
        """``strip`` with the characters ``span`` covers in the screen's selection style."""
        if span is None:
            return strip
        text = strip.text
        start, end = span
        end = len(text.rstrip()) if end == -1 else end  # to the line's end, not its padding
        cuts = [cell_len(text[:start]), cell_len(text[:end]), strip.cell_length]
        before, chosen, after = strip.divide(cuts)
        style = self.screen.get_component_rich_style("screen--selection")
        chosen = Strip(Segment.apply_style(chosen, post_style=style), chosen.cell_length)
        return Strip.join([before, chosen, after])

    def _line_at(self, y: int) -> Strip | None:
        if y < len(self._head):
            return self._head[y]
        if y >= self._tail_y:
            index = y - self._tail_y
            return self._tail[index] if index < len(self._tail) else None
        index = bisect_right(self._starts, y) - 1
        if index < 0:
            return None
        step = self._order[index]
        lines = self.steps[step].lines
        row = y - self._starts[index]
        if row >= len(lines):
            return None  # the blank line after the step
        if step == self.cursor_step and self.has_focus:
            line = lines[row]  # the cursor's background over the line's own
            return Strip(
                Segment.apply_style(line, post_style=self._styles["cursor"]), line.cell_length
            )
        return lines[row]

    def _render_head(self, width: int) -> list[Strip]:
        rows = [(self._title_text(), 0)]
        if meta := self._meta_text():
            rows.append((meta, 0))
        return self._render_rows(rows, self._base, width)

    def _title_text(self) -> Text:
        title = styled(self.title, self._styles["title"])
        if earlier := (self._order[0] - 1 if self._order else 0):  # not loaded, or dropped
            title.append(f"\n… {earlier} earlier steps are in the trace viewer (t)")
        return title

    def _meta_text(self) -> Text | None:
        """``ollama · qwen3:8b · running 1m 04s``: where the run's answers come from."""
        run = self.run
        if run is None or run.id != self.run_id:
            return None
        parts = [p for p in (run.provider, run.model) if p]
        took = duration(run.elapsed())
        parts.append(f"{run.status} {took}" if run.live and took else run.status)
        if run.follows is not None:
            parts.append(f"follows run {run.follows}")
        return styled(" · ".join(parts), self._styles.get("meta", Style()))

    def _render_tail(self) -> list[Strip]:
        """Queued operator messages, the streaming text, the status line."""
        if self._width <= 0:
            return []
        styles = self._styles
        rows: list[tuple[Text, int]] = []
        run = self.run if self.run is not None and self.run.id == self.run_id else None
        if run is not None:
            for message in run.queued:
                rows.append((styled(f"operator ▸ {message.text}", styles["operator"]), 2))
                rows.append((Text(_queued_note(run, message.delivered_step), styles["meta"]), 4))
        if self.streaming:
            rows.append((styled(self.streaming, styles.get("streaming", Style())), 2))
        for call in run.calls_in_progress() if run is not None else ():
            rows.append((Text(progress_line(call), styles["status"], no_wrap=True), 2))
        if run is not None and (status := status_line(run)):
            style = styles["status"] if run.live else styles["ended"]
            rows.append((Text(status, style), 0))
        return self._render_rows(rows, self._base, self._width) if rows else []

    def _render_step(self, shown: ShownStep, width: int) -> list[Strip]:
        data, styles = shown.data, self._styles
        rows = [(Text(f"step {data.step} · {data.tokens:,} tok", styles["head"]), 0)]
        rows += [(styled(f"operator ▸ {m}", styles["operator"]), 2) for m in data.operator_messages]
        if data.text:
            rows.append((styled(data.text), 2))
        elif not data.tools:
            rows.append((Text(NOTHING_TO_DO, styles.get("meta", Style())), 2))
        for index, tool in enumerate(data.tools):
            open_ = index in shown.expanded
            title = Text(
                f"{'▼' if open_ else '▶'} {tool_title(tool.name, tool.arguments)}",
                styles["tool-error" if tool.is_error else "tool"]
                + Style(meta={"@click": f"toggle_tool({data.step},{index})"}),
                no_wrap=True,
                overflow="ellipsis",
            )
            rows.append((title, 2))
            if open_:
                rows.append((styled(_preview(tool.result), styles["result"]), 4))
        rows += [(styled(line, styles.get(style, Style())), 2) for style, line in data.notes]
        return self._render_rows(rows, self._base + Style.from_meta({STEP_META: data.step}), width)

    def _render_rows(self, rows: list[tuple[Text, int]], base: Style, width: int) -> list[Strip]:
        """Each text wrapped to the width less its indent, over ``base`` (the widget's colours
        and the step's meta), one strip per line (wrapping the texts directly takes about
        two thirds of the time of rendering them as Rich ``Padding`` rows in a ``Group``)."""
        console = self.app.console
        strips = []
        for text, indent in rows:
            pad = [Segment(" " * indent, base)] if indent else []
            style = base + console.get_style(text.style)  # render() leaves the text's own out
            for line in text.wrap(console, max(1, width - indent)):
                segments = pad + list(Segment.apply_style(line.render(console), style))
                strips.append(Strip(segments).adjust_cell_length(width, base))
        return strips


def status_line(run: RunView) -> str:
    """What the run is doing now, or how it ended (none for a run that finished well)."""
    if run.live:
        if run.interrupt_requested:
            return "■ interrupting…"
        step = run.in_flight()
        if step is None:
            return ""
        if step.asking:
            waited = duration(since(step.asking_since))
            return f"? step {step.step} waits for your approval · {waited}".rstrip(" ·")
        took = duration(since(step.started_at))
        doing = "running tools" if step.tools else "writing" if step.writing else "thinking"
        return f"⋯ step {step.step}: {doing}… {took}".rstrip()
    took = duration(run.elapsed())
    after = f" after {took}" if took and took != "0s" else ""
    if run.cancelled_by_operator:
        error = run.error or ""
        if error.startswith(OPERATOR_CANCEL) and error != OPERATOR_CANCEL:
            return f"■ {error}"  # "… while paused": it had stopped, its run time says nothing
        return f"■ cancelled by the operator{after}"
    if run.status == "cancelled":
        return f"■ cancelled{after}"
    if run.status == "failed":
        return _ended(run, after) + f": {run.error or 'no reason recorded'}"
    if run.status == "paused" and run.waiting_on is not None:
        child = run.waiting_on
        return (
            f"‖ paused with its sub-agent run {child}: once run {child}'s request is decided,"
            f" run {child} goes on, then this run"
        )
    if run.status == "paused":
        return "‖ paused: its request waits in the inbox; the run resumes once it is decided"
    if run.status == "interrupted":
        return "↯ interrupted: its process died; R resumes it"
    if run.status == "finished" and run.outcome not in ("success", "finished", None):
        # a cut answer, a step cap, a budget, a denial: said, with why
        return _ended(run, after) + (f": {run.error}" if run.error else "")
    return ""


def _ended(run: RunView, after: str) -> str:
    """The outcome's mark and word (``core.endings``, as the run tree shows them), and how long
    the run took; its own sentence where there is no error to say more."""
    ending = ending_of(run.outcome or run.status)
    if ending is None:
        return f"{run.status}{after}"
    if run.error:
        return f"{ending.mark} {ending.word}{after}"
    return f"{ended_line(run.status, run.outcome)}{after}"


def _queued_note(run: RunView, delivered_step: int | None) -> str:
    if delivered_step is not None:
        return f"delivered to step {delivered_step}"
    if run.live or run.status == "paused":
        return "queued: delivered at the run's next step"
    return f"not delivered: the run ended ({run.status}) first"


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
