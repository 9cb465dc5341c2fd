"""A call in flight that reports progress (an MCP server's notifications), as one line of the
transcript's live part: ``↻ mcp__srv__build ██████░░░░ 3/5 · linking``."""

from __future__ import annotations

from io_tui.ui.state import CallProgress

BAR_CELLS = 12


def progress_line(call: CallProgress) -> str:
    figures = _number(call.progress)
    if call.total:
        share = min(1.0, max(0.0, call.progress / call.total))
        filled = round(share * BAR_CELLS)
        bar = "█" * filled + "░" * (BAR_CELLS - filled)
        figures = f"{bar} {figures}/{_number(call.total)}"
    note = f" · {call.message}" if call.message else ""
    return f"↻ {call.name} {figures}{note}"


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
