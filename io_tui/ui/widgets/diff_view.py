"""A diff of a proposed write against the current file: unified or side by side (difflib).

Both sides are shown with their escape sequences and control characters written visibly: an
operator approves the bytes that land, so a line hidden by SGR 8 shows as ``\x1b[8m…``.
"""

from __future__ import annotations

import difflib
from bisect import bisect_right
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from io_tui.ui.terminal_text import shown

ADDED = "$text-success on $success-muted"
REMOVED = "$text-error on $error-muted"
HUNK = "$text-accent"
MUTED = "$text-muted"


@dataclass(frozen=True, slots=True)
class DiffStats:
    added: int
    removed: int

    def describe(self) -> str:
        return f"+{self.added} −{self.removed}"


def diff_stats(old: str, new: str) -> DiffStats:
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return DiffStats(added, removed)


def unified(old: str, new: str, path: str, context: int = 3) -> Content:
    """A colored unified diff; a new file is all additions."""
    lines = list(
        difflib.unified_diff(
            old.splitlines(),
            new.splitlines(),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
            lineterm="",
            n=context,
        )
    )
    if not lines:
        return Content.styled("(no change: the content is identical to the file)", MUTED)
    parts: list[Content] = []
    for line in lines:
        if line.startswith(("+++", "---")):
            style = "bold"
        elif line.startswith("@@"):
            style = HUNK
        elif line.startswith("+"):
            style = ADDED
        elif line.startswith("-"):
            style = REMOVED
        else:
            style = ""
        parts.append(Content.styled(line, style) if style else Content(line))
    return Content("\n").join(parts)


def side_by_side(old: str, new: str, context: int = 3) -> tuple[Content, Content]:
    """Two aligned columns (old, new), one row per line, with line numbers and gaps for hunks."""
    a, b = old.splitlines(), new.splitlines()
    left: list[Content] = []
    right: list[Content] = []
    width = max(3, len(str(max(len(a), len(b), 1))))

    def row(side: list[Content], number: int | None, text: str, style: str) -> None:
        gutter = f"{number:>{width}} " if number is not None else " " * (width + 1)
        body = Content.styled(text, style) if style else Content(text)
        side.append(Content.assemble(Content.styled(gutter, MUTED), body))

    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    groups = list(matcher.get_grouped_opcodes(context))
    if not groups:
        same = Content.styled("(no change)", MUTED)
        return same, same
    for index, group in enumerate(groups):
        if index:
            row(left, None, "⋯", HUNK)
            row(right, None, "⋯", HUNK)
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for offset in range(i2 - i1):
                    row(left, i1 + offset + 1, a[i1 + offset], "")
                    row(right, j1 + offset + 1, b[j1 + offset], "")
                continue
            span = max(i2 - i1, j2 - j1)
            for offset in range(span):
                i, j = i1 + offset, j1 + offset
                if i < i2:
                    row(left, i + 1, a[i], REMOVED)
                else:
                    row(left, None, "", "")
                if j < j2:
                    row(right, j + 1, b[j], ADDED)
                else:
                    row(right, None, "", "")
    return Content("\n").join(left), Content("\n").join(right)


def first_change(content: Content) -> int:
    """The line of ``content`` (a diff from ``unified`` or a column of ``side_by_side``) that
    holds the first added or removed line; 0 when there is none."""
    starts = [0] + [n + 1 for n, char in enumerate(content.plain) if char == "\n"]
    changed = [
        bisect_right(starts, span.start) - 1
        for span in content.spans
        if str(span.style) in (ADDED, REMOVED)
    ]
    return min(changed, default=0)


SPLIT_MIN_SIDE = 60  # cells a side needs for the longest changed line (or this many) to show


class DiffView(VerticalScroll):
    """Shows ``new`` against ``old`` (None: the file does not exist yet). ``split`` asks for the
    side-by-side layout; it is shown when each side holds the longest changed line (or at least
    60 cells), else the unified diff is shown with a line saying why. Either opens at its first
    change (one line of context above it)."""

    DEFAULT_CSS = """
    DiffView { height: auto; max-height: 100%; }
    DiffView > .diff--unified { width: 1fr; height: auto; text-wrap: nowrap; }
    DiffView > .diff--note { dock: top; height: 1; color: $text-muted; display: none; }
    DiffView > Horizontal { height: auto; }
    DiffView > Horizontal > Static { width: 1fr; height: auto; text-wrap: nowrap;
        text-overflow: ellipsis; }
    DiffView > Horizontal > .diff--old { border-right: vkey $foreground 20%; }
    DiffView.-split > .diff--unified { display: none; }
    DiffView.-unified > Horizontal { display: none; }
    DiffView.-narrow > .diff--note { display: block; }
    """

    split: reactive[bool] = reactive(False)

    def __init__(
        self,
        old: str | None,
        new: str,
        path: str,
        *,
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        # the bytes a write lands, escapes and controls shown (``\x1b[8m``): none acts here
        old = None if old is None else shown(old)
        new = shown(new)
        self.old = old
        self.new = new
        self.path = path
        self._unified = unified(old or "", new, path)
        self._sides = side_by_side(old or "", new)
        self._first = (first_change(self._unified), first_change(self._sides[0]))
        self._longest = _longest_change(old or "", new)
        self._opening = True  # scrolling to the first change, until it could

    @property
    def stats(self) -> DiffStats:
        return diff_stats(self.old or "", self.new)

    @property
    def shows_split(self) -> bool:
        """Whether the side-by-side layout is on screen (asked for, and wide enough)."""
        return self.split and self._fits_split(self.size.width)

    def _fits_split(self, width: int) -> bool:
        gutter = (
            max(3, len(str(max(len((self.old or "").splitlines()), len(self.new.splitlines()), 1))))
            + 1
        )
        side = (width - 1) // 2 - gutter
        return side >= min(self._longest, SPLIT_MIN_SIDE)

    def compose(self) -> ComposeResult:
        yield Static(
            Content.styled("side by side needs a wider window: the diff is unified", MUTED),
            classes="diff--note",
        )
        yield Static(self._unified, classes="diff--unified")
        left, right = self._sides
        with Horizontal():
            yield Static(left, classes="diff--old")
            yield Static(right, classes="diff--new")

    def watch_split(self, split: bool) -> None:
        self._layout()
        self._opening = True
        self.call_after_refresh(self.scroll_to_first_change)

    def on_resize(self) -> None:
        self._layout()
        if self._opening:
            self.call_after_refresh(self.scroll_to_first_change)

    def _layout(self) -> None:
        shown = self.shows_split
        self.set_class(shown, "-split")
        self.set_class(not shown, "-unified")
        self.set_class(self.split and not shown and self.size.width > 0, "-narrow")

    def on_mount(self) -> None:
        self._layout()
        self.call_after_refresh(self.scroll_to_first_change)

    def scroll_to_first_change(self) -> None:
        """Scroll to the first change; until the diff is laid out tall enough to get there,
        each resize tries again."""
        line = self._first[1] if self.shows_split else self._first[0]
        target = max(0, line - 1)
        self.scroll_to(y=target, animate=False, immediate=True)
        self._opening = self.max_scroll_y < target

    def toggle(self) -> None:
        self.split = not self.split


def _longest_change(old: str, new: str) -> int:
    """The longest line the diff adds or removes, in characters."""
    a, b = old.splitlines(), new.splitlines()
    longest = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            longest = max([longest, *map(len, a[i1:i2]), *map(len, b[j1:j2])])
    return longest
