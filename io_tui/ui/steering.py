"""Steering from the app: the steering screens (actions and command-palette entries), and
operator messages a run ended without receiving.

``IoApp`` binds ``app.inbox`` / ``app.rules`` / ``app.memory`` / ``app.audit`` to the ``open_*``
functions here and lists ``SteeringCommands`` in its command palette.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.app import App
from textual.widgets import Input

from io_tui.ui.commands import ListedCommands
from io_tui.ui.state import RunView


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


def hand_back(app: App[Any], prompt: Input, run: RunView, *, selected: bool) -> None:
    """Messages queued for ``run`` that it ended without receiving are never dropped: they stay
    in its transcript marked "not delivered", and their text goes back into the prompt (when
    the run is selected and the prompt empty: enter sends it as a follow-up) or into a
    notification."""
    if run.live or run.status == "paused":
        return  # a paused run still gets them when it resumes
    lost = [m for m in run.queued if m.delivered_step is None and not m.returned]
    if not lost:
        return
    for message in lost:
        message.returned = True
    text = " ".join(m.text for m in lost)
    if selected and not prompt.value:
        prompt.value = text
        app.notify(
            f"run {run.id} ended ({run.status}) before your message reached it; it is back in "
            "the prompt: enter sends it as a follow-up",
            severity="warning",
        )
    else:
        app.notify(f"not delivered to run {run.id} ({run.status}): {text}", severity="warning")


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
