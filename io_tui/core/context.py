"""Assemble each request afresh under its ceiling, and say what it carried and why (DESIGN §3.2).

This first version carries the fixed frame, the memory block and the newest observations that
fit; older ones become ``elided`` stubs. The context engine issue replaces the internals
(supersession, stale-read refresh, stub collapse, compaction) behind the same API.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from io_tui.core.contract import TaskContract, estimate_tokens
from io_tui.core.ledger import Observation, StepRecord
from io_tui.core.memory import MemoryNote, render_notes
from io_tui.core.providers.base import CompletionRequest, Message, ToolSpec


class EntryState(StrEnum):
    FULL = "full"
    SUPERSEDED = "superseded"
    REFRESHED = "refreshed"
    REFRESH_FAILED = "refresh_failed"
    ELIDED = "elided"
    COLLAPSED = "collapsed"
    SUMMARY = "summary"


@dataclass(frozen=True, slots=True)
class InstructionFile:
    """A project instruction file (AGENTS.md, CLAUDE.md, the user's own), carried whole."""

    name: str
    source: str
    text: str


@dataclass(frozen=True, slots=True)
class Frame:
    """The fixed frame: never elided, counted and reported beside the ceiling, not inside it."""

    system_prompt: str
    tools: tuple[ToolSpec, ...]
    contract: TaskContract
    instructions: tuple[InstructionFile, ...] = ()


@dataclass(frozen=True, slots=True)
class ManifestEntry:
    step: int
    call_id: str
    kind: str
    target: str
    state: EntryState
    reason: str
    superseded_by: int | None
    chars: int
    est_tokens: int

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "call_id": self.call_id,
            "kind": self.kind,
            "target": self.target,
            "state": self.state.value,
            "reason": self.reason,
            "superseded_by": self.superseded_by,
            "chars": self.chars,
            "est_tokens": self.est_tokens,
        }


@dataclass(frozen=True, slots=True)
class Section:
    name: str
    source: str
    est_tokens: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "est_tokens": self.est_tokens}


@dataclass(frozen=True, slots=True)
class Summary:
    """A compaction summary standing in for every observation up to ``through_step``."""

    through_step: int
    text: str


@dataclass(frozen=True, slots=True)
class Assembly:
    messages: tuple[Message, ...]
    sections: tuple[Section, ...]
    entries: tuple[ManifestEntry, ...]
    ceiling_tokens: int
    est_tokens: int  # what the ceiling bounds: memory block + observations
    frame_tokens: int
    memory_keys: tuple[str, ...] = ()
    compaction_due: bool = False

    @property
    def total_est_tokens(self) -> int:
        return self.est_tokens + self.frame_tokens

    def manifest_json(self) -> dict[str, Any]:
        return {
            "ceiling_tokens": self.ceiling_tokens,
            "est_tokens": self.est_tokens,
            "frame_tokens": self.frame_tokens,
            "memory_keys": list(self.memory_keys),
            "sections": [s.to_json() for s in self.sections],
            "entries": [e.to_json() for e in self.entries],
        }


class RefreshFailed(Exception):
    """A stale read could not be re-read; ``str(exc)`` says why (policy, gone, too large)."""


Refresher = Callable[[Observation], Awaitable[str]]
Summarizer = Callable[[CompletionRequest], Awaitable[str]]


@dataclass
class ContextEngine:
    """Builds every request of one run. Holds the run's summaries so none is bought twice."""

    frame: Frame
    refresh: Refresher | None = None
    summarize: Summarizer | None = None
    summaries: list[Summary] = field(default_factory=list)
    on_summary: Callable[[Summary], Awaitable[None]] | None = None

    async def build(
        self,
        history: Sequence[StepRecord],
        *,
        ceiling_tokens: int,
        notes: Sequence[MemoryNote] = (),
        force_fold: bool = False,
    ) -> Assembly:
        frame_messages, sections = _frame_messages(self.frame)
        frame_tokens = sum(s.est_tokens for s in sections)
        memory = render_notes(notes, max_chars=ceiling_tokens)  # a quarter of the ceiling, in chars
        used = estimate_tokens(memory.text)
        if memory.text:
            sections = (*sections, Section("memory", "store", used))

        # Newest-first fit: walk back from the latest step.
        carried: dict[str, bool] = {}
        for record in reversed(history):
            for obs in reversed(record.observations):
                cost = estimate_tokens(obs.text)
                carried[obs.call_id] = used + cost <= ceiling_tokens
                if carried[obs.call_id]:
                    used += cost

        messages: list[Message] = list(frame_messages)
        if memory.text:
            messages.append(Message("user", memory.text))
        entries: list[ManifestEntry] = []
        for record in history:
            for note in record.operator_messages:
                messages.append(Message("user", f"[operator] {note}"))
            messages.append(Message("assistant", record.text, record.tool_calls))
            for obs in record.observations:
                if carried.get(obs.call_id, False):
                    state, content, reason = EntryState.FULL, obs.text, "newest that fit"
                else:
                    state = EntryState.ELIDED
                    reason = "older than this request's window"
                    content = f"[step {obs.step} {obs.tool} {obs.target}: elided; call it again to see it]"
                    used += estimate_tokens(content)
                messages.append(Message("tool", content, tool_call_id=obs.call_id))
                entries.append(
                    ManifestEntry(
                        obs.step, obs.call_id, obs.kind.value, obs.target, state, reason, None,
                        len(content), estimate_tokens(content),
                    )
                )
        return Assembly(
            tuple(messages), sections, tuple(entries), ceiling_tokens, used, frame_tokens,
            memory.keys,
        )


def _frame_messages(frame: Frame) -> tuple[tuple[Message, ...], tuple[Section, ...]]:
    contract = frame.contract
    task = [f"Goal: {contract.goal}", f"Success criterion: {contract.success_criterion()}"]
    task += [f"Constraint: {c}" for c in contract.constraints]
    task_text = "\n".join(task)
    schemas = json.dumps([t.parameters for t in frame.tools])
    sections = [
        Section("system", "harness", estimate_tokens(frame.system_prompt)),
        Section("tools", f"{len(frame.tools)} tool schemas", estimate_tokens(schemas)),
        Section("contract", "task", estimate_tokens(task_text)),
    ]
    messages = [Message("system", frame.system_prompt), Message("user", task_text)]
    for inst in frame.instructions:
        body = f"Project instructions from {inst.name}:\n{inst.text}"
        messages.append(Message("user", body))
        sections.append(Section(inst.name, inst.source, estimate_tokens(body)))
    return tuple(messages), tuple(sections)
