"""Whether a run that needs the operator may take the selection on the main screen.

A run that just started, or just began to ask, comes into view. It is also selected — the
transcript and gauges follow it — unless the operator is working elsewhere: typing (an input
has focus and text) or having pressed a key or clicked within the last ``IDLE_S`` seconds.
Then only the tree scrolls to it; the cursor, and what a typed message would go to, stay put.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from time import monotonic
from typing import Any

from textual.widgets import Input, TextArea

from io_tui.ui.state import RunView

IDLE_S = 3.0  # seconds without a key or a click before a run may take the selection


class Attention:
    def __init__(self) -> None:
        self.last_input = float("-inf")

    def touched(self) -> None:
        """The operator pressed a key or clicked."""
        self.last_input = monotonic()

    def busy(self, focused: Any) -> bool:
        if isinstance(focused, Input) and focused.value:
            return True
        if isinstance(focused, TextArea) and focused.text:
            return True
        return monotonic() - self.last_input < IDLE_S


def claimant(runs: Mapping[int, RunView], changed: Iterable[int]) -> int | None:
    """The run to bring into view among ``changed`` (an asking one first, then the newest new
    one), clearing every changed run's claim."""
    asking: list[int] = []
    new: list[int] = []
    for run_id in sorted(changed):
        run = runs.get(run_id)
        if run is None or not run.wants_attention:
            continue
        run.wants_attention = False
        (asking if run.status == "asking" else new).append(run_id)
    if asking:
        return asking[-1]
    return new[-1] if new else None
