"""Reading a reviewer's answer: exactly two lines, ``VERDICT: approve|deny|escalate`` and
``REASON: …``, and nothing else. Anything else is out of format, which the reviewer turns into
an escalation: only a clear, well-formed approve lets an act go ahead.
"""

from __future__ import annotations

import re

from io_tui.core.authority.review import ReviewVerdict

MAX_REASON_CHARS = 300
_VERDICT = re.compile(r"VERDICT:[ \t]*(approve|deny|escalate)\.?", re.IGNORECASE)
_REASON = re.compile(r"REASON:[ \t]*(\S.*)", re.IGNORECASE)


def parse_answer(text: str) -> tuple[ReviewVerdict, str] | None:
    """(verdict, reason) of a well-formed answer; None for anything else."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if len(lines) != 2:
        return None
    verdict = _VERDICT.fullmatch(lines[0])
    reason = _REASON.fullmatch(lines[1])
    if verdict is None or reason is None:
        return None
    said = reason.group(1).strip()
    if len(said) > MAX_REASON_CHARS:
        return None
    return ReviewVerdict(verdict.group(1).lower()), said
