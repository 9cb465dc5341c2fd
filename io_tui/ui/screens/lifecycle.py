"""Why did it forget X? One entry's lifecycle across the run's requests, and the compaction ledger.

Opened from the inspector with ``l`` on the highlighted entry (or on nothing, to search): the
query box takes a call id or text (found in targets, call arguments and recorded results); the
table lists the entries it names; the right side shows the highlighted one's phases (full →
capped → superseded by step N → collapsed → folded into summary K → recalled by handle) and the
ledger of what each summary replaced. Pure over the trace the inspector already loaded
(``core/steering/lifecycle.py``), computed in a thread worker.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.getters import query_one
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Input, Static

from io_tui.core import Lifecycle, LifecycleReport, lifecycles
from io_tui.ui.answers import on_answer
from io_tui.ui.state import counted
from io_tui.ui.terminal_text import plain
from io_tui.ui.widgets.footer import ScreenFooter
from io_tui.ui.widgets.table import Table
from io_tui.ui.widgets.title_bar import TitleBar

MATCH_COLUMNS = (
    ("step", 5, None),
    ("kind", 4, None),
    ("target", 3, 8),
    ("now", 6, 10),
    ("matched", 1, None),
)
NARROW = 110  # columns: below this the lifecycle goes under the table
_STATE_STYLES = {"full": "green", "capped": "yellow", "summary": "magenta", "collapsed": "cyan", "dropped": "red"}  # fmt: skip


class LifecycleScreen(Screen[None]):
    CSS_PATH = "lifecycle.tcss"
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="lifecycle.close", tooltip="Back to the inspector"),
        Binding("slash", "search", "Search", id="lifecycle.search", tooltip="Search by call id or text (targets, arguments, results)"),
    ]  # fmt: skip

    class Found(Message):
        def __init__(self, report: LifecycleReport) -> None:
            super().__init__()
            self.report = report

    query_box = query_one("#query", Input)
    matches = query_one("#matches", Table)
    story = query_one("#story", Static)
    ledger = query_one("#ledger", Static)

    def __init__(self, trace: dict[str, Any], query: str = "") -> None:
        super().__init__()
        self.trace = trace
        self.query_text = query
        self.report: LifecycleReport | None = None
        self.shown: dict[str, Lifecycle] = {}

    def compose(self) -> ComposeResult:
        yield TitleBar()
        yield Input(
            self.query_text,
            placeholder="call id, or text in a target, the call's arguments or its result",
            id="query",
        )
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield Table(id="matches", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="right"):
                yield Static("", id="story")
                yield Static("", id="ledger")
        yield ScreenFooter()

    def on_mount(self) -> None:
        self.sub_title = f"run {self.trace['run']['id']} · why did it forget it?"
        for column, priority, shrink_to in MATCH_COLUMNS:
            self.matches.add_column(column, key=column, priority=priority, shrink_to=shrink_to)
        self.matches.border_title = "Entries"
        self.find(self.query_text)
        if self.query_text:
            self.matches.focus()
        else:
            self.query_box.focus()

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < NARROW, "-narrow")

    @work(group="lifecycle", exclusive=True, thread=True, exit_on_error=False)
    def find(self, query: str) -> None:
        self.post_message(self.Found(lifecycles(self.trace, query)))

    @on(Input.Submitted, "#query")
    def _on_query(self, event: Input.Submitted) -> None:
        self.query_text = event.value.strip()
        self.find(self.query_text)
        self.matches.focus()

    @on_answer(Found)
    def _on_found(self, message: Found) -> None:
        report = self.report = message.report
        wanted = {m.call_id: m for m in report.matches}
        table = self.matches
        if [k.value for k in table.rows] != list(wanted):  # a new answer: in its own order
            table.clear()
        present = {k.value for k in table.rows}
        for call_id, entry in wanted.items():
            cells = (str(entry.step), entry.kind, plain(entry.target), _now(entry), entry.matched)
            if call_id in present:  # the same answer again: keep cursor and scroll
                for (column, _, _), value in zip(MATCH_COLUMNS, cells, strict=True):
                    table.update_cell(call_id, column, value)
            else:
                table.add_row(*cells, key=call_id)
        self.shown = wanted
        more = f" (+{report.more} more)" if report.more else ""
        table.border_title = f"Entries · {len(wanted)}{more}"
        self.ledger.update(ledger_text(report))
        if not wanted:
            self.story.update(_nothing(report.query))
            return
        row = table.coordinate_to_cell_key(Coordinate(table.cursor_row, 0)).row_key.value
        self.show(wanted.get(str(row)) or report.matches[0])

    @on(DataTable.RowHighlighted, "#matches")
    def _on_highlighted(self, event: DataTable.RowHighlighted) -> None:
        entry = self.shown.get(str(event.row_key.value))
        if entry is not None:
            self.show(entry)

    def show(self, entry: Lifecycle) -> None:
        self.story.update(lifecycle_text(entry))

    def action_search(self) -> None:
        self.query_box.focus()

    def action_close(self) -> None:
        self.app.pop_screen()


def _now(entry: Lifecycle) -> Text:
    state = entry.phases[-1].state if entry.phases else ""
    return Text(entry.now, style=_STATE_STYLES.get(state, "dim"))


def _nothing(query: str) -> Text:
    if not query:
        return Text("Type a call id or some text and press enter.", style="dim")
    return Text(
        f"No entry matches {query!r}: searched the call ids, then the targets, arguments and "
        "recorded results of the run's tool calls.",
        style="bold",
    )


def lifecycle_text(entry: Lifecycle) -> Text:
    """The entry's head, its story in one line, then one line per phase and recall."""
    out = Text.assemble(
        (plain(entry.call), "bold"),
        f"  · step {entry.step} · {entry.call_id} · matched by {entry.matched}\n",
        (entry.story(), "italic"),
        "\n\n",
    )
    for phase in entry.phases:
        many = "s" if phase.requests != 1 else ""
        out.append(phase.label(), style=_STATE_STYLES.get(phase.state, "bold"))
        out.append(f" · the request{many} of {phase.span()} ({phase.requests})\n", style="dim")
        if phase.reason and phase.reason != phase.label():
            out.append(f"  {plain(phase.reason)}\n", style="dim")
    if not entry.phases:
        out.append("never sent: no request came after its step\n", style="dim")
    for recall in entry.recalls:
        page = "" if recall.offset is None else f", offset {recall.offset:,}"
        out.append(
            f"recalled by handle at step {recall.step} ({recall.call_id}{page})\n", style="bold"
        )
    if any(p.summary is not None for p in entry.phases):
        named = ", ".join(str(k) for k in entry.named_by) or "none"
        out.append(f"\nsummaries whose text names {plain(entry.target)}: {named}\n")
    return out


def ledger_text(report: LifecycleReport) -> Text:
    """What each summary replaced, oldest first."""
    out = Text("\ncompaction ledger\n", style="bold")
    if not report.ledger:
        out.append("no summary: nothing of this run was folded", style="dim")
        return out
    for fold in report.ledger:
        rewrote = f", rewrote summary {fold.rewrote}" if fold.rewrote is not None else ""
        out.append(f"summary {fold.through}", style="bold magenta")
        out.append(
            f" (steps {fold.first}–{fold.through}, {fold.source or '?'}{rewrote}) · first sent"
            f" for step {fold.written_at} · carried by {counted(fold.carried_by, 'request')} ·"
            f" {fold.est_tokens:,} tok\n"
        )
        out.append(f"  replaced: {plain(fold.replaced_text())}\n", style="dim")
    return out
