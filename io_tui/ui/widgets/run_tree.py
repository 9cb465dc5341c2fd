"""The run tree: runs → steps → child runs, with live status badges and per-node tokens. A fork
sits under the run it left from, its label starting with the step it left from (``⑂ step 3``).

A live run's label carries how long it has run (its provider and model head the transcript);
the step in flight says what it waits for and since when (``thinking… 12s``, ``writing… 40s``,
``? asking 1m 05s``); a step the run ended before committing says so (``interrupted``). A tick
relabels live runs once a second, and only the lines whose text changed are repainted.

Nodes are keyed (``run_nodes``, ``step_nodes``) and relabelled in place, and only when what the
label shows changed (``_shown``); the tree is never cleared and rebuilt. ``Tree`` renders only
visible lines, and ``get_label_width`` is the label's cell length (no render per node when the
tree's lines are rebuilt), so 10,000 steps stay responsive.

Textual's ``Tree`` repaints every visible line when one node changes, so this widget reaches
into its private parts to repaint less: ``_tree_lines``, ``_render_line`` and
``_refresh_line`` on the tree, ``_pseudo_class_state`` (set by ``Tree.render_lines`` for a
frame), and a node's ``_id``, ``_hover``, ``_selected``, ``_updates``, ``_label`` and ``_line``
(what a line shows, and a relabel without a repaint of the node's subtree).
``tests/ui/test_textual_private.py`` fails first if Textual renames one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Self

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Region
from textual.strip import Strip
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from io_tui.core import ending_of
from io_tui.ui.state import RunView, StepView, counted, duration, since
from io_tui.ui.terminal_text import plain
from io_tui.ui.widgets.scrollbars import ThrottledScrollbars

TICK_S = 1.0  # seconds between relabels of live runs (their elapsed times)
BADGES = {
    "queued": ("◌", "queued"),
    "running": ("●", "running"),
    "asking": ("?", "asking"),
    "paused": ("‖", "paused"),
    "interrupted": ("↯", "interrupted"),
    "finished": ("✓", "finished"),
    "failed": ("✗", "failed"),
    "cancelled": ("■", "cancelled"),
}


# an outcome's tone (``core.endings``) drawn in the colour of the status that carries it
TONES = {"success": "finished", "warning": "interrupted", "error": "failed", "muted": "cancelled"}


@dataclass(frozen=True, slots=True)
class NodeRef:
    run_id: int
    step: int | None = None


class RunTree(ThrottledScrollbars, Tree[NodeRef]):
    DEFAULT_CSS = """
    RunTree { scrollbar-size-vertical: 1; overflow-x: hidden; }
    RunTree > .tree--guides { color: $foreground-darken-3; }
    """

    BINDINGS = [
        Binding(
            "left",
            "fold",
            "Fold",
            show=False,
            id="tree.fold",
            tooltip="Fold the run (on a step: go to it)",
        ),
        Binding(
            "right",
            "unfold",
            "Unfold",
            show=False,
            id="tree.unfold",
            tooltip="Unfold the run, then go to its first step",
        ),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        self._widths: dict[int, int] = {}  # node id → label width, set with the label
        super().__init__("runs", id=id)
        self.show_root = False
        self.guide_depth = 2
        self.run_nodes: dict[int, TreeNode[NodeRef]] = {}
        self.step_nodes: dict[tuple[int, int], TreeNode[NodeRef]] = {}
        self.styles_by_status: dict[str, str] = dict(_FALLBACK_STYLE)
        self.views: dict[int, RunView] = {}
        self._shown: dict[NodeRef, tuple[object, ...]] = {}  # what each label shows now
        self._lines_pending = False
        self._painted: list[tuple[object, ...] | None] = []  # what each visible line showed
        self._painted_frame: tuple[int, ...] | None = None  # top, width, height, virtual width
        self._kept_lines: LRUCache[tuple[object, ...], Strip] = LRUCache(1024)
        self._line_style = Style()
        self._live: set[int] = set()  # the runs last labelled live: they fold when they end

    def on_mount(self) -> None:
        self._restyle()
        self.app.theme_changed_signal.subscribe(self, lambda _theme: self._restyle())
        self.set_interval(TICK_S, self.tick)

    def tick(self) -> None:
        """Relabel the live runs and their steps in flight (elapsed times move on)."""
        for run in self.views.values():
            if run.live:
                self.upsert_run(run)
                if (step := run.in_flight()) is not None:
                    self.upsert_step(run, step)

    def _restyle(self) -> None:
        """Badge colours come from the theme's variables; relabel every run on a theme change."""
        variables = self.app.theme_variables
        self.styles_by_status = {
            status: _plain_colour(variables.get(var), _FALLBACK_STYLE[status])
            for status, var in _STATUS_VARIABLE.items()
        }
        for run in self.views.values():
            self._shown.pop(NodeRef(run.id), None)
            self.upsert_run(run)

    def refresh(
        self,
        *regions: Region,
        repaint: bool = True,
        layout: bool = False,
        recompose: bool = False,
    ) -> Self:
        """``Tree`` asks for a layout of the whole screen whenever a node is added (every widget
        re-arranged and repainted, ~20-40 ms with a full transcript), then repaints all its
        lines. This tree's box comes from the screen's CSS, never from its content, so it
        repaints itself instead: only the visible lines that now show something else."""
        if layout and not recompose and not regions and self.is_mounted and self._box_is_fixed():
            if not self._lines_pending:
                self._lines_pending = True
                self.call_later(self._repaint_changed)
            return self
        return super().refresh(*regions, repaint=repaint, layout=layout, recompose=recompose)

    def _box_is_fixed(self) -> bool:
        width, height = self.styles.width, self.styles.height
        return width is not None and height is not None and not (width.is_auto or height.is_auto)

    def _repaint_changed(self) -> None:
        """Rebuild the lines, move the scrollbar thumbs as a layout would, and repaint the
        visible lines whose node, label, guides or place changed (all of them after a scroll,
        a resize or a restyle)."""
        self._lines_pending = False
        lines = self._tree_lines  # rebuilds the lines, which sets virtual_size
        self.follow_virtual_size()
        top, (width, height) = self.scroll_offset.y, self.size
        shown = [_signature(lines, y) for y in range(top, top + height)]
        frame = (top, width, height, self.virtual_size.width)
        if frame != self._painted_frame:
            super().refresh()
        else:
            for row, (before, now) in enumerate(zip(self._painted, shown, strict=True)):
                if before != now:
                    super().refresh(Region(0, row, width, 1))
        self._painted, self._painted_frame = shown, frame

    def render_lines(self, crop: Region) -> list[Strip]:
        self._line_style = self.rich_style  # once a frame: ``Tree`` computes it for every line
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        return self._render_line(y + scroll_y, scroll_x, scroll_x + width, self._line_style)

    def _render_line(self, y: int, x1: int, x2: int, base_style: Style) -> Strip:
        """Rendered lines are kept by what they show. ``Tree`` forgets every line whenever a
        node is added, so a live run adding steps re-rendered all visible lines each frame;
        here a line is drawn again only if its node, position, guides, cursor or hover changed
        (an ancestor's label changing does not change this line)."""
        lines = self._tree_lines
        if y >= len(lines):
            return super()._render_line(y, x1, x2, base_style)
        line = lines[y]
        key = (
            y,
            x1,
            x2,
            self.size.width,
            self.virtual_size.width,
            self.cursor_line == y,
            self.hover_line == y,
            self._pseudo_class_state,  # set by Tree.render_lines for the frame
            base_style,
            line.last,
            # ancestors draw only the guides; the node itself, its label and icon
            tuple((n._id, n.is_last, n._hover, n._selected) for n in line.path),
            line.node._updates,
            line.node.is_expanded,
            line.node.allow_expand,
        )
        strip = self._kept_lines.get(key)
        if strip is None:
            strip = self._kept_lines[key] = super()._render_line(y, x1, x2, base_style)
        return strip

    def notify_style_update(self) -> None:
        self._kept_lines.clear()  # a theme or CSS change restyles every line
        self._painted_frame = None
        super().notify_style_update()

    def get_label_width(self, node: TreeNode[NodeRef]) -> int:
        """The label's width, measured when the label was set (Tree asks for every node's
        width each time it rebuilds its lines, and would render each label to measure it)."""
        width = self._widths.get(node.id)
        if width is None:
            label = node.label
            width = label.cell_len if isinstance(label, Text) else len(str(label))
            self._widths[node.id] = width
        return width + (len(self.ICON_NODE) if node.allow_expand else 0)

    def _set_label(self, node: TreeNode[NodeRef], label: Text) -> None:
        """Relabel a node and repaint its own line. ``TreeNode.set_label`` repaints every visible
        line under the node, and a live run's label changes with each step while its steps fill
        the tree. (A rebuild in flight repaints the line anyway: ``_signature`` has ``_updates``.)"""
        self._widths[node.id] = label.cell_len
        node._label = self.process_label(label)
        node._updates += 1
        if node._line >= 0 and not self._lines_pending:
            self._refresh_line(node._line)

    def upsert_run(self, run: RunView) -> TreeNode[NodeRef]:
        self.views[run.id] = run
        ref = NodeRef(run.id)
        label = run_label(run, self.styles_by_status)
        shown = (label.plain,)
        node = self.run_nodes.get(run.id)
        if node is None:
            parent = self.root
            above = run.parent_run_id if run.parent_run_id is not None else run.forked_from
            if above is not None and above in self.run_nodes:  # a sub-agent's, a fork's run
                parent = self.run_nodes[above]
            node = parent.add(label, data=ref, expand=self._expand_new(run))
            self.run_nodes[run.id] = node
        elif self._shown.get(ref) != shown:
            self._set_label(node, label)
        self._shown[ref] = shown
        self._fold_if_ended(run, node)
        return node

    def _fold_if_ended(self, run: RunView, node: TreeNode[NodeRef]) -> None:
        """A run that ends folds to its line (the runs that follow stay in sight), unless the
        cursor is on it or one of its steps: the operator is reading it."""
        if run.live:
            self._live.add(run.id)
            return
        if run.id not in self._live:
            return
        self._live.discard(run.id)
        cursor = self.cursor_node
        ref = cursor.data if cursor is not None else None
        reading = ref is not None and ref.run_id == run.id
        if node.is_expanded and not reading:
            node.collapse()

    def upsert_step(self, run: RunView, step: StepView) -> TreeNode[NodeRef]:
        key = (run.id, step.step)
        ref = NodeRef(run.id, step.step)
        label = step_label(step)
        shown = (label.plain, step.asking)  # the plain text, and its one style that varies
        node = self.step_nodes.get(key)
        if node is None:
            parent = self.run_nodes.get(run.id) or self.upsert_run(run)
            node = parent.add_leaf(label, data=ref)
            self.step_nodes[key] = node
        elif self._shown.get(ref) != shown:
            self._set_label(node, label)
        self._shown[ref] = shown
        return node

    def _expand_new(self, run: RunView) -> bool:
        """A new live run opens unless another live run is open already: with several runs
        at once, one shows its steps and the others a line each (enter opens one). Every
        open step is a line the tree re-walks whenever it changes."""
        if not run.live:
            return False
        return not any(
            self.views[other].live and node.is_expanded
            for other, node in self.run_nodes.items()
            if other in self.views
        )

    def action_fold(self) -> None:
        """Left, as in a file tree: an open run folds; on a step, or a folded run, the cursor
        goes to its parent."""
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and node.is_expanded:
            node.collapse()
        elif node.parent is not None and node.parent is not self.root:
            self.move_cursor(node.parent)
            self.scroll_to_node(node.parent, animate=False)

    def action_unfold(self) -> None:
        """Right: a folded run opens; an open one moves the cursor to its first step."""
        node = self.cursor_node
        if node is None or not node.allow_expand:
            return
        if not node.is_expanded:
            node.expand()
        elif node.children:
            self.move_cursor(node.children[0])
            self.scroll_to_node(node.children[0], animate=False)

    def scroll_to_run(self, run_id: int) -> None:
        """Scroll a run's line into view, the cursor left where it is. A node added just now
        has no line until the lines are rebuilt (``Tree.scroll_to_node`` would do nothing):
        they are rebuilt first."""
        node = self.run_nodes.get(run_id)
        if node is None:
            return
        self._tree_lines  # noqa: B018 (rebuilds the lines: the node's line, the virtual size)
        self.scroll_to_node(node, animate=False)

    def select_ref(self, ref: NodeRef) -> None:
        node = (
            self.step_nodes.get((ref.run_id, ref.step))
            if ref.step is not None
            else self.run_nodes.get(ref.run_id)
        )
        if node is None:
            return
        if node.parent is not None and not node.parent.is_expanded:
            node.parent.expand()
        self.move_cursor(node)
        self.scroll_to_node(node, animate=False)


