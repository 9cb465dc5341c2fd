"""Remembered rules: listed and revocable (the same rows ``io-tui rules list|revoke`` shows)."""

from __future__ import annotations

from typing import ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.getters import query_one
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from io_tui.core import SCOPE_LABELS, RememberedRule, Store
from io_tui.ui.answers import on_answer
from io_tui.ui.screens.confirm import ConfirmScreen
from io_tui.ui.screens.inbox import format_time
from io_tui.ui.widgets.footer import ScreenFooter
from io_tui.ui.widgets.table import Table


def applies_to(rule: RememberedRule) -> str:
    if rule.scope == "run":
        return f"run {rule.run_id}"
    if rule.scope == "workspace":
        return rule.workspace or ""
    return SCOPE_LABELS["global"]


class RulesScreen(Screen[None]):
    CSS_PATH = "rules.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "x,delete", "revoke", "Revoke", id="rules.revoke", tooltip="Revoke the highlighted rule"
        ),
        Binding(
            "h",
            "toggle_revoked",
            "Show revoked",
            id="rules.revoked",
            tooltip="Also list revoked rules",
        ),
        Binding("escape,q", "close", "Back", id="rules.close", tooltip="Back to the runs"),
    ]

    class Loaded(Message):
        """The rules as read from the store (posted by the load worker)."""

        def __init__(self, rules: list[RememberedRule]) -> None:
            super().__init__()
            self.rules = rules

    rules_title = query_one("#rules-title", Static)
    rules_table = query_one("#rules-table", Table)

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store
        self.rules: list[RememberedRule] = []
        self.show_revoked = False

    def compose(self) -> ComposeResult:
        yield Static("Remembered rules", id="rules-title")
        yield Table(id="rules-table", cursor_type="row", zebra_stripes=True)
        yield Static(
            "A remembered allow never beats a deny: policy is deny-first across every layer.",
            id="rules-hint",
        )
        yield ScreenFooter()

    def on_mount(self) -> None:
        table = self.rules_table
        # (column, priority, elidable down to): a narrow table drops the least important first
        for label, priority, shrink_to in (
            ("#", 8, None),
            ("act", 6, None),
            ("effect", 7, None),
            ("pattern", 9, 10),
            ("scope", 5, None),
            ("applies to", 3, 10),
            ("from request", 1, None),
            ("saved", 0, None),
            ("state", 4, None),
        ):
            table.add_column(label, key=label, priority=priority, shrink_to=shrink_to)
        self.load()

    @work(group="rules", exclusive=True, exit_on_error=False)
    async def load(self) -> None:
        self.post_message(
            self.Loaded(await self.store.rules.list(include_revoked=self.show_revoked))
        )

    @on_answer(Loaded)
    def _on_loaded(self, message: Loaded) -> None:
        """Update the table by key (no clear): the cursor stays on its rule."""
        self.rules = message.rules
        table = self.rules_table
        wanted = {str(r.id) for r in self.rules}
        for key in [k for k in table.rows if k.value not in wanted]:
            table.remove_row(key)
        have = {k.value for k in table.rows}
        for rule in self.rules:
            state = "revoked" if rule.revoked_at else "active"
            if str(rule.id) in have:
                table.update_cell(str(rule.id), "state", state)
                continue
            table.add_row(
                str(rule.id),
                rule.act.value,
                rule.effect.value,
                rule.pattern,
                SCOPE_LABELS.get(rule.scope, rule.scope),
                applies_to(rule),
                f"#{rule.approval_id}" if rule.approval_id else "",
                format_time(rule.created_at),
                state,
                key=str(rule.id),
            )
        active = sum(1 for r in self.rules if r.revoked_at is None)
        self.rules_title.update(f"Remembered rules — {active} active")
        self.refresh_bindings()  # revoke applies to an active highlighted rule

    def selected(self) -> RememberedRule | None:
        table = self.rules_table
        if table.row_count == 0:
            return None
        key = table.ordered_rows[table.cursor_row].key.value
        return next((r for r in self.rules if str(r.id) == key), None)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "revoke":
            rule = self.selected() if self.is_mounted else None
            return None if rule is None or rule.revoked_at else True
        return True

    @work(group="rules", exit_on_error=False)
    async def action_revoke(self) -> None:
        """Revoke the highlighted rule once the operator says yes."""
        rule = self.selected()
        if rule is None:
            return
        what = f"{rule.effect.value} {rule.act.value} {rule.pattern}"
        after = "will ask again" if rule.effect.value == "allow" else "are no longer denied"
        question = f"Revoke rule {rule.id}: {what}? The requests it matched {after}."
        if not await self.app.push_screen_wait(ConfirmScreen(question)):
            return
        if await self.store.rules.revoke(rule.id):
            self.notify(
                f"revoked rule {rule.id}: {rule.effect.value} {rule.act.value} {rule.pattern}"
            )
        self.load()

    def action_toggle_revoked(self) -> None:
        self.show_revoked = not self.show_revoked
        self.load()

    def action_close(self) -> None:
        self.dismiss(None)
