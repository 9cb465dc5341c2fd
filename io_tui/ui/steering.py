"""Opening the steering screens from the app: actions and command-palette entries.

``IoApp`` binds ``app.inbox`` / ``app.rules`` / ``app.memory`` / ``app.audit`` to the ``open_*``
functions here and lists ``SteeringCommands`` in its command palette.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.app import App

from io_tui.ui.commands import ListedCommands


def _store(app: App[Any]) -> Any:
    return getattr(app, "store")  # noqa: B009 - IoApp.store, kept loose to avoid a cycle


def selected_workspace(app: App[Any]) -> str | None:
    """The workspace of the run selected on the main screen, if any."""
    main = getattr(app, "_main_screen", lambda: None)()
    run_id = getattr(main, "selected_run", None)
    runs = getattr(app, "runs", {})
    run = runs.get(run_id) if run_id is not None else None
    workspace = getattr(run, "workspace", None) or getattr(app, "demo_workspace", None)
    return str(workspace) if workspace else None


def open_inbox(app: App[Any]) -> None:
    from io_tui.ui.screens.inbox import InboxScreen

    app.push_screen(InboxScreen(_store(app), poll_interval=getattr(app, "poll_interval", 2.0)))


def open_rules(app: App[Any]) -> None:
    from io_tui.ui.screens.rules import RulesScreen

    app.push_screen(RulesScreen(_store(app)))


def open_memory(app: App[Any], workspace: str | None = None) -> None:
    from io_tui.ui.screens.memory_editor import MemoryEditorScreen

    app.push_screen(MemoryEditorScreen(_store(app), workspace or selected_workspace(app)))


def open_audit(app: App[Any]) -> None:
    from io_tui.ui.screens.audit import AuditScreen

    app.push_screen(AuditScreen(_store(app)))


class SteeringCommands(ListedCommands):
    def commands(self) -> list[tuple[str, Callable[[], Any], str]]:
        app = self.app
        return [
            ("Approvals: inbox", partial(open_inbox, app), "every pending request, oldest first"),
            ("Approvals: remembered rules", partial(open_rules, app), "list and revoke"),
            ("Approvals: audit", partial(open_audit, app), "every decision, rate, median wait"),
            ("Memory: open editor", partial(open_memory, app), "notes, pins, recalls, caps"),
        ]
