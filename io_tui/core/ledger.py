"""Observations: every tool result, bounded where it enters (DESIGN §3.2)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from enum import StrEnum

from io_tui.core.providers.messages import ToolCall


class ObsKind(StrEnum):
    """What an observation is, for supersession and staleness.

    A later call of the same kind, target and span supersedes an earlier one for the kinds in
    ``SUPERSEDING_KINDS`` (a ``READ`` also supersedes the earlier reads of the same path whose
    lines it covers). A ``WRITE`` to a path makes the earlier results that depend on it (reads
    of it, greps and finds that matched it: ``Observation.seen``) stale.
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
    RECALL = "recall"  # a recorded result read back from the trace (``recall_result``)


SUPERSEDING_KINDS = frozenset(
    {ObsKind.READ, ObsKind.GREP, ObsKind.FIND, ObsKind.LIST, ObsKind.EXEC, ObsKind.RECALL}
)


@dataclass(frozen=True, slots=True)
class Seen:
    """A file as a result saw it: enough to tell, with one ``stat``, whether it is still so.

    ``path`` is workspace-relative. ``digest`` is ``content_digest`` of the bytes the result
    was made from; a changed size or mtime is confirmed by hashing again (a ``touch`` is not a
    change). ``size == -1`` records only that the path existed (a find's hits)."""

    path: str
    size: int
    mtime_ns: int
    digest: str = ""

    def to_json(self) -> list[object]:
        return [self.path, self.size, self.mtime_ns, self.digest]

    @classmethod
    def from_json(cls, data: list[object]) -> Seen:
        path, size, mtime_ns, digest = data
        return cls(str(path), int(size), int(mtime_ns), str(digest))  # type: ignore[call-overload]


def content_digest(data: bytes) -> str:
    """What ``Seen.digest`` holds: a short hash of a file's bytes."""
    return hashlib.blake2b(data, digest_size=12).hexdigest()


@dataclass(frozen=True, slots=True)
class Observation:
    """One tool result as the model will see it, already bounded at entry.

    ``target`` is the path (read/write/list), the pattern (grep/find), the program (exec), or the
    tool name. ``span`` distinguishes partial reads (``"lines 10-60"``) and grep scopes, so only
    an identical request supersedes; a sub-agent's answer names its child run there (``"run
    7"``: the authority its label gives, ``context/labels.py``). ``full_chars`` is the length before bounding.

    ``seen`` is what the result was made from (the file a read read, the files a grep matched,
    the paths a find found), so the context engine can tell when it no longer holds.
    ``ran_ns`` is when the tool ran (start, end; wall clock in ns, the clock of file mtimes), so
    a file changed on disk can be put down to the tool that ran when it changed.

    A *correction* (``corrects`` names the call whose result it corrects) is the harness's own
    re-read of a result that went out of date, made at a step's boundary and sent after the
    newest message rather than in place of the old copy (DESIGN §3.2): its ``text`` starts with
    the line saying what changed and since when.
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
    seen: tuple[Seen, ...] = ()
    ran_ns: tuple[int, int] = (0, 0)
    corrects: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind.value, self.target, self.span)

    @property
    def supersedes_same_key(self) -> bool:
        return self.kind in SUPERSEDING_KINDS and not self.is_error

    @property
    def recorded_keeps(self) -> int:
        """How many characters of the tool's whole output ``text`` holds: all of them, unless
        it was cut where it entered (``bound_text``'s marker says how many were elided)."""
        if self.full_chars <= len(self.text):
            return self.full_chars or len(self.text)
        found = _ELIDED.search(self.text)
        return self.full_chars - int(found[1].replace(",", "")) if found else len(self.text)

    @property
    def elided_chars(self) -> int:
        return max(0, self.full_chars - len(self.text))


_ELIDED = re.compile(r"\n\[… ([\d,]+) of [\d,]+ chars elided here; ")


def bound_keeps(chars: int, cap_chars: int) -> int:
    """How many of a text's ``chars`` characters ``bound_text`` keeps under ``cap_chars``."""
    return chars if chars <= cap_chars else max(0, cap_chars - 200)  # 200: the marker's budget


def is_capped(obs: Observation, cap: int) -> bool:
    """Whether what is sent of ``obs`` is less than the tool's whole output: cut where it
    entered (``Observation.full_chars``), or now, at this request's entry cap."""
    return len(obs.text) > cap or obs.full_chars > len(obs.text)


def capped_chars(obs: Observation, cap: int) -> tuple[int, int]:
    """(kept, total): how many characters of the tool's whole output a capped entry sends."""
    total = max(obs.full_chars, len(obs.text))
    kept = obs.recorded_keeps
    if len(obs.text) > cap:
        kept = min(kept, bound_keeps(len(obs.text), cap))
    return kept, total


def bound_head(chars: int, cap_chars: int) -> int:
    """Where ``bound_text``'s marker starts in a text of ``chars`` characters it cuts: the
    offset of the first elided character."""
    return bound_keeps(chars, cap_chars) * 2 // 3


def bound_text(text: str, cap_chars: int, how_to_get_rest: str) -> str:
    """Cut ``text`` to ``cap_chars`` with a visible marker saying what was elided and how to get it.

    Keeps the head and the tail (errors tend to sit at the end of command output). Text within the
    cap is returned unchanged.
    """
    if len(text) <= cap_chars:
        return text
    keep = bound_keeps(len(text), cap_chars)
    head = bound_head(len(text), cap_chars)
    tail = keep - head
    elided = len(text) - head - tail
    marker = f"\n[… {elided:,} of {len(text):,} chars elided here; {how_to_get_rest} …]\n"
    return text[:head] + marker + (text[-tail:] if tail else "")


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One step of a run as the context engine sees it.

    ``operator_messages`` and then ``corrections`` (the harness's re-reads of results that went
    out of date: ``Observation.corrects``) were delivered at this step's boundary, before the
    model's turn; ``observations`` pair with ``tool_calls`` by ``call_id``, one each.
    """

    step: int
    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    observations: tuple[Observation, ...] = ()
    operator_messages: tuple[str, ...] = ()
    corrections: tuple[Observation, ...] = ()
