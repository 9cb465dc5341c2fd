"""The approval modal: one request, five decisions (DESIGN §3.4, §5).

``ApprovalScreen`` is a ``ModalScreen[Decision]``: it shows the run (and its parent), the act, the
target, the rule and layer that asked, and the action itself — a diff for a write, argv and cwd for
exec, name and arguments for an MCP tool. Keys ``1``–``5`` approve, rewrite, remember, deny and
defer (letter aliases ``y e a n d`` only with ``[ui] letter_shortcuts``); escape defers, so a
stray key never approves or denies. The modal arms before it takes a decision: for ``arm_s``
after it is painted, and again after every key pressed meanwhile, keys (and clicks on its
buttons) are ignored, so keystrokes racing the ask cannot decide it. Rewrite, remember and deny
open small typed modals of their own and dismiss with their result.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Button, DataTable, Input, Label, RadioButton, RadioSet, Static, TextArea

from io_tui.config import UISettings
from io_tui.core.approvals import ApprovalRequest, Decision, DecisionKind, RememberRule, RuleScope
from io_tui.core.policy import Act
from io_tui.core.rule_preview import (
    SCOPE_LABELS,
    SCOPES,
    RewriteCheck,
    blast_radius,
    check_rewrite,
    command_examples,
    grant_text,
    preview_matches,
    suggest_pattern,
    validate_pattern,
)
from io_tui.core.store import ApprovalRecord, Store
from io_tui.ui.terminal_text import plain
from io_tui.ui.widgets.diff_view import DiffView
from io_tui.ui.widgets.table import Table

MAX_DIFF_FILE_BYTES = 2_000_000


def is_mcp(request: ApprovalRequest) -> bool:
    return request.tool.startswith("mcp__")


def is_file_write(request: ApprovalRequest) -> bool:
    return request.act is Act.WRITE and request.tool in ("write_file", "edit_file")


def read_current(request: ApprovalRequest) -> str | None:
    """The file as it is now (None when it does not exist or cannot be read as text)."""
    path = Path(request.workspace) / request.target
    try:
        if path.stat().st_size > MAX_DIFF_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def request_body(request: ApprovalRequest, current: str | None) -> Iterator[Widget]:
    """The action itself: a diff against ``current`` for a file write, argv and cwd for an exec,
    the arguments for an MCP or other tool (the modal's body and the inbox's preview)."""
    req = request
    if is_file_write(req):
        state = "new file" if current is None else "against the current file"
        view = DiffView(current, req.content, req.target, classes="approval-diff")
        label = f"{req.target} — {state} · {view.stats.describe()}"
        yield Label(Content(plain(label)), classes="approval-diff-label")
        yield view
    elif is_mcp(req):
        yield Label(f"MCP tool {req.tool}", classes="approval-field")
        yield _code(json.dumps(req.arguments, indent=2, ensure_ascii=False))
    elif req.act is Act.EXEC:
        argv = req.arguments.get("argv") or json.loads(req.content or "[]")
        yield Label("argv", classes="approval-field")
        yield _code(json.dumps(argv, ensure_ascii=False))
        yield Label(Content(plain(f"working directory  {req.workspace}")), classes="approval-field")
        timeout = req.arguments.get("timeout_s")
        if timeout is not None:
            yield Label(f"timeout  {timeout:g}s", classes="approval-field")
    else:
        yield Label(f"{req.tool} arguments", classes="approval-field")
        yield _code(json.dumps(req.arguments, indent=2, ensure_ascii=False))


class ApprovalScreen(ModalScreen[Decision]):
    """Decide one request. Dismisses with the Decision; escape is a defer. Ignores keys and
    clicks until armed (``armed``)."""

    class CurrentLoaded(Message):
        """The target file as it is now (read in a worker)."""

        def __init__(self, current: str) -> None:
            super().__init__()
            self.current = current

    CSS_PATH = "approval.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1", "approve", "Approve", id="approval.approve", tooltip="Perform it as proposed"),
        Binding(
            "2",
            "rewrite",
            "Rewrite",
            id="approval.rewrite",
            tooltip="Edit the action, then perform the edit",
        ),
        Binding(
            "3",
            "remember",
            "Remember",
            id="approval.remember",
            tooltip="Approve and save a rule for next time",
        ),
        Binding(
            "4",
            "deny",
            "Deny",
            id="approval.deny",
            tooltip="Refuse, with an optional reason the model reads",
        ),
        Binding(
            "5,escape",
            "defer",
            "Defer",
            id="approval.defer",
            tooltip="Decide later: the run pauses, others keep going",
        ),
        Binding(
            "v",
            "toggle_diff",
            "Split/unified",
            id="approval.toggle_diff",
            tooltip="Side-by-side or unified diff",
        ),
    ]

    def __init__(
        self,
        request: ApprovalRequest,
        *,
        store: Store | None = None,
        position: str = "",
        current: str | None = None,
        current_known: bool = False,
        goal: str | None = None,
        parent_run_id: int | None = None,
        initial_action: str | None = None,
        arm_s: float = UISettings().approval_arm_ms / 1000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(classes=f"-act-{request.act.value} -arming")
        self.request = request
        self.store = store
        self.position = position
        self.current = current
        self.current_known = current_known
        self.goal = goal
        self.parent_run_id = parent_run_id if parent_run_id is not None else request.parent_run_id
        self.initial_action = initial_action
        self.arm_s = arm_s
        self.clock = clock
        self.armed_at: float | None = None  # when keys start to count (None: not painted yet)
        self._arm_timer: Timer | None = None

    # -- arming --

    @property
    def armed(self) -> bool:
        return self.armed_at is not None and self.clock() >= self.armed_at

    def _start_arming(self) -> None:
        """(Re)start the arming time: after the first paint, and after each key pressed early."""
        self.armed_at = self.clock() + self.arm_s
        self._check_armed()

    def _check_armed(self) -> None:
        """Show the arming state (``-arming``: buttons dimmed, a hint) until armed."""
        if self._arm_timer is not None:
            self._arm_timer.stop()
            self._arm_timer = None
        if self.armed or self.armed_at is None:
            self.set_class(not self.armed, "-arming")
            return
        wait = max(self.armed_at - self.clock(), 0.02)
        self._arm_timer = self.set_timer(wait, self._check_armed)

    def on_key(self, event: events.Key) -> None:
        """Before the modal is armed a key decides nothing (it bubbles no further, so no binding
        sees it) and starts the arming time again."""
        if not self.armed:
            event.stop()
            event.prevent_default()
            if self.armed_at is not None:
                self._start_arming()

    # -- layout --

    def compose(self) -> ComposeResult:
        req = self.request
        with Vertical(id="approval"):
            yield Static(self._title(), id="approval-title")
            yield Static(self._run_line(), id="approval-run")
            yield Static(self._why(), id="approval-why")
            with Vertical(id="approval-body"):
                yield from self._body()
            with Horizontal(id="approval-buttons"):
                yield Button("1 Approve", id="act-approve", variant="success")
                yield Button("2 Rewrite", id="act-rewrite")
                yield Button("3 Remember", id="act-remember", variant="primary")
                yield Button("4 Deny", id="act-deny", variant="error")
                yield Button("5 Defer", id="act-defer")
            yield Static(
                "escape defers · v toggles the diff" if is_file_write(req) else "escape defers",
                id="approval-hint",
            )
            yield Static("arming: keys wait a moment…", id="approval-arming")

    def _title(self) -> Content:
        req = self.request
        prefix = f"{self.position}  " if self.position else ""
        what = "call MCP tool" if is_mcp(req) else req.act.value
        return Content.assemble(
            Content.styled(prefix, "$text-muted"),
            Content.styled(f"Run {req.run_id} asks to {what} ", "bold"),
            Content.styled(plain(req.target), "bold $text-accent"),
        )

    def set_position(self, position: str) -> None:
        """ "1 of N": the desk updates it as more runs ask."""
        self.position = position
        if self.is_mounted:
            self.query_one("#approval-title", Static).update(self._title())

    def _run_line(self) -> Content:
        req = self.request
        parts = [f"run {req.run_id} · step {req.step} · tool {req.tool}"]
        if self.parent_run_id is not None:
            parts.append(f"child of run {self.parent_run_id}")
        line = " · ".join(parts)
        if self.goal:
            line += f"\ngoal: {self.goal}"
        return Content(plain(line))

    def _why(self) -> Content:
        req = self.request
        return Content.assemble(
            "asked by rule ",
            Content.styled(f"'{req.rule}'", "bold"),
            " in layer ",
            Content.styled(f"'{req.layer}'", "bold"),
        )

    def _body(self) -> Iterator[Widget]:
        return request_body(self.request, self.current)

    async def on_mount(self) -> None:
        # Buttons are for the mouse: a focused button must never turn enter into an approve.
        for button in self.query(Button):
            button.can_focus = False
        self.query_one("#approval").border_title = "Approval"
        if is_file_write(self.request) and not self.current_known:
            self._load_current()
        self.call_after_refresh(self._start_arming)
        if self.initial_action:  # chosen in the inbox, by its own key: no arming for it
            self.call_after_refresh(self.run_action, self.initial_action)

    @work(group="approval-load", exclusive=True, exit_on_error=False)
    async def _load_current(self) -> None:
        current = await asyncio.to_thread(read_current, self.request)
        if current is not None:
            self.post_message(self.CurrentLoaded(current))

    @on(CurrentLoaded)
    async def _on_current_loaded(self, message: CurrentLoaded) -> None:
        """The file as it is now: the diff is rebuilt against it (the split view kept)."""
        self.current, self.current_known = message.current, True
        views = self.query(DiffView)
        if not views:  # the screen is being torn down (the app quit while it loaded)
            return
        split = views.first().split
        body = self.query_one("#approval-body", Vertical)
        await body.remove_children()
        await body.mount_all(list(self._body()))
        for view in self.query(DiffView):  # none when the mount was refused (closing)
            view.split = split

    # -- actions --

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_diff":
            return is_file_write(self.request)
        if action in ("rewrite", "remember") and self.store is None:
            return None
        return True

    @on(Button.Pressed)
    async def _pressed(self, event: Button.Pressed) -> None:
        if not self.armed:
            return
        if event.button.id:  # act-approve → approve: the dialogs own the bare ids
            await self.run_action(event.button.id.removeprefix("act-"))

    def action_approve(self) -> None:
        self.dismiss(Decision.approve())

    def action_defer(self) -> None:
        self.dismiss(Decision.defer())

    def action_toggle_diff(self) -> None:
        self.query_one(DiffView).toggle()

    def action_deny(self) -> None:
        def denied(reason: str | None) -> None:
            if reason is not None:
                self.dismiss(Decision.deny(reason or None))

        self.app.push_screen(DenyScreen(self.request), denied)

    def action_rewrite(self) -> None:
        if self.store is None:
            return

        def rewritten(arguments: dict[str, Any] | None) -> None:
            if arguments is not None:
                self.dismiss(Decision(DecisionKind.REWRITE, arguments=arguments))

        self.app.push_screen(RewriteScreen(self.request, self.store), rewritten)

    def action_remember(self) -> None:
        if self.store is None:
            return

        def remembered(rule: RememberRule | None) -> None:
            if rule is not None:
                self.dismiss(Decision(DecisionKind.REMEMBER, rule=rule))

        self.app.push_screen(RememberScreen(self.request, self.store), remembered)


def _code(text: str) -> Static:
    return Static(plain(text), classes="approval-code", markup=False)  # "[/]" is an argument


class DenyScreen(ModalScreen[str | None]):
    """An optional reason for a deny; dismisses with the reason ('' for none) or None to go back."""

    CSS_PATH = "approval.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Back", id="deny.cancel", tooltip="Back to the request"),
    ]

    def __init__(self, request: ApprovalRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        with Vertical(id="deny", classes="approval-dialog"):
            title = f"Deny {self.request.act.value} {self.request.target}"
            yield Static(Content(plain(title)), classes="dialog-title")
            yield Label("Reason (optional; the model reads it and adapts):")
            yield Input(placeholder="e.g. don't touch generated files", id="deny-reason")
            yield Static("enter denies · escape goes back", classes="dialog-hint")

    @on(Input.Submitted, "#deny-reason")
    def _submit(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)


class RewriteScreen(ModalScreen[dict[str, Any] | None]):
    """Edit the action. Submitting validates it with the tool's own arguments model and re-checks
    it against the run's policy; a refusal is shown inline and the editor stays open."""

    class Checked(Message):
        """The edited action, checked against the tool's model and the run's policy."""

        def __init__(self, result: RewriteCheck) -> None:
            super().__init__()
            self.result = result

    CSS_PATH = "approval.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+s",
            "submit",
            "Check & perform",
            id="rewrite.submit",
            tooltip="Validate, re-check the policy, and perform the edit",
            priority=True,
        ),
        Binding("escape", "cancel", "Back", id="rewrite.cancel", tooltip="Back to the request"),
    ]

    def __init__(self, request: ApprovalRequest, store: Store) -> None:
        super().__init__()
        self.request = request
        self.store = store

    @property
    def split_fields(self) -> bool:
        """write_file is edited as a path and a content editor; everything else as JSON."""
        return self.request.tool == "write_file"

    def compose(self) -> ComposeResult:
        req = self.request
        with Vertical(id="rewrite", classes="approval-dialog"):
            yield Static(
                f"Rewrite {req.tool} (run {req.run_id} step {req.step})", classes="dialog-title"
            )
            if self.split_fields:
                yield Label("path")
                yield Input(str(req.arguments.get("path", req.target)), id="rewrite-path")
                yield Label("content")
                yield TextArea(
                    str(req.arguments.get("content", req.content)),
                    id="rewrite-content",
                    soft_wrap=False,
                )
            else:
                yield Label("arguments (JSON)")
                yield TextArea(
                    json.dumps(req.arguments, indent=2, ensure_ascii=False),
                    id="rewrite-json",
                    soft_wrap=False,
                )
            yield Static("", id="rewrite-error")
            yield Static("ctrl+s checks and performs · escape goes back", classes="dialog-hint")

    def edited(self) -> dict[str, Any] | str:
        """The edited arguments, or a message saying why they are not an object."""
        if self.split_fields:
            args = dict(self.request.arguments)
            args["path"] = self.query_one("#rewrite-path", Input).value
            args["content"] = self.query_one("#rewrite-content", TextArea).text
            return args
        raw = self.query_one("#rewrite-json", TextArea).text
        try:
            parsed = json.loads(raw)
        except ValueError as exc:
            return f"not valid JSON: {exc}"
        return parsed if isinstance(parsed, dict) else "the arguments must be a JSON object"

    def action_submit(self) -> None:
        edited = self.edited()
        if isinstance(edited, str):
            self._show_problem(edited)
            return
        self._check(edited)

    @work(group="rewrite-check", exclusive=True, exit_on_error=False)
    async def _check(self, arguments: dict[str, Any]) -> None:
        self.post_message(self.Checked(await check_rewrite(self.store, self.request, arguments)))

    @on(Checked)
    def _on_checked(self, message: Checked) -> None:
        result = message.result
        if result.ok:
            self.dismiss(result.arguments)
        else:
            self._show_problem(result.problem or "refused")

    def _show_problem(self, problem: str) -> None:
        error = self.query_one("#rewrite-error", Static)
        error.update(problem)
        error.add_class("-shown")

    def action_cancel(self) -> None:
        self.dismiss(None)


