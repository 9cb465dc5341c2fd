"""What one request carried and why: entry states, manifest entries, sections, the assembly.

The manifest is stored in the trace beside every request (DESIGN §3.2), so the inspector can show
each entry's state, reason and cost without re-running the engine.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, NamedTuple

from io_tui.core.context.labels import OPERATOR, Role, digest
from io_tui.core.context.plan import Rewrite
from io_tui.core.context.summary import Summary
from io_tui.core.contract import estimate_tokens
from io_tui.core.ledger import Observation
from io_tui.core.providers.messages import Message
from io_tui.core.text.heads import is_operator_line


class EntryState(StrEnum):
    FULL = "full"
    CAPPED = "capped"
    ECHOED = "echoed"
    SUPERSEDED = "superseded"
    DROPPED = "dropped"
    CORRECTED = "corrected"
    ELIDED = "elided"
    COLLAPSED = "collapsed"
    SUMMARY = "summary"


# the states in which an entry's own content is not sent: a stub stands for it, or nothing does
STUB_STATES = frozenset(
    {
        EntryState.SUPERSEDED,
        EntryState.DROPPED,
        EntryState.ELIDED,
        EntryState.COLLAPSED,
    }
)


_STATES = frozenset(EntryState)


class ManifestEntry(NamedTuple):
    """One observation (or the synthetic summary / collapse line) and what this request sent:
    the one schema of a manifest entry, written with each request (``to_json``) and read back
    by whoever shows it (``from_json``: the inspector, the trace).

    ``chars`` is what was sent; a ``capped`` entry also says how many characters of the recorded
    result it kept (``kept_chars``, head and tail) out of how many (``total_chars``). A named
    tuple rather than a frozen dataclass: a long run's manifest has one per observation, and a
    tuple is made three times faster.
    """

    step: int
    call_id: str
    kind: str
    target: str
    # a stored state this version does not know (``stale``, of stores written before it was
    # folded into ``superseded``) reads back as the text it was written as
    state: EntryState | str
    reason: str
    superseded_by: int | None
    chars: int
    est_tokens: int
    kept_chars: int | None = None
    total_chars: int | None = None
    # its labels (``labels.py``): what it is, on whose authority, from which source and version,
    # and the digest of what this request sent of it ("" when nothing of its own was sent)
    role: str = ""
    authority: str = ""
    source_ref: str = ""
    source_version: str = ""
    digest: str = ""

    @property
    def is_stub(self) -> bool:
        """Not sent as content: a stub, or a step folded into the summary (state ``summary``,
        of its own kind; the summary itself is the entry of kind ``summary``)."""
        return self.state in STUB_STATES or (self.state == "summary" and self.kind != "summary")

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ManifestEntry:
        """An entry as ``to_json`` stored it, or as an older version did (a field it did not
        record yet reads as empty)."""
        state = str(data.get("state", ""))
        return cls(
            step=int(data.get("step") or 0),
            call_id=str(data.get("call_id") or ""),
            kind=str(data.get("kind", "")),
            target=str(data.get("target", "")),
            state=EntryState(state) if state in _STATES else state,
            reason=str(data.get("reason") or ""),
            superseded_by=data.get("superseded_by"),
            chars=int(data.get("chars") or 0),
            est_tokens=int(data.get("est_tokens") or 0),
            kept_chars=data.get("kept_chars"),
            total_chars=data.get("total_chars"),
            role=str(data.get("role") or ""),
            authority=str(data.get("authority") or ""),
            source_ref=str(data.get("source_ref") or ""),
            source_version=str(data.get("source_version") or ""),
            digest=str(data.get("digest") or ""),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "call_id": self.call_id,
            "kind": self.kind,
            "target": self.target,
            "state": str(self.state),
            "reason": self.reason,
            "superseded_by": self.superseded_by,
            "chars": self.chars,
            "est_tokens": self.est_tokens,
            "kept_chars": self.kept_chars,
            "total_chars": self.total_chars,
            "role": self.role,
            "authority": self.authority,
            "source_ref": self.source_ref,
            "source_version": self.source_version,
            "digest": self.digest,
        }


class Omission(NamedTuple):
    """Something a section's source had that the request left out, and why: a memory note
    (``ref`` its key) expired, superseded or over the block's cap; an instruction file (``ref``
    its path) the read policy denies."""

    ref: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"ref": self.ref, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class Section:
    """A block counted apart from the entries. ``fixed`` sections are the frame (beside the
    ceiling, and the stable prefix prompt caching keeps); the others (memory, turns) are inside
    it. Labelled as entries are (``labels.py``); ``source`` says it in words, ``reason`` why it
    is in the request, and ``omitted`` what of its source was left out and why. A section that
    sent nothing and only says what it left out (an instruction file the policy denies) is
    ``withheld``."""

    name: str
    source: str
    est_tokens: int
    fixed: bool = True
    role: str = ""
    authority: str = ""
    source_ref: str = ""
    source_version: str = ""
    digest: str = ""
    reason: str = ""
    omitted: tuple[Omission, ...] = ()

    @property
    def withheld(self) -> bool:
        return not self.digest and bool(self.omitted)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "est_tokens": self.est_tokens,
            "fixed": self.fixed,
            "role": self.role,
            "authority": self.authority,
            "source_ref": self.source_ref,
            "source_version": self.source_version,
            "digest": self.digest,
            "reason": self.reason,
            "omitted": [o.to_json() for o in self.omitted],
            "withheld": self.withheld,
        }


@functools.lru_cache(maxsize=64)
def _versioned(section: Section, version: str) -> Section:
    """``section`` carrying its derived part's ``version``: the same object while both are the
    same (the frame's sections are, request after request)."""
    return replace(section, source_version=version)


# the derived part (``core/derived/parts.py``) whose version is a section's ``source_version``: the
# system prompt carries the skill catalogue, the tools section the tool catalogue, the memory
# block the memory generation
DERIVED_VERSIONS = {"system": "skills", "tools": "tools", "memory": "memory"}


@dataclass(frozen=True, slots=True)
class Assembly:
    """One assembled request. ``est_tokens`` is what the ceiling bounds (everything but the
    frame); it equals the memory and turns sections plus every entry's tokens."""

    messages: tuple[Message, ...]
    sections: tuple[Section, ...]
    entries: tuple[ManifestEntry, ...]
    ceiling_tokens: int
    est_tokens: int  # what the ceiling bounds: memory block + observations
    frame_tokens: int
    memory_keys: tuple[str, ...] = ()
    compaction_due: bool = False
    entry_cap_chars: int = 0
    summary: Summary | None = None  # the summary standing in for the oldest steps, if any
    folded: bool = False  # this build bought (or digested) a new summary
    rung: str = "whole"  # the deepest rung of the degradation ladder it reached (``ladder.Rung``)
    # the stable/dynamic boundary: ``messages[:stable_messages]`` is the frame, which no request
    # of the run rewrites (a prompt-cache breakpoint ends it); the rest is dynamic
    stable_messages: int = 0
    # the corrections made at the boundary of the step asked for (``correct.py``), each with its
    # whole text: recorded with that step, so every later request sends them as this one did
    corrections: tuple[tuple[Observation, str], ...] = ()
    # what this request changed of the one before it, and why (``plan.Rewrite``); None: it only
    # appends
    rewrite: Rewrite | None = None

    @property
    def total_est_tokens(self) -> int:
        return self.est_tokens + self.frame_tokens

    def manifest_json(self) -> dict[str, Any]:
        return {**self.manifest_head(), "entries": [e.to_json() for e in self.entries]}

    def manifest_head(
        self, derived: Mapping[str, str] | None = None, *, sections: bool = True
    ) -> dict[str, Any]:
        """The manifest without its entries (which come last in ``manifest_json``); ``derived``
        (each derived part's version) gives the system, tools and memory sections theirs.
        ``sections=False``: without the sections too (the caller encodes them)."""
        head = {
            "ceiling_tokens": self.ceiling_tokens,
            "rung": self.rung,
            "est_tokens": self.est_tokens,
            "frame_tokens": self.frame_tokens,
            "entry_cap_chars": self.entry_cap_chars,
            "memory_keys": list(self.memory_keys),
            "summary_through": self.summary.through_step if self.summary else None,
            "boundary": {
                "stable_messages": self.stable_messages,
                "stable_tokens": self.frame_tokens,
                "stable_sections": [s.name for s in self.sections if s.fixed and not s.withheld],
            },
            "rewrite": self.rewrite.to_json() if self.rewrite else None,
        }
        if sections:
            head["sections"] = [s.to_json() for s in self.labelled_sections(derived or {})]
        return head

    def labelled_sections(self, derived: Mapping[str, str] | None = None) -> list[Section]:
        """The sections with the operator's messages counted apart from the model's turns
        (``turns`` carries both while the request is built): each keeps its own role. With
        ``derived``, a section built from a derived part carries that part's version."""
        sections = list(self.sections)
        if derived:
            sections = [
                _versioned(s, version)
                if not s.source_version
                and (version := derived.get(DERIVED_VERSIONS.get(s.name, ""), ""))
                else s
                for s in sections
            ]
        ops = [
            m.content
            for m in self.messages[self.stable_messages :]
            if m.role == "user" and is_operator_line(m.content)
        ]
        if not ops:
            return sections
        tokens = sum(estimate_tokens(text) for text in ops)
        out = []
        for section in sections:
            if section.name == "turns":
                out.append(
                    replace(
                        section,
                        source="assistant turns",
                        est_tokens=max(0, section.est_tokens - tokens),
                        reason=TURNS_REASON,
                    )
                )
                out.append(
                    Section(
                        "operator", "operator messages", tokens, fixed=False,
                        role=Role.OPERATOR, authority=OPERATOR,
                        source_ref=f"{len(ops)} messages", digest=digest("\n".join(ops)),
                        reason=f"the operator's {_count(len(ops), 'message')} to this run, in"
                        " the steps this request carries",
                    )
                )  # fmt: skip
            else:
                out.append(section)
        return out


TURNS_REASON = "the model's own turns in the steps this request carries"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
