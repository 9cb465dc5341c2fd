"""Memory as markdown a team keeps in git (DESIGN §3.3): ``MEMORY.md`` for the long-term notes,
``.io-tui/memory/YYYY-MM-DD.md`` for each day of the log. Pure: text in, text out.

``MEMORY.md`` has a section per kind of knowledge (``## Preferences``, ``## Project knowledge``,
``## Lessons``); a note is a bullet ``- **key**: value`` whose further lines are indented two
spaces, and its provenance rides in an HTML comment on its last line (invisible when rendered)::

    - **test-cmd**: pytest -q
      <!-- io-tui {"type": "fact", "status": "verified", "source": "README.md"} -->

A note written by hand without the comment is a verified fact (a preference under Preferences):
the operator who imports it vouches for it. A day's log is ``# YYYY-MM-DD`` then a
``## run N · HH:MM:SS UTC`` heading per entry with ``- field: text`` lines.

Parsing is strict: anything else is a ``MarkdownError`` naming the file, the line and what was
expected, so a bad merge in git never half-imports.
"""

from __future__ import annotations

import calendar
import json
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from io_tui.core.memory.daily_log import LOG_FIELDS, LogLine
from io_tui.core.memory.notes import (
    KINDS,
    SECTION_TITLES,
    SECTIONS,
    STATUSES,
    MemoryNote,
    NoteKind,
    NoteStatus,
    Section,
    check_key,
)

MEMORY_FILE = "MEMORY.md"
LOG_DIR = ".io-tui/memory"
_META = re.compile(r"^\s*<!-- io-tui (.*) -->\s*$")
_NOTE = re.compile(r"^- \*\*(.+?)\*\*:(?: (.*))?$")
_DAY = re.compile(r"^# (\d{4}-\d{2}-\d{2})\b")
_ENTRY = re.compile(r"^## (?:run (\d+)|operator) · (\d{2}):(\d{2}):(\d{2}) UTC$")
_LOG_LINE = re.compile(r"^- (\w+): (.*)$")
_META_KEYS = frozenset({"type", "status", "source", "expires", "superseded_by", "pinned", "by"})
_SECTION_BY_TITLE = {title.casefold(): section for section, title in SECTION_TITLES.items()}


class MarkdownError(ValueError):
    """Malformed memory markdown: ``path:line: what was expected``."""

    def __init__(self, path: str, line: int, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}")


@dataclass(frozen=True, slots=True)
class FileNote:
    """A note as a ``MEMORY.md`` holds it (``by`` is who wrote it in the exporting store)."""

    key: str
    value: str
    section: Section
    kind: NoteKind
    status: NoteStatus
    source: str = ""
    expires_at: float | None = None
    superseded_by: str | None = None
    pinned: bool = False
    by: str = ""
    line: int = 0

    def same_as(self, note: MemoryNote) -> bool:
        """Whether the store's ``note`` says the same (expiry to the second, as exported)."""
        return (
            self.value == note.value
            and self.section == note.section
            and self.kind == note.kind
            and self.status == note.status
            and self.source == note.source
            and _second(self.expires_at) == _second(note.expires_at)
            and self.superseded_by == note.superseded_by
            and self.pinned == note.pinned
        )


def _second(at: float | None) -> int | None:
    return None if at is None else int(at)


def iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def parse_when(text: str) -> float:
    """``2027-01-31`` or ``2027-01-31T12:00:00Z`` (UTC) as a timestamp; ValueError otherwise."""
    for fmt in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%d"):
        try:
            return float(calendar.timegm(time.strptime(text, fmt)))
        except ValueError:
            continue
    raise ValueError(f"{text!r} is not a date (YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ)")


# -- MEMORY.md ------------------------------------------------------------------------------


def notes_markdown(notes: Iterable[MemoryNote], where: str) -> str:
    """``MEMORY.md`` for ``notes`` (every one, superseded and expired included: lossless)."""
    by_section: dict[Section, list[MemoryNote]] = {s: [] for s in SECTIONS}
    for note in notes:
        by_section[note.section].append(note)
    out = [
        "# Memory",
        "",
        f"<!-- io-tui memory export of {where}. The store is the authority: edit this file, "
        "then `io-tui memory import` merges it back (and reports what it changed). -->",
    ]
    for section in SECTIONS:
        out += ["", f"## {SECTION_TITLES[section]}", ""]
        for note in by_section[section]:
            first, *rest = note.value.replace("\r\n", "\n").split("\n")
            out.append(f"- **{note.key}**: {first}".rstrip())
            out += [f"  {line}".rstrip() if line else "" for line in rest]
            out.append(f"  <!-- io-tui {json.dumps(_meta(note), ensure_ascii=False)} -->")
    return "\n".join(out) + "\n"


