"""Whether a run that needs the operator may take the selection on the main screen.

A run that asks is selected — the transcript and gauges follow it — unless the operator is
working elsewhere: typing (an input or editor has focus and text) or having pressed a key in
the last ``IDLE_S`` seconds (any key, wherever it went: ``Activity``, which the app keeps and
the approval desk reads too). A new run
is selected unless the operator is typing (it was most likely just started from the new-run
dialog). Otherwise the tree only scrolls to it: the cursor, and what a typed message would go
to, stay put.

A run another process started (the CLI, ACP, a queue worker: ``RunBoard.followed``) never takes
the selection — on a farm runs start all day, and each jump would reload the transcript under
the operator — but is scrolled into view once the operator is idle: no key for ``IDLE_S``
seconds and the main screen on top (no modal, dialog or other screen over it).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from textual.app import App
from textual.widgets import Input

from io_tui.ui.state import RunView

IDLE_S = 3.0  # seconds without a key before an asking run may take the selection


class Activity:
    """When the operator last pressed a key, by ``clock`` (the app notes every key, wherever it
    goes: ``key_pressed``). Tests move a fake clock (the modals arm by it too)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.last_key = float("-inf")

    def key_pressed(self) -> None:
        self.last_key = self.clock()

    def since_key(self) -> float:
        """Seconds since the last key (infinite before the first)."""
        return self.clock() - self.last_key


def typing(app: App[Any]) -> bool:
    focused = app.focused
    if isinstance(focused, Input):
        return bool(focused.value)
    # a focused TextArea (a dialog's) has loaded its module; the main screen has none, and
    # its start does not import TextArea's (~7 ms) only to ask
    text_areas = sys.modules.get("textual.widgets._text_area")
    return (
        text_areas is not None and isinstance(focused, text_areas.TextArea) and bool(focused.text)
    )


def busy(app: App[Any], activity: Activity) -> bool:
    return typing(app) or activity.since_key() < IDLE_S


@dataclass(frozen=True, slots=True)
class Claim:
    """A run to bring into view, and how far it may go."""

    run_id: int
    asking: bool = False  # it asks: selected unless the operator is busy
    elsewhere: bool = False  # another process started it: scrolled to when idle, never selected


def claimant(runs: Mapping[int, RunView], changed: Iterable[int]) -> Claim | None:
    """The run to bring into view among ``changed``: an asking one first, then the newest run
    started here, then the newest started elsewhere; every changed run's claim is cleared."""
    asking: list[int] = []
    new: list[int] = []
    elsewhere: list[int] = []
    for run_id in sorted(changed):
        run = runs.get(run_id)
        if run is None or not (run.wants_attention or run.wants_sight):
            continue
        if run.wants_attention:
            (asking if run.status == "asking" else new).append(run_id)
        else:
            elsewhere.append(run_id)
        run.wants_attention = run.wants_sight = False
    if asking:
        return Claim(asking[-1], asking=True)
    if new:
        return Claim(new[-1])
    return Claim(elsewhere[-1], elsewhere=True) if elsewhere else None