def _signature(lines: list[Any], y: int) -> tuple[object, ...] | None:
    """What line ``y`` shows, but for the cursor and hover (``Tree`` repaints those itself)."""
    if y >= len(lines):
        return None
    line = lines[y]
    node = line.node
    path = tuple((n._id, n.is_last) for n in line.path)
    return (node._id, node._updates, node.is_expanded, line.last, path)


def run_label(run: RunView, styles: dict[str, str]) -> Text:
    """Badge, id, status, size, then the goal: a narrow pane cuts the goal, not the figures.
    A run that stopped shows its outcome's own mark and word (``core.endings``: a cut answer is
    ``✂ answer cut``, not ``✓``). A queue run says which worker drives it (``on HOST pid N``)
    or that it is held; a follow-up, the run it follows."""
    glyph, status = BADGES.get(run.status, ("·", run.status))
    style = styles.get(status, "")
    ending = ending_of(run.outcome) if not run.live and run.status != "queued" else None
    if ending is not None:
        glyph, status = ending.mark, ending.word
        style = styles.get(TONES.get(ending.tone, run.status), style)
    goal = plain(run.goal)  # a goal is the user's or a parent run's text
    goal = goal if len(goal) <= 48 else goal[:47] + "…"
    clock = _clock(run)  # a live run's: right after its status, the last thing a pane cuts
    return Text.assemble(
        (f"{glyph} ", f"bold {style}"),
        (f"⑂ step {run.fork_step} " if run.forked_from is not None else "", "italic"),
        (f"#{run.id} ", "bold"),
        (f"{status} ", style),
        (f"{clock} · " if clock else "", style),
        (f"{run.worker} · " if run.worker else "", "dim"),
        (f"· waits on #{run.waiting_on} · " if run.waiting_on and not run.live else "", style),
        (f"follows #{run.follows} · " if run.follows is not None else "", "dim"),
        (f"{counted(run.step_count, 'step')} · {_tok(run.tokens)} ", "dim"),
        goal,
    )