def _meta(note: MemoryNote) -> dict[str, Any]:
    meta: dict[str, Any] = {"type": note.kind, "status": note.status, "by": note.origin}
    if note.source:
        meta["source"] = note.source
    if note.expires_at is not None:
        meta["expires"] = iso(note.expires_at)
    if note.superseded_by is not None:
        meta["superseded_by"] = note.superseded_by
    if note.pinned:
        meta["pinned"] = True
    return meta


def parse_notes(text: str, path: str = MEMORY_FILE) -> list[FileNote]:
    """The notes of a ``MEMORY.md``; raises ``MarkdownError`` at the first malformed line."""
    notes: list[FileNote] = []
    section: Section | None = None
    current: dict[str, Any] | None = None
    blank_run: list[str] = []
    seen: set[str] = set()

    def close() -> None:
        nonlocal current
        if current is not None:
            notes.append(_file_note(current, path))
            current = None

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if current is not None and line.startswith("  "):
            if current.get("meta") is not None:
                raise MarkdownError(
                    path, number, "a note's provenance comment must be its last line"
                )
            meta = _META.match(line)
            if meta:
                current["meta"] = _meta_json(meta.group(1), path, number)
            else:
                current["lines"] += [*blank_run, line[2:]]
            blank_run = []
            continue
        if not line:
            if current is not None:
                blank_run.append("")
            continue
        blank_run = []
        close()
        if line.startswith("## "):
            title = line[3:].strip()
            found = _SECTION_BY_TITLE.get(title.casefold())
            if found is None and title in SECTIONS:
                found = title
            if found is None:
                expected = ", ".join(SECTION_TITLES.values())
                raise MarkdownError(
                    path, number, f"unknown section {title!r} (expected {expected})"
                )
            section = found
            continue
        if line.startswith("# ") or (line.startswith("<!--") and line.endswith("-->")):
            continue  # the title and free comments
        match = _NOTE.match(line)
        if match is None:
            raise MarkdownError(
                path,
                number,
                "expected a note ('- **key**: value'), a '## ' section or a blank line",
            )
        if section is None:
            raise MarkdownError(path, number, "a note before any '## ' section")
        try:
            key = check_key(match.group(1))
        except ValueError as exc:
            raise MarkdownError(path, number, str(exc)) from None
        if key in seen:
            raise MarkdownError(path, number, f"the key {key!r} appears twice")
        seen.add(key)
        current = {
            "key": key,
            "lines": [match.group(2) or ""],
            "section": section,
            "line": number,
            "meta": None,
        }
    close()
    return notes


