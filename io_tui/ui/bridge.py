"""The seam between the harness and the app: events become messages, asks become Futures.

``BridgeSink.emit`` is synchronous and never blocks: ``post_message`` only enqueues.
``PostingApprover`` posts ``ApprovalRequested`` carrying a Future and awaits it; the app
answers in ``IoApp.ask_human`` (the approvals screens replace the placeholder answer there).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from textual.app import App

from io_tui.core.approvals import ApprovalRequest, Decision
from io_tui.core.events import RunEvent
from io_tui.ui.messages import ApprovalRequested, RunEventReceived


class BridgeSink:
    """An EventSink that forwards every event to the app as a ``RunEventReceived`` message."""

    def __init__(self, app: App[Any], on_run_id: Callable[[int], None] | None = None) -> None:
        self.app = app
        self.run_id: int | None = None
        self._on_run_id = on_run_id

    def emit(self, event: RunEvent) -> None:
        if self.run_id is None:
            self.run_id = event.run_id
            if self._on_run_id is not None:
                self._on_run_id(event.run_id)
        self.app.post_message(RunEventReceived(event))


class PostingApprover:
    """An Approver that asks the app: posts ``ApprovalRequested`` and awaits its Future."""

    def __init__(self, app: App[Any]) -> None:
        self.app = app

    async def decide(self, request: ApprovalRequest) -> Decision:
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self.app.post_message(ApprovalRequested(request, future))
        try:
            return await future
        except asyncio.CancelledError:
            if not future.done():
                future.cancel()
            raise


def resolve(future: asyncio.Future[Decision], decision: Decision) -> None:
    """Set a decision unless the future is already settled (the run was cancelled, or shutdown)."""
    if not future.done():
        future.set_result(decision)
