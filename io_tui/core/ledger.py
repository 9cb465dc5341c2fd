"""Observations: every tool result, bounded where it enters (DESIGN §3.2)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from io_tui.core.providers.base import ToolCall


class ObsKind(StrEnum):
    """What an observation is, for supersession and staleness.

    Supersession keys on ``(kind, target, span)``: only ``READ`` and ``GREP`` supersede.
    A ``WRITE`` to a path makes earlier ``READ``\\s of that path stale.
    """

    READ = "read"
    WRITE = "write"
    LIST = "list"
    FIND = "find"
    GREP = "grep"
    EXEC = "exec"
    MEMORY = "memory"
    SKILL = "skill"
    MCP = "mcp"
    AGENT = "agent"
    ERROR = "error"
    MESSAGE = "message"


SUPERSEDING_KINDS = frozenset({ObsKind.READ, ObsKind.GREP})


@dataclass(frozen=True, slots=True)
class Observation:
    """One tool result as the model will see it, already bounded at entry.

    ``target`` is the path (read/write/list), the pattern (grep/find), the program (exec), or the
    tool name. ``span`` distinguishes partial reads (``"lines 10-60"``) and grep scopes, so only
    an identical request supersedes. ``full_chars`` is the length before bounding.
    """

    step: int
    call_id: str
    tool: str
    kind: ObsKind
    target: str
    text: str
    span: str = ""
    full_chars: int = 0
    is_error: bool = False

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind.value, self.target, self.span)

    @property
    def supersedes_same_key(self) -> bool:
        return self.kind in SUPERSEDING_KINDS and not self.is_error

    @property
    def elided_chars(self) -> int:
        return max(0, self.full_chars - len(self.text))


def bound_keeps(chars: int, cap_chars: int) -> int:
    """How many of a text's ``chars`` characters ``bound_text`` keeps under ``cap_chars``."""
    return chars if chars <= cap_chars else max(0, cap_chars - 200)  # 200: the marker's budget


def bound_text(text: str, cap_chars: int, how_to_get_rest: str) -> str:
    """Cut ``text`` to ``cap_chars`` with a visible marker saying what was elided and how to get it.

    Keeps the head and the tail (errors tend to sit at the end of command output). Text within the
    cap is returned unchanged.
    """
    if len(text) <= cap_chars:
        return text
    keep = bound_keeps(len(text), cap_chars)
    head = keep * 2 // 3
    tail = keep - head
    elided = len(text) - head - tail
    marker = f"\n[… {elided:,} of {len(text):,} chars elided here; {how_to_get_rest} …]\n"
    return text[:head] + marker + (text[-tail:] if tail else "")


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One step of a run as the context engine sees it.

    ``operator_messages`` were delivered at this step's boundary (before the model's turn);
    ``observations`` pair with ``tool_calls`` by ``call_id``, one each.
    """

    step: int
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    observations: tuple[Observation, ...] = ()
    operator_messages: tuple[str, ...] = ()
