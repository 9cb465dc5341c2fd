"""Whether a run that needs the operator may take the selection on the main screen.

A run that asks is selected — the transcript and gauges follow it — unless the operator is
working elsewhere: typing (an input or editor has focus and text) or having pressed a key in
the last ``IDLE_S`` seconds (any key, wherever it went: ``ApprovalDesk.last_key``). A new run
is selected unless the operator is typing (it was most likely just started from the new-run
dialog). Otherwise the tree only scrolls to it: the cursor, and what a typed message would go
to, stay put.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from textual.app import App
from textual.widgets import Input, TextArea

from io_tui.ui.approver import ApprovalDesk
from io_tui.ui.state import RunView

IDLE_S = 3.0  # seconds without a key before an asking run may take the selection


def typing(app: App[Any]) -> bool:
    focused = app.focused
    if isinstance(focused, Input):
        return bool(focused.value)
    return isinstance(focused, TextArea) and bool(focused.text)


def busy(app: App[Any]) -> bool:
    desk = ApprovalDesk.of(app)
    return typing(app) or desk.clock() - desk.last_key < IDLE_S


def claimant(runs: Mapping[int, RunView], changed: Iterable[int]) -> tuple[int, bool] | None:
    """The run to bring into view among ``changed`` (an asking one first, then the newest new
    one) and whether it asks, clearing every changed run's claim."""
    asking: list[int] = []
    new: list[int] = []
    for run_id in sorted(changed):
        run = runs.get(run_id)
        if run is None or not run.wants_attention:
            continue
        run.wants_attention = False
        (asking if run.status == "asking" else new).append(run_id)
    if asking:
        return asking[-1], True
    return (new[-1], False) if new else None
