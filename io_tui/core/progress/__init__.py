"""The progress ledger of a run (DESIGN §3.8): what a fresh run needs to pick the work up,
kept by the harness from runtime state.

``model.py`` holds the ledger as data (JSON, digest, handles), ``fold.py`` folds it from a run's
events, ``render.py`` writes it as text, ``keeper.py`` keeps a live run's (a revision in the
store each time what it says changes) and reads any run's back; ``continuation`` is what a run
started with ``io-tui run --continue RUN`` carries in its first request.
"""

from __future__ import annotations

from io_tui.core.checks import is_test_command
from io_tui.core.progress.fold import Fold
from io_tui.core.progress.keeper import ProgressKeeper, continuation, ledger_of
from io_tui.core.progress.model import ProgressLedger, handle
from io_tui.core.progress.render import render_ledger

__all__ = [
    "Fold",
    "ProgressKeeper",
    "ProgressLedger",
    "continuation",
    "handle",
    "is_test_command",
    "ledger_of",
    "render_ledger",
]
