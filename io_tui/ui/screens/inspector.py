"""The context inspector: what the model was shown on one request, and why.

Left: the request's manifest as a keyed table (filter by state with ``f``, by role or authority
with ``a``) and the sections, each with its role (DESIGN §3.2).
Right: the selected entry's full text (Pygments-highlighted by file type) or a stub's reason
(``j`` jumps to the step that superseded or invalidated it), and a diff against the previous
request. Each request is read from the store alone, in a worker (core ``step_request``: a long
run's requests are never all rebuilt to show one); the lifecycle (``l``) builds the run's trace
when it opens.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.getters import query_one
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static, TabbedContent, TabPane
from textual.widgets.data_table import RowKey

from io_tui.core import (
    ManifestEntry,
    StepRequest,
    Store,
    TraceNotFound,
    build_trace,
    limits_notes,
    rewrite_line,
    step_request,
)
from io_tui.ui.answers import on_answer
from io_tui.ui.manifest import (
    FILTERS,
    diff_requests,
    entry_text,
    keyed_entries,
    label_filters,
    label_matches,
    matches,
    section_text,
    sent_text,
    strip_line_numbers,
)
from io_tui.ui.state import counted
from io_tui.ui.terminal_text import plain
from io_tui.ui.widgets.footer import ScreenFooter
from io_tui.ui.widgets.table import Table
from io_tui.ui.widgets.title_bar import TitleBar

# (column, priority, elidable down to): a narrow table drops the least important first
ENTRY_COLUMNS = (
    ("state", 6, None),
    ("kind", 4, None),
    ("target", 3, 8),
    ("role", 4, 9),
    ("step", 5, None),
    ("tokens", 5, None),
    ("reason", 2, 8),
)
SECTION_COLUMNS = (
    ("section", 3, None),
    ("role", 2, 9),
    ("prefix", 2, None),
    ("source", 1, 8),
    ("tokens", 2, None),
)
NARROW = 110  # columns: below this the entry text takes the table's place (enter / escape)


class InspectorScreen(Screen[None]):
    CSS_PATH = "inspector.tcss"
    BINDINGS = [
        Binding("escape,q", "close", "Back", id="inspector.close", tooltip="Back to the main screen (narrow: back to the table)"),
        Binding("enter", "open_entry", "Show", id="inspector.show", show=False, tooltip="Narrow terminal: show the highlighted entry's text in the table's place"),
        Binding("f", "cycle_filter", "Filter", id="inspector.filter", tooltip="Cycle the state filter"),
        Binding("a", "cycle_label_filter", "Role", id="inspector.label_filter", tooltip="Cycle the filter by role, then by authority"),
        Binding("j", "jump", "Jump", id="inspector.jump", tooltip="Go to the step that superseded or invalidated this stub"),
        Binding("left_square_bracket", "step(-1)", "Prev step", id="inspector.prev", tooltip="Previous request"),
        Binding("right_square_bracket", "step(1)", "Next step", id="inspector.next", tooltip="Next request"),
        Binding("d", "toggle_diff", "Diff", id="inspector.diff", tooltip="What changed from the previous request"),
        Binding("r", "reload", "Reload", id="inspector.reload", tooltip="Rebuild from the store"),
        Binding("l", "lifecycle", "Lifecycle", id="inspector.lifecycle", tooltip="Why did it forget it: the highlighted entry's lifecycle across the run's requests, and the compaction ledger (or search)"),
        Binding("w", "whatif", "What if", id="inspector.whatif", tooltip="Send this request again with entries restored, dropped or edited, the memory block or the model changed, and compare the answers (never executed)"),
    ]  # fmt: skip

    class RequestLoaded(Message):
        def __init__(self, view: StepRequest | None, error: str | None = None) -> None:
            super().__init__()
            self.view = view
            self.error = error

    entries = query_one("#entries", Table)
    sections = query_one("#sections", Table)
    summary = query_one("#summary", Static)
    detail = query_one("#detail", Static)
    diff = query_one("#diff", Static)
    tabs = query_one("#tabs", TabbedContent)

    def __init__(self, store: Store, run_id: int, step: int, *, whatif: bool = False) -> None:
        """``whatif``: open the request's "what if" as soon as it is read."""
        super().__init__()
        self.open_whatif = whatif
        self.store = store
        self.run_id = run_id
        self.step = step
        self.state_filter = "all"
        self.label_filter = "all"  # one of ``label_filters``: by role or by authority
        self.view: StepRequest | None = None  # the request shown, as last read
        self.select_after: tuple[int, str] | None = None  # (step, kind): once read, select it
        self.rows: dict[str, ManifestEntry] = {}  # by row key (``keyed_entries``)
        self.selected_key: str | None = None

    def compose(self) -> ComposeResult:
        yield TitleBar()
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield Static("loading…", id="summary")
                yield Table(id="entries", cursor_type="row", zebra_stripes=True)
                yield Table(id="sections", cursor_type="row")
            with TabbedContent(id="tabs", initial="tab-entry"):
                with TabPane("Entry", id="tab-entry"), VerticalScroll(id="detail-scroll"):
                    yield Static("Select an entry or a section.", id="detail")
                with TabPane("Diff vs previous", id="tab-diff"), VerticalScroll():
                    yield Static("", id="diff")
        yield ScreenFooter()

    def on_mount(self) -> None:
        for column, priority, shrink_to in ENTRY_COLUMNS:
            self.entries.add_column(column, key=column, priority=priority, shrink_to=shrink_to)
        self.entries.border_title = "Manifest"
        for column, priority, shrink_to in SECTION_COLUMNS:
            self.sections.add_column(column, key=column, priority=priority, shrink_to=shrink_to)
        self.sections.border_title = "Sections"
        self.entries.focus()
        self.load()

    @work(group="inspector", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        """Read the request of ``self.step`` (or of the nearest step that has one)."""
        try:
            view = await step_request(self.store, self.run_id, self.step)
        except TraceNotFound as exc:
            self.post_message(self.RequestLoaded(None, str(exc)))
            return
        self.post_message(self.RequestLoaded(view))

    def show_request(self, step: int) -> None:
        """Go to ``step``'s request: shown once read."""
        self.step = step
        self.selected_key = None
        self.load()

    @on_answer(RequestLoaded)
    def _on_loaded(self, message: RequestLoaded) -> None:
        if message.view is None:
            self.summary.update(Text(message.error or "no trace", style="bold"))
            return
        self.view = message.view
        self.step = message.view.step
        self.refresh_bindings()  # lifecycle needs the run
        self.show_step()
        if self.open_whatif:
            self.open_whatif = False
            self.action_whatif()
        if self.select_after is not None:
            step, kind = self.select_after
            self.select_after = None
            for key, other in self.rows.items():
                if other.step == step and other.kind == kind:
                    self._move_to(key)
                    break

    def _request_steps(self) -> list[int]:
        return list(self.view.request_steps) if self.view is not None else []

    # -- painting ------------------------------------------------------------------------------

    def show_step(self) -> None:
        view = self.view
        if view is None:
            return
        request = view.request
        self.sub_title = f"run {self.run_id} · step {self.step}"
        self.rows = keyed_entries(request)
        if request is None:
            self.summary.update(Text(f"run {self.run_id} step {self.step}: no request recorded"))
        else:
            filters = (self.state_filter, self.label_filter)
            self.summary.update(_summary(self.run_id, request, filters, self.rows))
        self._sync_entries()
        self._sync_sections(request)
        previous = self._previous_request()
        self.diff.update(_render_diff(self.step, previous, request))
        if self.selected_key is not None and self.selected_key in self.rows:
            self.show_entry(self.selected_key)
        elif self.entries.row_count:
            self.entries.move_cursor(row=0)
        else:
            self.detail.update("This request carried no observations yet.")

    def _previous_request(self) -> dict[str, Any] | None:
        return self.view.previous if self.view is not None else None

    def _sync_entries(self) -> None:
        """Keyed update: remove rows that left, update rows that stayed, add new ones."""
        table = self.entries
        wanted = {
            k: r
            for k, r in self.rows.items()
            if matches(r, self.state_filter) and label_matches(r, self.label_filter)
        }
        present = {key.value for key in table.rows}
        for key in present - wanted.keys():
            table.remove_row(str(key))
        for key, row in wanted.items():
            cells = _cells(row)
            if key in present:
                for (column, _, _), value in zip(ENTRY_COLUMNS, cells, strict=True):
                    table.update_cell(key, column, value)
            else:
                table.add_row(*cells, key=key)
        if "step" in table.columns:
            table.sort("step", key=_sort_key)

    def _sync_sections(self, request: dict[str, Any] | None) -> None:
        table = self.sections
        sections = (request or {}).get("sections", [])
        wanted = {str(s.get("name")): s for s in sections}
        present = {key.value for key in table.rows}
        for key in present - wanted.keys():
            table.remove_row(str(key))
        for name, section in wanted.items():
            cells = (
                name,
                str(section.get("role") or ""),
                _prefix(section),
                str(section.get("source", "")),
                f"{section.get('est_tokens', 0):,}",
            )
            if name in present:
                for (column, _, _), value in zip(SECTION_COLUMNS, cells, strict=True):
                    table.update_cell(name, column, value)
            else:
                table.add_row(*cells, key=name)

    @property
    def selected(self) -> ManifestEntry | None:
        """The entry highlighted, if the request shown has it."""
        return self.rows.get(self.selected_key) if self.selected_key is not None else None

    def show_entry(self, key: str) -> None:
        self.selected_key = key
        row = self.rows[key]
        view = self.view
        steps, request = (view.steps, view.request) if view is not None else ((), None)
        self.detail.update(_render_entry(steps, request, row))
        self.refresh_bindings()

    @on(DataTable.RowHighlighted, "#entries")
    def _on_entry(self, event: DataTable.RowHighlighted) -> None:
        key = event.row_key.value
        if key in self.rows:
            self.show_entry(key)

    @on(DataTable.RowHighlighted, "#sections")
    def _on_section(self, event: DataTable.RowHighlighted) -> None:
        if self.view is None or not self.sections.has_focus:
            return
        request = self.view.request or {}
        for section in request.get("sections", []):
            if section.get("name") == event.row_key.value:
                text = section_text(request, section)
                if section.get("withheld"):
                    text = "(nothing of it was sent: see what was left out, and why, above)"
                where = {
                    "stable": "fixed, never elided: the stable prefix",
                    "withheld": "withheld: nothing of it sent",
                }.get(_prefix(section), "dynamic")
                self.detail.update(
                    Group(
                        Text(
                            f"{section['name']} · {section.get('source')} · "
                            f"{section.get('est_tokens', 0):,} tok ({where})",
                            style="bold",
                        ),
                        _why_text(section),
                        _labels_text(section),
                        Syntax(plain(text), "markdown", word_wrap=True, theme="ansi_dark"),
                    )
                )

    # -- narrow terminals: the entry text in the table's place ---------------------------------

    def on_resize(self, event: events.Resize) -> None:
        narrow = event.size.width < NARROW
        self.set_class(narrow, "-narrow")
        if not narrow:
            self.remove_class("-reading")

    def read(self, reading: bool) -> None:
        """Narrow: show the entry / diff tabs (True) or the tables (False)."""
        self.set_class(reading and self.has_class("-narrow"), "-reading")
        self.refresh_bindings()
        if not reading:
            self.entries.focus()

    # -- actions -------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "jump":
            return self.selected is not None and self.selected.superseded_by is not None
        if action == "lifecycle":
            return self.view is not None
        if action == "whatif":
            return self.view is not None and self.view.request is not None
        if action == "open_entry":
            return self.has_class("-narrow") and not self.has_class("-reading")
        return True

    def action_close(self) -> None:
        if self.has_class("-reading"):
            self.read(False)
        else:
            self.app.pop_screen()

    @on(DataTable.RowSelected)
    def _on_row_selected(self) -> None:
        if self.check_action("open_entry", ()):
            self.action_open_entry()

    def action_open_entry(self) -> None:
        self.tabs.active = "tab-entry"
        self.read(True)

    def action_cycle_filter(self) -> None:
        index = FILTERS.index(self.state_filter)
        self.state_filter = FILTERS[(index + 1) % len(FILTERS)]
        self.show_step()
        self.notify(f"filter: {self.state_filter}", timeout=1.5)

    def action_cycle_label_filter(self) -> None:
        options = label_filters(self.rows.values())
        index = options.index(self.label_filter) if self.label_filter in options else 0
        self.label_filter = options[(index + 1) % len(options)]
        self.show_step()
        self.notify(f"filter: {self.label_filter}", timeout=1.5)

    def set_filter(self, state_filter: str) -> None:
        self.state_filter = state_filter
        self.show_step()

    def action_step(self, delta: int) -> None:
        steps = self._request_steps()
        if not steps:
            return
        index = steps.index(self.step) if self.step in steps else 0
        self.show_request(steps[max(0, min(len(steps) - 1, index + delta))])

    def action_jump(self) -> None:
        row = self.selected
        if row is None or row.superseded_by is None:
            return
        target = row.superseded_by
        steps = self._request_steps()
        later = [s for s in steps if s > target]
        self.select_after = (target, row.kind)
        self.show_request(later[0] if later else target)
        self.notify(f"step {target} replaced the entry of step {row.step}", timeout=3)

    def _move_to(self, key: str) -> None:
        try:
            index = self.entries.get_row_index(RowKey(key))
        except Exception:
            return
        self.entries.move_cursor(row=index)

    def action_toggle_diff(self) -> None:
        tabs = self.tabs
        tabs.active = "tab-entry" if tabs.active == "tab-diff" else "tab-diff"
        self.read(tabs.active == "tab-diff" or self.has_class("-reading"))

    def action_reload(self) -> None:
        self.load()

    def action_lifecycle(self) -> None:
        if self.view is None:  # disabled until the run is read
            return
        row = self.selected  # a summary or collapse line is no one entry: search instead
        query = row.call_id if row is not None and row.kind not in ("summary", "collapse") else ""
        self._open_lifecycle(query)

    def action_whatif(self) -> None:
        """This request's "what if", the highlighted entry's call chosen."""
        from io_tui.ui.screens.whatif import WhatIfScreen

        if self.view is None or self.view.request is None:
            return
        row = self.selected
        call = row.call_id if row is not None and row.kind not in ("summary", "collapse") else None
        self.app.push_screen(WhatIfScreen(self.store, self.run_id, self.step, call))

    @work(group="inspector-lifecycle", exclusive=True, exit_on_error=False)
    async def _open_lifecycle(self, query: str) -> None:
        """An entry's lifecycle spans the run's requests: its trace is built for it."""
        from io_tui.ui.screens.lifecycle import LifecycleScreen

        try:
            trace = await build_trace(self.store, self.run_id)
        except TraceNotFound as exc:
            self.notify(str(exc), severity="warning")
            return
        self.app.push_screen(LifecycleScreen(trace, query))


_STATE_STYLES = {"full": "", "capped": "underline", "corrected": "bold", "summary": "italic", "dropped": "dim strike"}  # fmt: skip


def _cells(row: ManifestEntry) -> tuple[Text, str, str, Text, str, str, str]:
    style = _STATE_STYLES.get(row.state, "dim")
    reason = row.reason
    if row.superseded_by is not None:
        reason = f"{reason} → step {row.superseded_by}" if reason else f"→ step {row.superseded_by}"
    return (
        Text(row.state, style=style),
        row.kind,
        row.target,
        Text(row.role, style=_ROLE_STYLES.get(row.role, "")),
        str(row.step),
        f"{row.est_tokens:,}",
        reason,
    )


# low trust is marked: what came from the world, and what the model wrote itself
_ROLE_STYLES = {"untrusted data": "yellow", "model output": "italic"}


def _labels_text(labels: dict[str, Any]) -> Text:
    """Its role and authority, source and version, and the digest of what was sent."""
    role = str(labels.get("role") or "unlabelled (recorded before labels)")
    out = Text.assemble(("role: ", "dim"), (role, _ROLE_STYLES.get(role, "bold")))
    for key, name in (
        ("authority", "authority"),
        ("source_ref", "source"),
        ("source_version", "version"),
        ("digest", "digest of what was sent"),
    ):
        if labels.get(key):
            out.append(f"\n{name}: ", style="dim")
            out.append(plain(str(labels[key])))
    return out


def _prefix(section: dict[str, Any]) -> str:
    """Where the section is: the ``stable`` prefix, the ``dynamic`` rest, or ``withheld`` (an
    instruction file the policy denies: named, nothing sent)."""
    if not section.get("fixed", True):
        return "dynamic"
    return "withheld" if section.get("withheld") else "stable"


def _why_text(section: dict[str, Any]) -> Text:
    """Why the section is in the request, and what of its source it left out and why (a
    manifest recorded before reasons were kept says so)."""
    reason = str(section.get("reason") or "not recorded (a request recorded before reasons)")
    out = Text.assemble(("why: ", "dim"), plain(reason))
    for item in section.get("omitted") or ():
        out.append("\nleft out: ", style="dim")
        out.append(plain(f"{item.get('ref', '')} — {item.get('reason', '')}"))
    return out


def _sort_key(step: Any) -> int:
    return int(str(step)) if str(step).isdigit() else 0


def _summary(
    run_id: int, request: dict[str, Any], filters: tuple[str, str], rows: dict[str, ManifestEntry]
) -> Text:
    est, ceiling, reported, frame = (
        request.get("est_tokens"),
        request.get("ceiling_tokens"),
        request.get("reported_tokens"),
        request.get("frame_tokens", 0),
    )
    stubs = sum(1 for r in rows.values() if r.is_stub)
    dropped = sum(1 for r in rows.values() if r.state == "dropped")
    provider_count = (
        "no count from the provider"
        if reported is None
        else f"the provider counted {reported:,}"
        + (
            f" ({abs(reported - est) / est:.0%} {'more' if reported > est else 'less'})"
            if est and reported != est
            else ""
        )
    )
    return Text.assemble(
        (f"run {run_id} · step {request['step']} · attempt {request.get('attempt', 1)}", "bold"),
        f" · rung {request.get('rung') or '—'}",
        f"\n{est - frame:,} / {ceiling:,} tok of its ceiling, + {frame:,} always sent (system,"
        f" tools, instructions) = {est:,} estimated · {provider_count}",
        *(f"\n{line}" for line in limits_notes(request)),
        *_answer_notes(request),
        f"\n{counted(len(rows), 'entry', 'entries')}, {counted(stubs, 'stub')}"
        + (
            f" ({dropped} dropped: left out with {'its step' if dropped == 1 else 'their steps'})"
            if dropped
            else ""
        )
        + " · filter: ",
        (filters[0], "bold"),
        " (f) · ",
        (filters[1], "bold"),
        " (a)",
    )


def _answer_notes(request: dict[str, Any]) -> list[tuple[str, str] | str]:
    """How the request's answer ended, when that is worth a line: an unusual stop reason (a cut
    answer above all), a failure, and the partial output a failed request had streamed."""
    out: list[tuple[str, str] | str] = []
    if request.get("tools_ignored"):
        out.append(
            (
                "\nthe model did not receive the tools: the server's chat template drops the"
                " tool schemas (they are sent, and not counted); it can only answer in text",
                "bold yellow",
            )
        )
    stop = request.get("stop_reason")
    if stop not in (None, "stop", "tool_calls"):
        out.append((f"\nstop reason {stop} ({request.get('raw_stop_reason')})", "bold yellow"))
    if str(request.get("error") or "").startswith("interrupted: "):  # the operator's cancel
        out.append((f"\n{request['error']}", "bold yellow"))
    elif request.get("error"):
        out.append((f"\nfailed: {request['error']}", "bold red"))
    partial = request.get("partial")
    if partial:
        text = partial.get("text") or ""
        shown = text if len(text) <= 120 else text[:119] + "…"
        calls = len(partial.get("tool_calls") or [])
        out.append(("\npartial ", "bold yellow"))
        fragments = "1 tool-call fragment" if calls == 1 else f"{calls} tool-call fragments"
        out.append(f"output kept: {len(text):,} chars, {fragments}: {json.dumps(shown)}")
    return out


def _render_entry(
    steps: Iterable[dict[str, Any]], request: dict[str, Any] | None, row: ManifestEntry
) -> RenderableType:
    """What the model saw for the entry (as sent), then the result as recorded where that
    differs (a stub, a capped or re-read result, one bounded where it entered)."""
    head = Text.assemble(
        (plain(f"{row.kind} {row.target}"), "bold"),
        f"  · step {row.step} · {row.state} · {row.est_tokens:,} tok · {row.chars:,} chars",
    )
    sent, recorded = sent_text(request, row), entry_text(steps, row)
    lines: list[RenderableType] = [head, _labels_text(row._asdict())]
    if row.is_stub:
        lines.append(Text(f"\nreason: {row.reason or row.state}", style="bold"))
        if row.superseded_by is not None:
            lines.append(Text(f"replaced / invalidated by step {row.superseded_by} — press j"))
        if sent is not None:
            lines += [Text("\nsent instead:", style="dim"), Text(plain(sent))]
        elif row.state == "dropped":
            left_out = f"step {row.step}'s turn and results are left out of this request"
            lines.append(Text(f"\nsent instead: nothing ({left_out})"))
    else:
        lines.append(Text(f"why: {row.reason}", style="dim") if row.reason else Text(""))
        if sent is not None:
            lines.append(_highlight(row, sent))
    if recorded is not None and recorded != sent:
        lines.append(Text("\nthe original result (as recorded):", style="dim"))
        lines.append(_highlight(row, recorded))
    elif sent is None:
        lines.append(Text("(no recorded text for this entry)"))
    return Group(*lines)


def _highlight(row: ManifestEntry, text: str) -> RenderableType:
    text = plain(text)  # no escape sequence from a result reaches the terminal
    if row.kind == "read":
        code, first = strip_line_numbers(text)
        lexer = Syntax.guess_lexer(PurePosixPath(row.target).name, code)
        return Syntax(
            code, lexer, line_numbers=True, start_line=first, word_wrap=True, theme="ansi_dark"
        )
    lexer = {"exec": "console", "grep": "text", "list": "text"}.get(row.kind, "text")
    if row.kind == "write":
        lexer = Syntax.guess_lexer(PurePosixPath(row.target).name, text)
    return Syntax(text, lexer, word_wrap=True, theme="ansi_dark")


def cache_text(before: dict[str, Any] | None, after: dict[str, Any]) -> Text:
    """Where this request's prompt-cache prefix broke against the previous one, and why
    (``core/context/cache.py``), and what the provider reported reading and writing."""
    cache = after.get("cache") or {}
    out = Text()
    out.append("prompt cache: ", style="bold")
    if before is None or not cache.get("previous_messages"):
        out.append("the run's first request, nothing to reuse yet")
    else:
        kept = f"{cache['cached_messages']} of {cache['previous_messages']} messages"
        tokens = f"{cache['cached_prefix_tokens']:,} tok"
        if cache.get("broke_at") is None:
            out.append(f"extends the previous request whole ({kept}, {tokens})")
        else:
            out.append(f"kept {kept} of the previous request ({tokens}); ")
            out.append(f"broke at message {cache['broke_at']}: ", style="bold")
            out.append(plain(cache.get("why") or "?"), style="yellow")
    if cache.get("cache_read_tokens") is not None:
        out.append(
            f"\nreported: {cache['cache_read_tokens']:,} read from the cache, "
            f"{cache.get('cache_write_tokens') or 0:,} written"
        )
    out.append("\n\n")
    return out


def _render_diff(
    step: int, before: dict[str, Any] | None, after: dict[str, Any] | None
) -> RenderableType:
    if after is None:
        return Text("no request for this step")
    if before is None:
        return Text.assemble(
            cache_text(None, after),
            f"step {step} is the first request of the run: everything is new.",
        )
    d = diff_requests(before, after)
    out = cache_text(before, after)
    out.append(f"step {before['step']} → step {step}", style="bold")
    out.append(f"   est {d.tokens_before:,} → {d.tokens_after:,} tok\n\n")

    def section(title: str, rows: list[ManifestEntry], mark: str, style: str) -> None:
        out.append(f"{title} ({len(rows)})\n", style="bold")
        for r in rows:
            why = f" — {r.reason}" if r.reason else ""
            out.append(f"  {mark} step {r.step} {r.kind} {r.target}{why}\n", style=style)

    section("added", d.added, "+", "green")
    section("stubbed", d.stubbed, "~", "yellow")
    section("left out (dropped)", d.dropped, "-", "red")
    section("corrected (out of date, its correction after it)", d.corrected, "↻", "cyan")
    rewrite = after.get("rewrite")
    if rewrite:
        out.append("rewrite of the prefix\n", style="bold")
        out.append(f"  {rewrite_line(rewrite)}\n", style="yellow")
    if d.removed:
        section("no longer listed", d.removed, "×", "red")
    out.append(f"memory recalled ({len(d.recalled)})\n", style="bold")
    for key in d.recalled:
        out.append(f"  ◆ {key}{' (new)' if key in d.newly_recalled else ''}\n")
    return out
