"""The approval modal: one request, five decisions (DESIGN §3.4, §5).

``ApprovalScreen`` is a ``ModalScreen[Decision]``: it shows the run (and its parent), the act, the
target, the rule and layer that asked, and the action itself — a diff for a write, argv and cwd for
exec, name and arguments for an MCP tool. Keys ``1``–``5`` approve, rewrite, remember, deny and
defer (letter aliases ``y e a n d`` only with ``[ui] letter_shortcuts``); escape defers, so a
stray key never approves or denies. The modal arms before it takes a decision: for ``arm_s``
after it is painted, and again after every key pressed meanwhile, keys (and clicks on its
buttons) are ignored, so keystrokes racing the ask cannot decide it. A write's diff is never
shown against a file not yet read: ``prepared`` reads the file (and the run's goal) before the
modal is made; a modal made without it says it is reading the file and arms only once the diff
is right. Rewrite, remember and deny
open small typed modals of their own (``rewrite``, ``remember``, ``deny``) and dismiss with their
result; how the action is shown is ``request_view`` (shared with the inbox).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.getters import query_one
from textual.message import Message
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widget import Widget
from textual.widgets import Button, Label, Static

from io_tui.config import UISettings
from io_tui.core import (
    ApprovalRequest,
    Decision,
    DecisionKind,
    RememberRule,
    Store,
    is_elicitation,
    is_outside_sandbox,
)
from io_tui.ui.answers import on_answer
from io_tui.ui.screens.request_view import is_file_write, is_mcp, read_current, request_body
from io_tui.ui.terminal_text import file_name, plain
from io_tui.ui.widgets.diff_view import DiffView


class ApprovalScreen(ModalScreen[Decision]):
    """Decide one request. Dismisses with the Decision; escape is a defer. Ignores keys and
    clicks until armed (``armed``)."""

    class CurrentLoaded(Message):
        """The target file as it is now (read in a worker; None: missing or not shown)."""

        def __init__(self, current: str | None) -> None:
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

    dialog = query_one("#approval", Vertical)
    title_line = query_one("#approval-title", Static)
    body = query_one("#approval-body", Vertical)

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

    @classmethod
    async def prepared(
        cls, request: ApprovalRequest, *, store: Store | None = None, **options: Any
    ) -> ApprovalScreen:
        """The modal for ``request`` with what it shows read first: the file a write changes (so
        its first frame is the right diff) and, from ``store``, the run's goal and parent."""
        if store is not None and options.get("goal") is None:
            try:
                row = await store.runs.get(request.run_id)
            except Exception:  # the goal is a courtesy: the modal shows without it
                row = None
            if row is not None:
                options["goal"] = row.goal
                options.setdefault("parent_run_id", row.parent_run_id)
        if is_file_write(request) and not options.get("current_known"):
            options["current"] = await asyncio.to_thread(read_current, request)
            options["current_known"] = True
        return cls(request, store=store, **options)

    # -- arming --

    @property
    def armed(self) -> bool:
        return self.armed_at is not None and self.clock() >= self.armed_at

    @property
    def showing_right(self) -> bool:
        """Whether the body shows what will be performed: a write's diff once the file it
        changes has been read."""
        return self.current_known or not is_file_write(self.request)

    def _start_arming(self) -> None:
        """(Re)start the arming time: after the first paint of the right body, and after each
        key pressed early."""
        if not self.showing_right:
            return  # armed from the paint after the file is read
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
                yield _mouse_only(Button("1 Approve", id="act-approve", variant="success"))
                yield _mouse_only(Button("2 Rewrite", id="act-rewrite"))
                yield _mouse_only(Button("3 Remember", id="act-remember", variant="primary"))
                yield _mouse_only(Button("4 Deny", id="act-deny", variant="error"))
                yield _mouse_only(Button("5 Defer", id="act-defer"))
            yield Static(
                "escape defers · v toggles the diff" if is_file_write(req) else "escape defers",
                id="approval-hint",
            )
            yield Static("arming: keys wait a moment…", id="approval-arming")

    def _title(self) -> Content:
        req = self.request
        prefix = f"{self.position}  " if self.position else ""
        what = (
            "fill in a form for"
            if is_elicitation(req)
            else "call MCP tool"
            if is_mcp(req)
            else "rerun OUTSIDE THE SANDBOX"
            if is_outside_sandbox(req)
            else req.act.value
        )
        return Content.assemble(
            Content.styled(prefix, "$text-muted"),
            Content.styled(f"Run {req.run_id} asks to {what} ", "bold"),
            Content.styled(file_name(req.target), "bold $text-accent"),
        )

    def set_position(self, position: str) -> None:
        """ "1 of N": the desk updates it as more runs ask."""
        self.position = position
        if self.is_mounted:
            self.title_line.update(self._title())

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
        if not self.showing_right:
            what = Content(plain(f"{self.request.target} — reading the file as it is now…"))
            return iter([Label(what, classes="approval-diff-label")])
        return request_body(self.request, self.current)

    async def on_mount(self) -> None:
        self.dialog.border_title = "Approval"
        if is_file_write(self.request) and not self.current_known:
            self._load_current()
        self.call_after_refresh(self._start_arming)
        if self.initial_action:  # chosen in the inbox, by its own key: no arming for it
            self.call_after_refresh(self.run_action, self.initial_action)

    @work(group="approval-load", exclusive=True, exit_on_error=False)
    async def _load_current(self) -> None:
        self.post_message(self.CurrentLoaded(await asyncio.to_thread(read_current, self.request)))

    @on_answer(CurrentLoaded)
    async def _on_current_loaded(self, message: CurrentLoaded) -> None:
        """The file as it is now: the diff is shown against it, and the modal starts to arm."""
        self.current, self.current_known = message.current, True
        if not self.is_attached:  # the screen is being torn down (the app quit while it loaded)
            return
        body = self.body
        await body.remove_children()
        await body.mount_all(list(self._body()))
        self.call_after_refresh(self._start_arming)

    # -- actions --

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_diff":
            return is_file_write(self.request)
        if action in ("rewrite", "remember") and (
            self.store is None or is_elicitation(self.request) or is_outside_sandbox(self.request)
        ):
            return None  # a form is filled (approve), declined (deny) or cancelled (defer)
        return True

    @on(Button.Pressed)
    async def _pressed(self, event: Button.Pressed) -> None:
        if not self.armed:
            return
        if event.button.id:  # act-approve → approve: the dialogs own the bare ids
            await self.run_action(event.button.id.removeprefix("act-"))

    def action_approve(self) -> None:
        if not is_elicitation(self.request):
            self.dismiss(Decision.approve())
            return
        from io_tui.ui.screens.elicit import ElicitScreen

        def filled(content: dict[str, Any] | None) -> None:
            if content is not None:  # the server's accept, with the form's content
                self.dismiss(Decision(DecisionKind.APPROVE, arguments=content))

        self.app.push_screen(ElicitScreen(self.request), filled)

    def action_defer(self) -> None:
        self.dismiss(Decision.defer())

    def action_toggle_diff(self) -> None:
        for view in self.query(DiffView):  # none while the file is read
            view.toggle()

    # The three editors are imported when first opened (rule previews, the tools' models).
    def action_deny(self) -> None:
        from io_tui.ui.screens.deny import DenyScreen

        def denied(reason: str | None) -> None:
            if reason is not None:
                self.dismiss(Decision.deny(reason or None))

        self.app.push_screen(DenyScreen(self.request), denied)

    def action_rewrite(self) -> None:
        from io_tui.ui.screens.rewrite import RewriteScreen

        if self.store is None:
            return

        def rewritten(arguments: dict[str, Any] | None) -> None:
            if arguments is not None:
                self.dismiss(Decision(DecisionKind.REWRITE, arguments=arguments))

        self.app.push_screen(RewriteScreen(self.request, self.store), rewritten)

    def action_remember(self) -> None:
        from io_tui.ui.screens.remember import RememberScreen

        if self.store is None:
            return

        def remembered(rule: RememberRule | None) -> None:
            if rule is not None:
                self.dismiss(Decision(DecisionKind.REMEMBER, rule=rule))

        self.app.push_screen(RememberScreen(self.request, self.store), remembered)


def _mouse_only(button: Button) -> Button:
    """Buttons are for the mouse: never focusable, from before the screen first gives focus,
    so a focused button can never turn enter into an approve."""
    button.can_focus = False
    return button
