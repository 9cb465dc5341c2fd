"""Durable memory as the agent sees it: notes, caps, eviction and recall rendering (DESIGN §3.3).

Everything here is pure (no store, no I/O) so the rules can be tested and benchmarked alone:

- ``truncate_value`` cuts an over-long value to *exactly* the per-note cap, marker included, so a
  note is never refused for its length and never silently cut.
- ``plan_write`` decides which notes a write evicts: oldest first, never the note being written,
  never a pinned one. When pinned notes leave no room, the plan says so and nothing is evicted.
- ``find_restated`` spots a new note that mostly repeats another, so two notes never disagree
  silently.
- ``render_notes`` turns notes into the memory block of a request, inside a char budget.

The store side (``io_tui.core.store.notes.NoteRepo``) applies these inside one transaction.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from io_tui.core.contract import MemoryLimits
from io_tui.core.text.heads import MEMORY_HEADER

Scope = Literal["workspace", "global"]
SCOPES: tuple[Scope, ...] = ("workspace", "global")
# The long-term tier's provenance (DESIGN §3.3): what a note claims to be, whether the operator
# has checked it, and the section of MEMORY.md it belongs to.
NoteKind = Literal["fact", "preference", "inference"]
KINDS: tuple[NoteKind, ...] = ("fact", "preference", "inference")
NoteStatus = Literal["unverified", "verified"]
STATUSES: tuple[NoteStatus, ...] = ("unverified", "verified")
Section = Literal["preferences", "project", "lessons"]
SECTIONS: tuple[Section, ...] = ("preferences", "project", "lessons")
SECTION_TITLES: dict[Section, str] = {
    "preferences": "Preferences",
    "project": "Project knowledge",
    "lessons": "Lessons",
}
RESTATE_THRESHOLD = 0.6
MAX_KEY_CHARS = 100


@dataclass(frozen=True, slots=True)
class MemoryNote:
    """One remembered note and its provenance.

    ``run_id``/``step`` name the step that wrote it; both are None for an operator write.
    ``workspace`` is the resolved absolute workspace path, or ``""`` for a global note.
    ``kind`` is what the note claims (a fact, a preference, or the model's own inference) and
    ``status`` whether the operator verified it; ``source`` says where it came from (a file, a
    command, a log line, free text). A note past ``expires_at`` or ``superseded_by`` another key
    is kept for the record but never recalled (``active``).
    """

    key: str
    value: str
    scope: Scope = "workspace"
    run_id: int | None = None
    step: int | None = None
    pinned: bool = False
    written_at: float = 0.0
    recalls: int = 0
    last_recalled: float | None = None
    workspace: str = ""
    section: Section = "project"
    kind: NoteKind = "inference"
    status: NoteStatus = "unverified"
    source: str = ""
    expires_at: float | None = None
    superseded_by: str | None = None

    @property
    def origin(self) -> str:
        """Who wrote the note, as shown to the model and the operator."""
        if self.run_id is None:
            return "operator"
        return f"run {self.run_id} step {self.step}"

    @property
    def label(self) -> str:
        """Its provenance in words: ``verified fact``, ``confirmed preference``, ``model
        inference`` (an inference the operator verified is a ``verified inference``)."""
        return provenance_label(self.kind, self.status)

    @property
    def a_label(self) -> str:
        """``label`` with its article: ``a verified fact``, ``an unverified fact``."""
        label = self.label
        return f"{'an' if label[:1] in ('a', 'e', 'i', 'o', 'u') else 'a'} {label}"

    def active(self, now: float) -> bool:
        """Recalled into a prompt: neither superseded nor expired at ``now``."""
        return self.superseded_by is None and (self.expires_at is None or self.expires_at > now)

    def state(self, now: float) -> str:
        """``active``, ``expired`` or ``superseded``, for listings."""
        if self.superseded_by is not None:
            return "superseded"
        return "active" if self.active(now) else "expired"

    def to_json(self) -> dict[str, Any]:
        """The shape ``io-tui memory list --json`` prints (DESIGN §4), plus the workspace."""
        return {
            "key": self.key,
            "value": self.value,
            "scope": self.scope,
            "run_id": self.run_id,
            "step": self.step,
            "written_at": self.written_at,
            "pinned": self.pinned,
            "recalls": self.recalls,
            "last_recalled": self.last_recalled,
            "workspace": self.workspace,
            "section": self.section,
            "type": self.kind,
            "status": self.status,
            "source": self.source,
            "expires_at": self.expires_at,
            "superseded_by": self.superseded_by,
        }


def merge_draft(note: MemoryNote, into: MemoryNote) -> str:
    """The merged value offered when ``note`` is merged into ``into`` (``NoteRepo.merge``):
    both values, ``into``'s first. The memory editor's merge dialog starts from it; ``io-tui
    memory merge`` writes it unless given a value."""
    return f"{into.value}\n{note.value}"


def provenance_label(kind: NoteKind, status: NoteStatus) -> str:
    if kind == "inference":
        return "verified inference" if status == "verified" else "model inference"
    if kind == "preference":
        return "confirmed preference" if status == "verified" else "unconfirmed preference"
    return "verified fact" if status == "verified" else "unverified fact"


def check_choice(value: str, choices: Sequence[str], what: str) -> str:
    """``value`` if it is one of ``choices``, else a ValueError naming them."""
    if value not in choices:
        raise ValueError(f"{what} must be one of {', '.join(choices)} (got {value!r})")
    return value


def check_key(key: str) -> str:
    """A usable key: stripped, one line, not empty, short. Raises ValueError saying why not."""
    key = key.strip()
    if not key:
        raise ValueError("a note's key must not be empty")
    if "\n" in key or "\r" in key:
        raise ValueError("a note's key must be one line")
    if len(key) > MAX_KEY_CHARS:
        raise ValueError(f"a note's key is at most {MAX_KEY_CHARS} chars (got {len(key)})")
    return key


NO_VALUE = "a note needs a value (this one is empty or only spaces)"


def check_value(value: str) -> str:
    """A usable value: not empty, not only whitespace. The one rule for every write (the
    operator's, an agent's ``remember``, a merge, a promotion, an import), so a note always has
    the text ``MEMORY.md`` needs to read it back. Raises ValueError saying why not."""
    if not value.strip():
        raise ValueError(NO_VALUE)
    return value


# -- truncation ------------------------------------------------------------------------------


def truncation_marker(original_chars: int, cap: int) -> str:
    return f" […note cut to {cap:,} of {original_chars:,} chars]"


def truncate_value(value: str, cap: int) -> str:
    """``value`` if it fits, else its head plus a visible marker, exactly ``cap`` chars long.

    Chars are code points (what ``len`` and SQLite's ``length()`` count), so multi-byte text is
    cut at the same length as ASCII. A cap too small for the marker falls back to a lone ellipsis.
    """
    if cap <= 0:
        return ""
    if len(value) <= cap:
        return value
    marker = truncation_marker(len(value), cap)
    if len(marker) >= cap:
        marker = "…"
    return value[: cap - len(marker)] + marker


# -- eviction ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WritePlan:
    """What writing one note into a scope costs. ``fits`` False means nothing may be written."""

    evict: tuple[MemoryNote, ...]
    fits: bool
    entries: int
    chars: int


def plan_write(
    existing: Sequence[MemoryNote], new: MemoryNote, limits: MemoryLimits, now: float = 0.0
) -> WritePlan:
    """Which notes to evict so ``new`` fits the scope's caps.

    ``existing`` is the scope's notes oldest-first. A note under ``new.key`` is being replaced, so
    it neither counts nor is "evicted". Pinned notes are skipped, and ``new`` is never a candidate.
    Notes no longer recalled (expired at ``now``, or superseded) go first, then the oldest.
    Chars count values only, so eight 2,000-char values fill a 16,000-char scope exactly.
    """
    others = [n for n in existing if n.key != new.key]
    entries = len(others) + 1
    chars = sum(len(n.value) for n in others) + len(new.value)
    evict: list[MemoryNote] = []
    for note in sorted(others, key=lambda n: n.active(now)):  # stable: oldest first in each
        if entries <= limits.max_entries and chars <= limits.max_chars:
            break
        if note.pinned:
            continue
        evict.append(note)
        entries -= 1
        chars -= len(note.value)
    fits = entries <= limits.max_entries and chars <= limits.max_chars
    if not fits:
        evict.clear()
    return WritePlan(tuple(evict), fits, entries, chars)


# -- restatement -----------------------------------------------------------------------------

_WORD = re.compile(r"\w+")


@lru_cache(maxsize=16_384)
def word_set(text: str) -> frozenset[str]:
    """Case-folded words; cached because every write compares against every visible note."""
    return frozenset(_WORD.findall(text.casefold()))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def find_restated(
    new: MemoryNote, others: Sequence[MemoryNote], threshold: float = RESTATE_THRESHOLD
) -> list[tuple[MemoryNote, float]]:
    """Notes (other than ``new`` itself) sharing most of ``new``'s words, most similar first."""
    words = word_set(new.value)
    if not words:
        return []
    found = []
    for other in others:
        if other.key == new.key and other.scope == new.scope:
            continue
        theirs = word_set(other.value)
        # |A∩B|/|A∪B| <= min/max of the sizes, so a lopsided pair cannot reach the threshold.
        if min(len(words), len(theirs)) < threshold * max(len(words), len(theirs)):
            continue
        score = jaccard(words, theirs)
        if score >= threshold:
            found.append((other, score))
    found.sort(key=lambda pair: -pair[1])
    return found


# -- recall ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RenderedMemory:
    text: str
    keys: tuple[str, ...]
    omitted: int
    dropped: tuple[str, ...] = ()  # the keys of the notes left out for room


# The shortest a note's line can be around its key and value, and the shortest line with them.
LINE_OVERHEAD = len("-  [verified fact; operator]: ")
MIN_LINE_CHARS = LINE_OVERHEAD + len("kv\n")
OMITTED_SHORT = "[{n} memory notes left out for room; list them: `io-tui memory list`]"


def _omitted_line(n: int) -> str:
    return (
        f"({n} more note{'s' if n != 1 else ''} left out for room; the operator can list them "
        "with `io-tui memory list`)"
    )


def section_heading(section: Section) -> str:
    return f"## {SECTION_TITLES[section]}"


def note_line(note: MemoryNote) -> str:
    """One note as the model reads it; continuation lines are indented so they stay inside it."""
    tags = [note.label, note.origin]
    if note.source:
        tags.append(f"source: {_one_line(note.source)}")
    if note.scope == "global":
        tags.append("global")
    if note.pinned:
        tags.append("pinned by the operator")
    value = note.value.replace("\r\n", "\n").replace("\n", "\n  ")
    return f"- {note.key} [{'; '.join(tags)}]: {value}"


def _one_line(text: str, limit: int = 120) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _priority(indexed: tuple[int, MemoryNote]) -> tuple[int, int, int]:
    """Pinned first, then workspace over global, then newest (the later in the list)."""
    index, note = indexed
    return (0 if note.pinned else 1, 0 if note.scope == "workspace" else 1, -index)


def render_notes(notes: Sequence[MemoryNote], max_chars: int) -> RenderedMemory:
    """The memory block of one request, never longer than ``max_chars``.

    ``notes`` come oldest-first (as ``NoteRepo.notes_for`` returns them: active notes only).
    When they do not all fit, pinned and workspace notes win, then the newest; a note too long to
    fit is skipped so shorter ones still make it. Kept notes are grouped under their section's
    heading (Preferences, Project knowledge, Lessons, as in MEMORY.md), each group in its original
    order, and a closing line says how many were left out and how to list them. The context
    engine passes a quarter of the request's ceiling as ``max_chars``.
    """
    if not notes:
        return RenderedMemory("", (), 0)
    lines: dict[int, str] = {}
    chosen: set[int] = set()
    headed: set[Section] = set()
    used = len(MEMORY_HEADER)
    for index, note in sorted(enumerate(notes), key=_priority):
        still_out = len(notes) - len(chosen) - 1
        reserve = len(_omitted_line(still_out)) + 1 if still_out else 0
        heading = 0 if note.section in headed else len(section_heading(note.section)) + 1
        if max_chars - used - reserve < MIN_LINE_CHARS:
            break  # no note can fit any more: skip formatting thousands that would not
        room = max_chars - used - reserve - heading - 1
        if len(note.key) + len(note.value) + LINE_OVERHEAD > room:
            continue  # cannot fit even before its tags: skip without formatting it
        line = lines[index] = note_line(note)
        if used + heading + len(line) + 1 + reserve <= max_chars:
            chosen.add(index)
            headed.add(note.section)
            used += heading + len(line) + 1
    kept = sorted(chosen, key=lambda i: (SECTIONS.index(notes[i].section), i))
    omitted = len(notes) - len(kept)
    body = [MEMORY_HEADER]
    shown: Section | None = None
    for index in kept:
        section = notes[index].section
        if section != shown:
            body.append(section_heading(section))
            shown = section
        body.append(lines[index])
    if omitted:
        body.append(_omitted_line(omitted))
    text = "\n".join(body)
    if len(text) > max_chars:  # not even the header fits: say only what was left out
        kept, omitted = [], len(notes)
        text = OMITTED_SHORT.format(n=omitted)
        if len(text) > max_chars:
            text = ""
    out = set(range(len(notes))) - set(kept)
    return RenderedMemory(
        text, tuple(notes[i].key for i in kept), omitted, tuple(notes[i].key for i in sorted(out))
    )