def step_label(step: StepView) -> Text:
    doing = _doing(step)
    done = "interrupted" if step.interrupted else "final"  # a cancel cut its answer short
    tools = ", ".join(step.tools) if step.tools else (done if step.committed else doing)
    if len(tools) > 40:
        tools = tools[:39] + "…"
    if step.tools and step.ended is not None:
        tools = f"{tools} · {_doing(step)}"
    return Text.assemble(
        (f"step {step.step:>3} ", "bold" if step.asking else ""),
        (f"? asking {duration(since(step.asking_since))} " if step.asking else "", "bold"),
        tools,
        " ",
        (_tok(step.tokens) if step.tokens else "", "dim"),
    )


def _clock(run: RunView) -> str:
    """A live run's elapsed time."""
    return duration(run.elapsed()) if run.live else ""


def _doing(step: StepView) -> str:
    """What an uncommitted step is at: ``thinking… 12s``, ``writing… 3s``, or how it ended."""
    if step.committed:
        return ""
    if step.ended is not None:
        return "interrupted" if step.ended == "cancelled" else f"not finished ({step.ended})"
    if step.asking or step.tools:
        return ""  # the badge, or the tools' names, say it
    took = duration(since(step.started_at))
    return f"{'writing' if step.writing else 'thinking'}… {took}".rstrip()


def _plain_colour(value: str | None, fallback: str) -> str:
    """Rich styles take #rrggbb; theme variables may carry alpha or 'auto'."""
    if value and value.startswith("#") and len(value) == 7:
        return value
    return fallback


def _tok(tokens: int) -> str:
    if tokens >= 10_000:
        return f"{tokens / 1000:.0f}k tok"
    if tokens >= 1_000:
        return f"{tokens / 1000:.1f}k tok"
    return f"{tokens} tok"


_STATUS_VARIABLE = {
    "queued": "foreground-darken-3",
    "running": "accent",
    "asking": "warning",
    "paused": "secondary",
    "interrupted": "warning",
    "finished": "success",
    "failed": "error",
    "cancelled": "foreground-darken-3",
}
_FALLBACK_STYLE = {
    "queued": "grey50",
    "running": "cyan",
    "asking": "yellow",
    "paused": "magenta",
    "interrupted": "yellow",
    "finished": "green",
    "failed": "red",
    "cancelled": "grey50",
}