class ScopeButton(RadioButton):
    """A scope choice whose button is filled only when chosen, not just coloured (and the chosen
    label is bold and green; the cursor only underlines, see approval.tcss)."""

    def render(self) -> Content:
        self.BUTTON_INNER = "●" if self.value else " "
        return super().render()


class RememberScreen(ModalScreen[RememberRule | None]):
    """Approve and save a rule: a pattern (the exact command line to start with), what it grants
    in words, a scope, and the blast radius — how many earlier requests in the store the rule
    would have allowed, listed. A rule that does not match this request is saved only on a
    second ``ctrl+s`` (the first one says so)."""

    CSS_PATH = "approval.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+s",
            "save",
            "Save rule & approve",
            id="remember.save",
            tooltip="Save the rule and approve this request",
            priority=True,
        ),
        Binding("escape", "cancel", "Back", id="remember.cancel", tooltip="Back to the request"),
    ]

    def __init__(self, request: ApprovalRequest, store: Store) -> None:
        super().__init__()
        self.request = request
        self.store = store
        self.history: list[ApprovalRecord] = []
        self.matches: list[ApprovalRecord] = []
        self.confirming: RememberRule | None = None  # a non-matching rule ctrl+s was pressed on

    def compose(self) -> ComposeResult:
        req = self.request
        with Vertical(id="remember", classes="approval-dialog"):
            yield Static(
                Content(plain(f"Remember: approve, and allow {req.act.value} matching")),
                classes="dialog-title",
            )
            yield Input(suggest_pattern(req), id="remember-pattern", compact=True)
            examples = command_examples(req)
            if len(examples) > 1:
                text = " · ".join(f"'{p}' {meaning}" for p, meaning in examples)
                yield Static(Content(plain(text)), id="remember-exec-hint", classes="dialog-hint")
            yield Static("", id="remember-grant")
            with Horizontal(id="remember-scope-row"):
                yield Label("scope ", id="remember-scope-label")
                with RadioSet(id="remember-scope", compact=True):
                    for scope in SCOPES:
                        yield ScopeButton(
                            SCOPE_LABELS[scope], value=scope == "workspace", name=scope
                        )
            yield Static("", id="remember-status")
            yield Table(id="remember-preview", cursor_type="row", zebra_stripes=True)
            yield Static("ctrl+s saves and approves · escape goes back", classes="dialog-hint")

    async def on_mount(self) -> None:
        table = self.query_one("#remember-preview", DataTable)
        for label, width in (("#", 3), ("run", 3), ("step", 4), ("act", 5)):
            table.add_column(label, width=width)
        table.add_column("target", width=30)  # fixed widths: the rows never re-measure
        table.add_column("decision", width=8)
        self.history = await self.store.approvals.history()
        self._refresh_preview()

    @property
    def scope(self) -> RuleScope:
        pressed = self.query_one("#remember-scope", RadioSet).pressed_button
        name = pressed.name if pressed is not None else "workspace"
        for scope in SCOPES:
            if scope == name:
                return scope
        return "workspace"

    def rule(self) -> RememberRule:
        pattern = self.query_one("#remember-pattern", Input).value
        return RememberRule(pattern, self.request.act, self.scope)

    def matches_request(self, rule: RememberRule) -> bool:
        req = self.request
        return bool(
            preview_matches([_self_record(req)], rule, workspace=req.workspace, run_id=req.run_id)
        )

    @on(Input.Changed, "#remember-pattern")
    @on(RadioSet.Changed, "#remember-scope")
    def _changed(self) -> None:
        self.confirming = None
        self._refresh_preview()

    def _scope_text(self, scope: RuleScope) -> str:
        req = self.request
        where = {
            "run": f"only run {req.run_id}",
            "workspace": f"every run in {req.workspace}",
            "global": "every run in every workspace",
        }[scope]
        return f"{SCOPE_LABELS[scope]}: {where}"

    def _refresh_preview(self) -> None:
        rule = self.rule()
        req = self.request
        status = self.query_one("#remember-status", Static)
        grant = self.query_one("#remember-grant", Static)
        problem = validate_pattern(rule.pattern)
        table = self.query_one("#remember-preview", DataTable)
        table.clear()
        if problem:
            self.matches = []
            grant.update("")
            status.update(Content.styled(problem, "$text-error"))
            return
        radius = blast_radius(
            self.history, rule, workspace=req.workspace, run_id=req.run_id, before_id=req.id
        )
        self.matches = radius.allowed
        for record in self.matches:
            r = record.request
            decision = record.decision.kind.value if record.decision else record.status
            table.add_row(
                str(r.id),
                str(r.run_id),
                str(r.step),
                r.act.value,
                Content(plain(r.target)),
                decision,
                key=str(r.id),
            )
        grant.update(
            Content.assemble(
                Content.styled("allows ", "$text-muted"),
                Content.styled(plain(grant_text(rule)), "bold"),
                Content.styled(f" · {self._scope_text(rule.scope)}", "$text-muted"),
            )
        )
        if self.matches_request(rule):
            status.update(
                Content.assemble(
                    Content.styled("matches this request", "$text-success"),
                    f" · {radius.describe()}",
                )
            )
        elif self.confirming == rule:
            status.update(
                Content.styled(
                    "does NOT match this request: ctrl+s again saves it anyway"
                    " (this request is approved once)",
                    "bold $text-error",
                )
            )
        else:
            status.update(
                Content.assemble(
                    Content.styled("does NOT match this request", "bold $text-error"),
                    f" · {radius.describe()}",
                )
            )

    def action_save(self) -> None:
        rule = self.rule()
        if validate_pattern(rule.pattern):
            self.query_one("#remember-pattern", Input).focus()
            return
        if not self.matches_request(rule) and self.confirming != rule:
            self.confirming = rule  # a second ctrl+s on the same rule saves it
            self._refresh_preview()
            return
        self.dismiss(rule)

    @on(Input.Submitted, "#remember-pattern")
    def _submitted(self) -> None:
        self.action_save()

    def action_cancel(self) -> None:
        self.dismiss(None)


def _self_record(request: ApprovalRequest) -> ApprovalRecord:
    return ApprovalRecord(request, "pending", None, None, None)
