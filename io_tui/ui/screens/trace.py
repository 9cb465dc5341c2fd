"""The trace viewer: every step's full, unelided result, searchable (``/``, then ``n``/``N``)."""

from __future__ import annotations

import json
import re
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.getters import query_one
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Input, Static, TextArea
from textual.widgets.text_area import Selection

from io_tui.core import (
    Store,
    TraceNotFound,
    build_trace,
    decision_text,
    ended_line,
    history_notes,
    invalidation_line,
    lineage_lines,
    request_notes,
)
from io_tui.ui.answers import on_answer
from io_tui.ui.state import counted
from io_tui.ui.terminal_text import plain
from io_tui.ui.widgets.footer import ScreenFooter
from io_tui.ui.widgets.title_bar import TitleBar


class TraceScreen(Screen[None]):
    CSS_PATH = "trace.tcss"
    BINDINGS = [
        Binding("escape,q", "app.pop_screen", "Back", id="trace.close", tooltip="Back to the main screen"),
        Binding("slash", "search", "Search", id="trace.search", tooltip="Search the trace"),
        Binding("n", "next_match(1)", "Next", id="trace.next", tooltip="Next match"),
        Binding("N", "next_match(-1)", "Prev", id="trace.prev", tooltip="Previous match"),
        Binding("r", "reload", "Reload", id="trace.reload", tooltip="Rebuild from the store"),
    ]  # fmt: skip

    class TraceLoaded(Message):
        def __init__(self, text: str, error: str | None = None) -> None:
            super().__init__()
            self.text = text
            self.error = error

    body = query_one("#trace-text", TextArea)
    search = query_one("#search", Input)
    status = query_one("#status", Static)

    def __init__(self, store: Store, run_id: int) -> None:
        super().__init__()
        self.store = store
        self.run_id = run_id
        self.matches: list[tuple[int, int, int]] = []  # (line, start col, end col)
        self.current = -1

    def compose(self) -> ComposeResult:
        yield TitleBar()
        yield Input(placeholder="search the trace (regex or text), Enter to find", id="search")
        yield Static("loading…", id="status")
        yield TextArea("", read_only=True, soft_wrap=False, show_line_numbers=True, id="trace-text")
        yield ScreenFooter()

    def on_mount(self) -> None:
        self.sub_title = f"trace of run {self.run_id}"
        self.body.focus()
        self.load()

    @work(group="trace", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        try:
            trace = await build_trace(self.store, self.run_id)
        except TraceNotFound as exc:
            self.post_message(self.TraceLoaded("", str(exc)))
            return
        self.post_message(self.TraceLoaded(render_trace(trace)))

    @on_answer(TraceLoaded)
    def _on_loaded(self, message: TraceLoaded) -> None:
        if message.error:
            self.status.update(message.error)
            return
        self.body.load_text(plain(message.text))  # no escape sequence reaches the terminal
        self.status.update(f"{self.body.document.line_count:,} lines · / to search")
        if self.search.value:
            self.find(self.search.value)

    def action_search(self) -> None:
        self.search.focus()

    def action_reload(self) -> None:
        self.load()

    @on(Input.Submitted, "#search")
    def _on_search(self, event: Input.Submitted) -> None:
        self.find(event.value)
        self.body.focus()

    def find(self, query: str) -> None:
        self.matches = []
        self.current = -1
        if not query:
            self.status.update("")
            return
        try:
            pattern = re.compile(query, re.IGNORECASE)
        except re.error:
            pattern = re.compile(re.escape(query), re.IGNORECASE)
        for number, line in enumerate(self.body.text.splitlines()):
            for match in pattern.finditer(line):
                if match.end() > match.start():
                    self.matches.append((number, match.start(), match.end()))
        if not self.matches:
            self.status.update(f"no match for {query!r}")
            return
        self.action_next_match(1)

    def action_next_match(self, delta: int) -> None:
        if not self.matches:
            return
        self.current = (self.current + delta) % len(self.matches)
        line, start, end = self.matches[self.current]
        self.body.selection = Selection((line, start), (line, end))
        self.body.scroll_cursor_visible(center=True, animate=False)
        self.status.update(
            f"match {self.current + 1} of {len(self.matches)} · line {line + 1} · n / N"
        )


def _ended(run: dict[str, Any]) -> str:
    """How the run ended, in its outcome's mark and words (``core.endings``); a live one's
    status."""
    if run["status"] in ("running", "asking"):
        return run["status"]
    return ended_line(run["status"], run["outcome"], run.get("error"))


def render_trace(trace: dict[str, Any]) -> str:
    """The trace as plain text: the run, then every step with its full results."""
    run = trace["run"]
    out = [
        f"run {run['id']} · {_ended(run)} · {counted(run['steps'], 'step')}"
        f" · {run['tokens']:,} tokens",
        f"goal: {run['goal']}",
        f"workspace: {run['workspace']}",
    ]
    out += lineage_lines(run, trace.get("forks", []))
    out.append("")
    approvals = {a["step"]: a for a in trace.get("approvals", [])}
    rebuilt: dict[int, list[str]] = {}  # derived parts invalidated before a step's request
    after = history_notes(trace)  # rewinds and forks, after the step the run was at
    for event in trace.get("events", []):  # a deferred one changed nothing the request sent
        if event["kind"] == "invalidated" and event["detail"].get("effect") != "deferred":
            rebuilt.setdefault(event["step"], []).append(invalidation_line(event["detail"]))
    for step in trace["steps"]:
        out.append(f"━━ step {step['step']} · {step['tokens']:,} tok " + "━" * 40)
        for message in step.get("operator_messages", []):
            out.append(f"operator ▸ {message}")
        out += rebuilt.get(step["step"], [])
        if step["text"]:
            out.append(step["text"])
        out += request_notes([r for r in trace.get("requests", []) if r["step"] == step["step"]])
        by_call = {o["call_id"]: o for o in step.get("observations", [])}
        for call in step["tool_calls"]:
            out.append(f"→ {call['name']} {json.dumps(call['arguments'], ensure_ascii=False)}")
            obs = by_call.get(call.get("id"))
            if obs is not None:
                mark = "✗ error" if obs.get("is_error") else "result"
                out.append(f"  {mark} ({obs['kind']} {obs['target']}):")
                out.extend("  │ " + line for line in (obs.get("full_text") or "").splitlines())
        approval = approvals.get(step["step"])
        if approval is not None:
            decision = approval.get("decision") or {}
            out.append(
                f"? approval {approval['id']}: {approval['act']} {approval['target']} "
                f"(rule '{approval['rule']}', layer '{approval['layer']}') → "
                f"{decision.get('kind', approval.get('status'))}"
            )
        decision = decision_text(step.get("decision") or {})
        if decision:
            out.append(f"decision: {decision}")
        out += after.get(step["step"], [])
        out.append("")
    return "\n".join(out)
