"""The remember modal: approve and save a rule — its pattern (exactly what was asked, or a wider
choice), what it grants in words, its scope, and the earlier requests it would have allowed
(opened from the approval modal)."""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.getters import query_one
from textual.screen import ModalScreen
from textual.widgets import Input, Label, RadioButton, RadioSet, Static

from io_tui.core import (
    SCOPE_LABELS,
    SCOPES,
    ApprovalRecord,
    ApprovalRequest,
    PatternChoice,
    RememberRule,
    RuleScope,
    Store,
    blast_radius,
    grant_text,
    pattern_choices,
    preview_matches,
    validate_pattern,
)
from io_tui.ui.terminal_text import plain
from io_tui.ui.widgets.table import Table


class ChoiceButton(RadioButton):
    """A choice (a scope, a pattern) whose button is filled only when chosen, not just coloured
    (and the chosen label is bold and green; the cursor only underlines, see approval.tcss)."""

    def render(self) -> Content:
        self.BUTTON_INNER = "●" if self.value else " "
        return super().render()


class RememberScreen(ModalScreen[RememberRule | None]):
    """Approve and save a rule: a pattern (exactly what was asked to start with: the command
    line, the path; the wider choices listed under it, each with how many earlier requests it
    would have allowed), what it grants in words, a scope, and the blast radius — the earlier
    requests in the store the rule would have allowed, listed. A rule that does not match this
    request is saved only on a second ``ctrl+s`` (the first one says so)."""

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

    pattern = query_one("#remember-pattern", Input)
    scope_set = query_one("#remember-scope", RadioSet)
    grant = query_one("#remember-grant", Static)
    status = query_one("#remember-status", Static)
    preview = query_one("#remember-preview", Table)

    def __init__(self, request: ApprovalRequest, store: Store) -> None:
        super().__init__()
        self.request = request
        self.store = store
        self.history: list[ApprovalRecord] = []
        self.matches: list[ApprovalRecord] = []
        self.confirming: RememberRule | None = None  # a non-matching rule ctrl+s was pressed on
        self.choices: list[PatternChoice] = pattern_choices(request)
        self.ready = False  # the history is read and the choices say what each would allow

    def compose(self) -> ComposeResult:
        req = self.request
        with Vertical(id="remember", classes="approval-dialog"):
            yield Static(
                Content(plain(f"Remember: approve, and allow {req.act.value} matching")),
                classes="dialog-title",
            )
            yield Input(self.choices[0].pattern, id="remember-pattern", compact=True)
            if len(self.choices) > 1:  # exactly this first, then wider, each with its radius
                with RadioSet(id="remember-choices", compact=True):
                    for index, choice in enumerate(self.choices):
                        yield ChoiceButton(
                            self._choice_label(choice, ""),
                            value=index == 0,
                            name=str(index),
                            classes="-choice",
                        )
            yield Static("", id="remember-grant")
            with Horizontal(id="remember-scope-row"):
                yield Label("scope ", id="remember-scope-label")
                with RadioSet(id="remember-scope", compact=True):
                    for scope in SCOPES:
                        yield ChoiceButton(
                            SCOPE_LABELS[scope], value=scope == "workspace", name=scope
                        )
            yield Static("", id="remember-status")
            yield Table(id="remember-preview", cursor_type="row", zebra_stripes=True)
            yield Static("ctrl+s saves and approves · escape goes back", classes="dialog-hint")

    async def on_mount(self) -> None:
        table = self.preview
        for label, width in (("#", 3), ("run", 3), ("step", 4), ("act", 5)):
            table.add_column(label, width=width)
        table.add_column("target", width=30)  # fixed widths: the rows never re-measure
        table.add_column("decision", width=8)
        self.history = await self.store.approvals.history()
        self._refresh_preview()
        self.ready = True

    @property
    def scope(self) -> RuleScope:
        pressed = self.scope_set.pressed_button
        name = pressed.name if pressed is not None else "workspace"
        for scope in SCOPES:
            if scope == name:
                return scope
        return "workspace"

    def rule(self) -> RememberRule:
        pattern = self.pattern.value
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
        self._show_choice()
        self._refresh_preview()

    @on(RadioSet.Changed, "#remember-choices")
    def _chosen(self, event: RadioSet.Changed) -> None:
        choice = self.choices[int(event.pressed.name or 0)]
        self.pattern.value = choice.pattern

    def _show_choice(self) -> None:
        """The choice the pattern is, filled; none when the operator typed another pattern."""
        pattern = self.pattern.value
        with self.prevent(RadioButton.Changed):  # the set would press a button back on
            for button in self.query(ChoiceButton).filter(".-choice"):
                button.value = self.choices[int(button.name or 0)].pattern == pattern

    def _choice_label(self, choice: PatternChoice, radius: str) -> Content:
        """``src/*       every file under src/ · 1 of 2 earlier (1 run)``, patterns aligned."""
        width = max(len(plain(c.pattern)) for c in self.choices)
        return Content.assemble(
            Content.styled(plain(choice.pattern).ljust(width + 2), "bold"),
            plain(choice.meaning),
            Content.styled(f" · {radius}" if radius else "", "$text-muted"),
        )

    def _label_choices(self) -> None:
        """Each choice with what it would have allowed, under the scope chosen now."""
        req = self.request
        for button in self.query(ChoiceButton).filter(".-choice"):
            choice = self.choices[int(button.name or 0)]
            rule = RememberRule(choice.pattern, req.act, self.scope)
            radius = blast_radius(
                self.history, rule, workspace=req.workspace, run_id=req.run_id, before_id=req.id
            )
            button.label = self._choice_label(choice, radius.short())

    def _scope_text(self, scope: RuleScope) -> str:
        req = self.request
        where = {
            "run": f"only run {req.run_id}",
            "workspace": f"every run in {req.workspace}",
            "global": "every run in every workspace",
        }[scope]
        return f"{SCOPE_LABELS[scope]}: {where}"

    def _refresh_preview(self) -> None:
        self._label_choices()
        rule = self.rule()
        req = self.request
        status = self.status
        grant = self.grant
        problem = validate_pattern(rule.pattern)
        table = self.preview
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
            self.pattern.focus()
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
