"""Export both memory tiers to markdown and merge markdown back (DESIGN §3.3).

The store stays the authority. ``import_memory`` merges: notes the store lacks are added, notes it
holds the same are left, notes that differ are conflicts, reported with both values and changed
only with ``replace=True``; notes only the store has are kept. Log lines are added when the store
lacks them (a run's end replaces only the entry that run wrote earlier the same day, so lines of
an entry exported during a pause come back as lines the store lacks). Every file is parsed and checked, and the caps
checked, before anything is written, so a malformed file changes nothing. ``export_memory``
refuses to overwrite a file holding what the store lacks (import it first, or ``force``).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from io_tui.core.contract import MemoryLimits
from io_tui.core.memory.daily_log import LogLine
from io_tui.core.memory.markdown import (
    LOG_DIR,
    MEMORY_FILE,
    FileLogLine,
    FileNote,
    MarkdownError,
    NotesMerge,
    log_key,
    log_markdown,
    log_path,
    merge_notes,
    notes_markdown,
    parse_log,
    parse_notes,
)
from io_tui.core.memory.notes import MemoryNote, Scope
from io_tui.core.store import Store
from io_tui.core.store.notes import NoteRepo, Provenance, workspace_key


@dataclass(slots=True)
class ImportReport:
    notes: NotesMerge | None = None
    replaced: list[str] = field(default_factory=list)
    log_added: int = 0
    log_unchanged: int = 0
    files: list[str] = field(default_factory=list)
    dry_run: bool = False

    @property
    def unresolved(self) -> int:
        """Conflicts left as the store has them."""
        if self.notes is None:
            return 0
        return len(self.notes.conflicts) - len(self.replaced)

    def to_json(self) -> dict[str, object]:
        merge = self.notes
        return {
            "files": self.files,
            "dry_run": self.dry_run,
            "added": [n.key for n in merge.added] if merge else [],
            "unchanged": [n.key for n in merge.unchanged] if merge else [],
            "conflicts": [
                {"key": f.key, "file": f.value, "store": s.value, "line": f.line}
                for f, s in (merge.conflicts if merge else ())
            ],
            "replaced": self.replaced,
            "only_in_store": [n.key for n in merge.only_in_store] if merge else [],
            "log_added": self.log_added,
            "log_unchanged": self.log_unchanged,
        }


@dataclass(slots=True)
class ExportReport:
    written: list[str] = field(default_factory=list)
    notes: int = 0
    log_lines: int = 0


class ExportRefused(ValueError):
    """A file to be overwritten holds what the store does not (import it, or force)."""


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise MarkdownError(str(path), 1, f"not UTF-8 text ({exc.reason})") from None


def _log_files(root: Path) -> list[tuple[str, Path]]:
    folder = root / LOG_DIR
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.glob("*.md")):
        day = path.stem
        if len(day) != 10 or day[4] != "-" or day[7] != "-":
            raise MarkdownError(str(path), 1, "a daily log file is named YYYY-MM-DD.md")
        found.append((day, path))
    return found


async def import_memory(
    store: Store,
    root: Path,
    scope: Scope,
    workspace: str | None,
    *,
    replace: bool = False,
    dry_run: bool = False,
    limits: MemoryLimits | None = None,
) -> ImportReport:
    """Merge ``root/MEMORY.md`` and (for a workspace) ``root/.io-tui/memory/*.md`` into the
    store. Raises ``MarkdownError`` (nothing changed) for a malformed file, ValueError when the
    merge would break the caps or names a note that does not exist."""
    limits = limits or MemoryLimits()
    report = ImportReport(dry_run=dry_run)
    notes_file = root / MEMORY_FILE
    file_notes: list[FileNote] = []
    if notes_file.is_file():
        file_notes = parse_notes(_read(notes_file), str(notes_file))
        report.files.append(str(notes_file))
    logs: list[tuple[str, list[FileLogLine]]] = []
    if scope == "workspace":
        for day, path in _log_files(root):
            logs.append((day, parse_log(_read(path), day, str(path))))
            report.files.append(str(path))
    if not report.files:
        raise ValueError(f"nothing to import in {root}: no {MEMORY_FILE} and no {LOG_DIR}/*.md")
    stored = await store.notes.list(scope, workspace)
    merge = merge_notes(file_notes, stored)
    report.notes = merge
    applied = [*merge.added, *(f for f, _ in merge.conflicts if replace)]
    _check_fits(stored, applied, limits)
    keys = {n.key for n in stored} | {n.key for n in file_notes}
    for note in applied:
        if note.superseded_by is not None and note.superseded_by not in keys:
            raise MarkdownError(
                str(notes_file), note.line, f"superseded_by names no note: {note.superseded_by!r}"
            )
    known: set[tuple[object, ...]] = set()
    if logs:
        known = {
            log_key(x.day, x.run_id, x.field, x.text)
            for x in await store.daily_log.lines(workspace or "")
        }
    new_lines = [
        (day, line)
        for day, lines in logs
        for line in lines
        if log_key(day, line.run_id, line.field, line.text) not in known
    ]
    report.log_added = len(new_lines)
    report.log_unchanged = sum(len(lines) for _, lines in logs) - len(new_lines)
    if dry_run:
        return report
    for note in applied:
        await _write(store.notes, note, scope, workspace, limits)
    for note in applied:  # after every note exists: supersession names one
        if note.superseded_by is not None:
            await store.notes.supersede(note.key, note.superseded_by, scope, workspace)
    report.replaced = [f.key for f, _ in merge.conflicts] if replace else []
    for _, line in new_lines:
        await store.daily_log.append(
            workspace or "", [(line.field, line.text)], run_id=line.run_id, at=line.at
        )
    return report


def _check_fits(stored: list[MemoryNote], applied: list[FileNote], limits: MemoryLimits) -> None:
    by_key = {n.key: len(n.value) for n in stored}
    for note in applied:
        if len(note.value) > limits.max_entry_chars:
            raise ValueError(
                f"{note.key!r} is {len(note.value):,} chars, over the {limits.max_entry_chars:,}-"
                "char cap for one note: shorten it in the file"
            )
        by_key[note.key] = len(note.value)
    if len(by_key) > limits.max_entries or sum(by_key.values()) > limits.max_chars:
        raise ValueError(
            f"the import would hold {len(by_key)} notes, {sum(by_key.values()):,} chars, over the "
            f"caps ({limits.max_entries} notes, {limits.max_chars:,} chars), and evict notes: "
            "delete some first (`io-tui memory delete`)"
        )


async def _write(
    notes: NoteRepo, note: FileNote, scope: Scope, workspace: str | None, limits: MemoryLimits
) -> None:
    await notes.set(note.key, note.value, scope, workspace, limits, Provenance.of(note))
    current = await notes.get(note.key, scope, workspace)  # a rewrite keeps a pin, never adds one
    if current is not None and current.pinned != note.pinned:
        await (notes.pin if note.pinned else notes.unpin)(note.key, scope, workspace)


async def export_memory(
    store: Store, root: Path, scope: Scope, workspace: str | None, *, force: bool = False
) -> ExportReport:
    """Write ``root/MEMORY.md`` and (for a workspace) one log file per day. Raises
    ``ExportRefused`` when a file there holds notes or lines the store lacks (unless ``force``)."""
    notes = await store.notes.list(scope, workspace)
    blank = [n.key for n in notes if not n.value.strip()]
    if blank:  # written before every write refused them: MEMORY.md could not read them back
        raise ExportRefused(
            f"the note(s) {', '.join(map(repr, blank))} have no value, and a note needs one: "
            "give each a value (`io-tui memory set KEY TEXT`) or delete it, then export"
        )
    where = (
        "the global notes" if scope == "global" else f"workspace {workspace_key(scope, workspace)}"
    )
    files: dict[Path, str] = {root / MEMORY_FILE: notes_markdown(notes, where)}
    lines = await store.daily_log.lines(workspace) if scope == "workspace" and workspace else []
    days: dict[str, list[LogLine]] = {}
    for line in lines:
        days.setdefault(line.day, []).append(line)
    for day, of_day in days.items():
        files[root / log_path(day)] = log_markdown(day, of_day)
    if not force:
        await _refuse_unmerged(store, root, scope, workspace)
    report = ExportReport(notes=len(notes), log_lines=len(lines))
    for path, text in files.items():
        if path.is_file() and _read(path) == text:
            continue
        _write_atomically(path, text)
        report.written.append(str(path))
    return report


async def _refuse_unmerged(store: Store, root: Path, scope: Scope, workspace: str | None) -> None:
    try:
        plan = await import_memory(store, root, scope, workspace, dry_run=True)
    except ValueError as exc:
        if str(exc).startswith("nothing to import"):
            return
        raise ExportRefused(
            f"{exc}; the files there cannot be read back, so exporting over them could lose "
            "work: fix them, or export with --force"
        ) from None
    merge = plan.notes
    pending = (len(merge.added) + len(merge.conflicts) if merge else 0) + plan.log_added
    if pending:
        raise ExportRefused(
            f"{root} holds memory the store lacks ({len(merge.added) if merge else 0} new notes, "
            f"{len(merge.conflicts) if merge else 0} that differ, {plan.log_added} log lines): "
            "run `io-tui memory import` first, or export with --force to overwrite them"
        )


def _write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