def _meta_json(text: str, path: str, number: int) -> dict[str, Any]:
    try:
        meta = json.loads(text)
    except ValueError as exc:
        raise MarkdownError(path, number, f"the provenance comment is not JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise MarkdownError(path, number, "the provenance comment must be a JSON object")
    unknown = set(meta) - _META_KEYS
    if unknown:
        raise MarkdownError(
            path, number, f"unknown provenance field(s) {', '.join(sorted(unknown))}"
        )
    return meta


def _file_note(raw: dict[str, Any], path: str) -> FileNote:
    number = raw["line"]
    section: Section = raw["section"]
    meta = raw["meta"] or {}
    value = "\n".join(raw["lines"]).strip("\n")
    if not value.strip():
        raise MarkdownError(path, number, f"the note {raw['key']!r} has no value")
    default_kind: NoteKind = "preference" if section == "preferences" else "fact"
    kind = meta.get("type", default_kind)
    status = meta.get("status", "verified")
    if kind not in KINDS:
        raise MarkdownError(path, number, f"type must be one of {', '.join(KINDS)} (got {kind!r})")
    if status not in STATUSES:
        raise MarkdownError(
            path, number, f"status must be one of {', '.join(STATUSES)} (got {status!r})"
        )
    expires = meta.get("expires")
    try:
        expires_at = parse_when(str(expires)) if expires is not None else None
    except ValueError as exc:
        raise MarkdownError(path, number, f"expires: {exc}") from None
    superseded = meta.get("superseded_by")
    return FileNote(
        key=raw["key"],
        value=value,
        section=section,
        kind=kind,
        status=status,
        source=str(meta.get("source", "") if raw["meta"] else MEMORY_FILE),
        expires_at=expires_at,
        superseded_by=str(superseded) if superseded is not None else None,
        pinned=bool(meta.get("pinned", False)),
        by=str(meta.get("by", "")),
        line=number,
    )


# -- the daily log --------------------------------------------------------------------------


def log_path(day: str) -> str:
    return f"{LOG_DIR}/{day}.md"


def log_markdown(day: str, lines: Sequence[LogLine]) -> str:
    """One day's log file: an entry heading per run (or the operator), then its lines."""
    out = [f"# {day}", ""]
    heading = None
    for line in lines:
        who = f"run {line.run_id}" if line.run_id is not None else "operator"
        this = f"## {who} · {time.strftime('%H:%M:%S', time.gmtime(line.at))} UTC"
        if this != heading:
            if heading is not None:
                out.append("")
            out.append(this)
            heading = this
        out.append(f"- {line.field}: {' '.join(line.text.split())}")
    return "\n".join(out) + "\n"


@dataclass(frozen=True, slots=True)
class FileLogLine:
    run_id: int | None
    field: str
    text: str
    at: float
    line: int = 0


def parse_log(text: str, day: str, path: str) -> list[FileLogLine]:
    """The lines of one day's log file (named ``day``); raises ``MarkdownError``."""
    lines: list[FileLogLine] = []
    started = False
    entry: tuple[int | None, float] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        if not line:
            continue
        if not started:
            match = _DAY.match(line)
            if match is None:
                raise MarkdownError(path, number, f"expected the day's heading '# {day}'")
            if match.group(1) != day:
                raise MarkdownError(
                    path, number, f"the heading says {match.group(1)} but the file is {day}.md"
                )
            started = True
            continue
        heading = _ENTRY.match(line)
        if heading:
            run, hh, mm, ss = heading.groups()
            at = parse_when(day) + int(hh) * 3600 + int(mm) * 60 + int(ss)
            entry = (int(run) if run else None, at)
            continue
        if line.startswith("<!--") and line.endswith("-->"):
            continue
        item = _LOG_LINE.match(line)
        if item is None:
            raise MarkdownError(
                path, number, "expected '## run N · HH:MM:SS UTC' or a line '- field: text'"
            )
        if entry is None:
            raise MarkdownError(path, number, "a log line before any '## run N' heading")
        if item.group(1) not in LOG_FIELDS:
            raise MarkdownError(
                path,
                number,
                f"unknown log field {item.group(1)!r} (expected {', '.join(LOG_FIELDS)})",
            )
        lines.append(FileLogLine(entry[0], item.group(1), item.group(2).strip(), entry[1], number))
    if not started:
        raise MarkdownError(path, 1, f"expected the day's heading '# {day}'")
    return lines


# -- merging a file into the store ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NotesMerge:
    """How a ``MEMORY.md`` compares with the store's notes of the same scope."""

    added: tuple[FileNote, ...]
    unchanged: tuple[FileNote, ...]
    conflicts: tuple[tuple[FileNote, MemoryNote], ...]
    only_in_store: tuple[MemoryNote, ...]


def merge_notes(file_notes: Sequence[FileNote], stored: Sequence[MemoryNote]) -> NotesMerge:
    by_key = {n.key: n for n in stored}
    added, unchanged, conflicts = [], [], []
    for note in file_notes:
        have = by_key.get(note.key)
        if have is None:
            added.append(note)
        elif note.same_as(have):
            unchanged.append(note)
        else:
            conflicts.append((note, have))
    in_file = {n.key for n in file_notes}
    only = tuple(n for n in stored if n.key not in in_file)
    return NotesMerge(tuple(added), tuple(unchanged), tuple(conflicts), only)


def log_key(day: str, run_id: int | None, field_name: str, text: str) -> tuple[Any, ...]:
    """What makes a log line the same line in a file and in the store."""
    return (day, run_id, field_name, " ".join(text.split()))
