"""``x`` on a run no process drives (paused, interrupted, queued): what the confirmation asks,
and what the notification says once core ``cancel_run`` has ended it
(``RunDesk.cancel``). Pure text, no Textual."""

from __future__ import annotations

from io_tui.core import Cancelled, CancelPlan
from io_tui.ui.terminal_text import plain

WHY = {
    "paused": "its ask deferred",
    "interrupted": "its process died",
    "queued": "no worker has taken it yet",
}


def question(plan: CancelPlan) -> str:
    """``Cancel run 3, “fix parse”? It is paused, its ask deferred.`` / ``Its request 7 (write
    src/app.py) is denied ("the run was cancelled") and leaves the inbox.`` / ``It ends
    cancelled and cannot be resumed.``"""
    asked = next(run for run in plan.runs if run.id == plan.run_id)
    why = WHY.get(asked.status)
    lines = [
        f"Cancel run {asked.id}, {_goal(asked.goal)}? It is {asked.status}"
        + (f", {why}." if why else ".")
    ]
    others = [run for run in plan.runs if run.id != plan.run_id]
    if others:
        ids = ", ".join(str(run.id) for run in others)
        lines.append(
            f"Its sub-agent chain (run {ids}) waits on it or it on them: "
            "they are cancelled with it."
        )
    if plan.pending:
        asks = "; ".join(
            f"{r.request.id} ({r.request.act.value} {plain(r.request.target)})"
            for r in plan.pending
        )
        one = len(plan.pending) == 1
        lines.append(
            f"Its {'request' if one else 'requests'} {asks} {'is' if one else 'are'} denied"
            f' ("the run was cancelled") and {"leaves" if one else "leave"} the inbox.'
        )
    lines.append("It ends cancelled and cannot be resumed.")
    return "\n".join(lines)


def said(done: Cancelled) -> str:
    """``run 3 cancelled; request 7 denied``, and the runs of its chain."""
    runs = ", ".join(str(run.id) for run in done.runs)
    line = f"run {runs} cancelled" if len(done.runs) == 1 else f"runs {runs} cancelled"
    if done.approvals:
        noun = "request" if len(done.approvals) == 1 else "requests"
        line += f"; {noun} {', '.join(str(a) for a in done.approvals)} denied"
    return line


def _goal(goal: str) -> str:
    text = plain(" ".join(goal.split()))
    return f"“{text[:60]}…”" if len(text) > 60 else f"“{text}”"
