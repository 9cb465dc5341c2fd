"""The notes table: notes per scope, their caps, and the operator's audited edits.

Agent writes (``write``/``forget``) come from the ``remember``/``forget`` tools, which report what
happened as run events through their ``emit`` hook. Operator edits (``set``, ``delete``,
``clear``, ``pin``, ``unpin``) have no run, so each one is recorded in the ``events`` table with
``run_id = 0, step = 0, kind = 'memory'`` and ``detail.actor = 'operator'`` in the same
transaction as the change (``store.trace.events(0)`` reads the audit trail back). Evictions caused
by an operator write are recorded the same way. Which requests recalled a note is the recall
log's (``recalls.py``); the daily log, whose lines become notes, is ``daily_log.py``.

Notes are ordered by row id: a rewrite deletes the old row and inserts a new one, so "oldest" is
"least recently written", exactly what eviction needs, without trusting clock resolution.
Global notes are stored with ``workspace = ''``.

A note's ``superseded_by`` always names a note of its scope that exists: whatever removes a note
(a delete, an agent's forget, an eviction, a clear) makes the notes it superseded current again in
the same transaction (``_revive``), each audited (or, for an agent, reported) as a supersession
undone, with what removed the note that superseded it.
"""

from __future__ import annotations

import builtins
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

import aiosqlite

from io_tui.core.contract import MemoryLimits
from io_tui.core.events import EventKind
from io_tui.core.memory.notes import (
    KINDS,
    SECTIONS,
    STATUSES,
    MemoryNote,
    NoteKind,
    NoteStatus,
    Scope,
    Section,
    check_choice,
    check_key,
    check_value,
    find_restated,
    plan_write,
    truncate_value,
)
from io_tui.core.store.db import Connection, Database, fetch

OPERATOR_RUN_ID = 0


def workspace_key(scope: Scope, workspace: str | Path | None) -> str:
    """The ``workspace`` column for a scope: the resolved absolute path, or '' for global."""
    if scope == "global":
        return ""
    if workspace is None or str(workspace) == "":
        raise ValueError("a workspace note needs a workspace path")
    return str(workspace)


COLUMNS = (
    "key, value, scope, run_id, step, pinned, written_at, recalls, last_recalled, workspace,"
    " section, kind, status, source, expires_at, superseded_by"
)
# what a request recalls: neither superseded nor expired (the one parameter: now)
ACTIVE = "superseded_by IS NULL AND (expires_at IS NULL OR expires_at > ?)"


def _unshadowed(notes: list[MemoryNote]) -> list[MemoryNote]:
    """A workspace's notes, then the global notes whose key none of them shadows."""
    local = {n.key for n in notes if n.scope == "workspace"}
    return [n for n in notes if n.scope == "workspace" or n.key not in local]


def _note(row: aiosqlite.Row) -> MemoryNote:
    """A row selected as ``SELECT {COLUMNS}``; positional access keeps 4,096-note scans cheap."""
    return MemoryNote(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        bool(row[5]),
        row[6],
        row[7],
        row[8],
        row[9],
        row[10],
        row[11],
        row[12],
        row[13],
        row[14],
        row[15],
    )


@dataclass(frozen=True, slots=True)
class Provenance:
    """What a write says about its note (DESIGN §3.3). An agent's write is always unverified;
    the operator's is verified unless said otherwise."""

    section: Section = "project"
    kind: NoteKind = "inference"
    status: NoteStatus = "unverified"
    source: str = ""
    expires_at: float | None = None

    @classmethod
    def of(cls, note: Any) -> Provenance:
        """What ``note`` (a stored note, or one read from a file) says about itself."""
        return cls(note.section, note.kind, note.status, note.source, note.expires_at)

    def checked(self) -> Provenance:
        check_choice(self.section, SECTIONS, "a note's section")
        check_choice(self.kind, KINDS, "a note's type")
        check_choice(self.status, STATUSES, "a note's status")
        return self


# what an operator's write is unless it says otherwise
OPERATOR_NOTE = Provenance(kind="fact", status="verified")


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write did. ``status`` is ``written``, ``pinned`` (refused: the operator pinned the
    key), ``full`` (refused: pinned notes leave no room) or ``exists`` (refused: a write that
    may not replace found a note under the key, which ``note`` is). Refusals change nothing."""

    status: str
    note: MemoryNote
    original_chars: int
    replaced: MemoryNote | None = None
    evicted: tuple[MemoryNote, ...] = ()
    restates: tuple[tuple[MemoryNote, float], ...] = ()
    entries: int = 0
    chars: int = 0
    revived: tuple[MemoryNote, ...] = ()  # superseded by an evicted note: current again

    @property
    def written(self) -> bool:
        return self.status == "written"

    @property
    def truncated(self) -> bool:
        return self.original_chars > len(self.note.value)


@dataclass(frozen=True, slots=True)
class ForgetResult:
    """``status`` is ``forgotten``, ``missing`` or ``pinned`` (refused). ``revived``: the notes
    the forgotten one superseded, current (recalled) again."""

    status: str
    note: MemoryNote | None = None
    elsewhere: list[Scope] = field(default_factory=list)
    revived: tuple[MemoryNote, ...] = ()


class NoteRepo:
    """The notes of every scope: read, written by agents and the operator, and the operator's
    provenance edits (verify, expire, supersede, merge)."""

    def __init__(self, db: Database) -> None:
        self.db = db

    # -- reading -------------------------------------------------------------------------------

    async def list(
        self, scope: Scope | None = None, workspace: str | Path | None = None
    ) -> builtins.list[MemoryNote]:
        """Notes oldest-first: one scope (of one workspace), or all notes when ``scope`` is None."""
        if scope is None:
            rows = await self.db.fetchall(
                f"SELECT {COLUMNS} FROM memory ORDER BY scope, workspace, id"
            )
        else:
            rows = await self.db.fetchall(
                f"SELECT {COLUMNS} FROM memory WHERE scope = ? AND workspace = ? ORDER BY id",
                (scope, workspace_key(scope, workspace)),
            )
        return [_note(r) for r in rows]

    async def get(self, key: str, scope: Scope, workspace: str | Path | None) -> MemoryNote | None:
        row = await self.db.fetchone(
            f"SELECT {COLUMNS} FROM memory WHERE scope = ? AND workspace = ? AND key = ?",
            (scope, workspace_key(scope, workspace), key.strip()),
        )
        return _note(row) if row else None

    async def notes_for(self, workspace: str | Path) -> builtins.list[MemoryNote]:
        """What a request in ``workspace`` recalls: its notes, then the global notes whose key no
        workspace note shadows; each group oldest-first (``render_notes`` picks under budget)."""
        rows = await self.db.fetchall(
            f"SELECT {COLUMNS} FROM memory WHERE ((scope = 'workspace' AND workspace = ?)"
            f" OR scope = 'global') AND {ACTIVE} ORDER BY scope = 'global', id",
            (str(workspace), time.time()),
        )
        return _unshadowed([_note(r) for r in rows])

    async def recalled_for(
        self, workspace: str | Path
    ) -> tuple[builtins.list[MemoryNote], builtins.list[MemoryNote]]:
        """``notes_for(workspace)``, and beside it the notes a request there no longer recalls
        (expired or superseded, oldest-first: its manifest names each with why), read at once."""
        return await self.db.call(partial(recalled, str(workspace)))

    async def usage(self, scope: Scope, workspace: str | Path | None) -> tuple[int, int]:
        """(entries, chars) held by one scope, for gauges and messages."""
        row = await self.db.fetchone(
            "SELECT COUNT(*), COALESCE(SUM(LENGTH(value)), 0) FROM memory"
            " WHERE scope = ? AND workspace = ?",
            (scope, workspace_key(scope, workspace)),
        )
        assert row is not None
        return int(row[0]), int(row[1])

    # -- writing --------------------------------------------------------------------------------

    async def write(
        self,
        *,
        key: str,
        value: str,
        scope: Scope,
        workspace: str | Path | None,
        run_id: int | None,
        step: int | None,
        limits: MemoryLimits,
        provenance: Provenance | None = None,
        replace_existing: bool = True,
    ) -> WriteResult:
        """Write (or replace and re-attribute) one note, truncating and evicting as the caps say.

        ``run_id`` None marks an operator write: it may replace a pinned note (which stays
        pinned) and is audited in ``events``. An agent write to a pinned key is refused, and an
        agent's note is unverified whatever ``provenance`` says. A rewrite is a new note: it is
        active again (not superseded) and carries only the provenance given. An empty or blank
        value is refused (ValueError), whoever writes it: ``MEMORY.md`` could not read it back.
        With ``replace_existing`` False a note already under the key is left as it is (status
        ``exists``): the memory editor's add and promote replace one only when the operator
        confirmed it, so a note written meanwhile is never lost.
        """
        key = check_key(key)
        check_value(value)
        given = (provenance or Provenance()).checked()
        if run_id is not None:
            given = replace(given, status="unverified")
        where = workspace_key(scope, workspace)
        value = value.encode("utf-8", "replace").decode("utf-8")  # lone surrogates from JSON
        operator = run_id is None
        stored = truncate_value(value, limits.max_entry_chars)
        now = time.time()
        async with self.db.transaction() as conn:
            rows = await _fetch(
                conn,
                f"SELECT {COLUMNS} FROM memory WHERE scope = ? AND workspace = ? ORDER BY id",
                (scope, where),
            )
            existing = [_note(r) for r in rows]
            old = next((n for n in existing if n.key == key), None)
            new = MemoryNote(
                key=key,
                value=stored,
                scope=scope,
                run_id=run_id,
                step=step,
                pinned=bool(old and old.pinned),
                written_at=now,
                workspace=where,
                section=given.section,
                kind=given.kind,
                status=given.status,
                source=given.source,
                expires_at=given.expires_at,
            )
            if old is not None and not replace_existing:
                return WriteResult("exists", old, len(value))
            if old is not None and old.pinned and not operator:
                return WriteResult("pinned", old, len(value))
            plan = plan_write(existing, new, limits, now)
            if not plan.fits:
                return WriteResult("full", new, len(value), entries=len(existing))
            for gone in plan.evict:
                await conn.execute(
                    "DELETE FROM memory WHERE scope = ? AND workspace = ? AND key = ?",
                    (scope, where, gone.key),
                )
            await conn.execute(
                "DELETE FROM memory WHERE scope = ? AND workspace = ? AND key = ?",
                (scope, where, key),
            )
            await conn.execute(
                "INSERT INTO memory (scope, workspace, key, value, run_id, step, written_at,"
                " pinned, section, kind, status, source, expires_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    scope,
                    where,
                    key,
                    stored,
                    run_id,
                    step,
                    now,
                    int(new.pinned),
                    new.section,
                    new.kind,
                    new.status,
                    new.source,
                    new.expires_at,
                ),
            )
            visible = await _visible(conn, scope, where, existing)
            gone_keys = {g.key for g in plan.evict}
            restates = find_restated(new, [n for n in visible if n.key not in gone_keys])
            if operator:
                await _audit(conn, "set", new, truncated_from=len(value), replaced=old)
                for gone in plan.evict:
                    await _audit(conn, "evict", gone, evicted_by=key)
            revived = await _revive(conn, scope, where, gone_keys, "evict", audit=operator)
        return WriteResult(
            "written",
            new,
            len(value),
            replaced=old,
            evicted=plan.evict,
            restates=tuple(restates),
            entries=plan.entries,
            chars=plan.chars,
            revived=tuple(revived),
        )

    async def forget(
        self, *, key: str, scope: Scope, workspace: str | Path | None, operator: bool
    ) -> ForgetResult:
        """Remove one note. The agent may not forget a pinned note; the operator may. The notes
        it superseded are current again (``revived``)."""
        key = key.strip()
        where = workspace_key(scope, workspace)
        async with self.db.transaction() as conn:
            rows = await _fetch(
                conn,
                f"SELECT {COLUMNS} FROM memory WHERE scope = ? AND workspace = ? AND key = ?",
                (scope, where, key),
            )
            if not rows:
                return ForgetResult("missing", None, await _elsewhere(conn, key, scope, workspace))
            note = _note(rows[0])
            if note.pinned and not operator:
                return ForgetResult("pinned", note)
            await conn.execute(
                "DELETE FROM memory WHERE scope = ? AND workspace = ? AND key = ?",
                (scope, where, key),
            )
            if operator:
                await _audit(conn, "delete", note)
            how = "delete" if operator else "forget"
            revived = await _revive(conn, scope, where, [key], how, audit=operator)
        return ForgetResult("forgotten", note, revived=tuple(revived))

    # -- the operator's API (each change audited as an event with run_id 0) --------------------

    async def set(
        self,
        key: str,
        value: str,
        scope: Scope,
        workspace: str | Path | None,
        limits: MemoryLimits | None = None,
        provenance: Provenance | None = None,
        *,
        replace_existing: bool = True,
    ) -> WriteResult:
        """The operator's write: an upsert (``io-tui memory set``) unless ``replace_existing``
        is False, when a note under the key is left as it is (status ``exists``)."""
        return await self.write(
            key=key,
            value=value,
            scope=scope,
            workspace=workspace,
            run_id=None,
            step=None,
            limits=limits or MemoryLimits(),
            provenance=provenance or OPERATOR_NOTE,
            replace_existing=replace_existing,
        )

    async def delete(self, key: str, scope: Scope, workspace: str | Path | None) -> bool:
        result = await self.forget(key=key, scope=scope, workspace=workspace, operator=True)
        return result.status == "forgotten"

    async def clear(
        self, scope: Scope, workspace: str | Path | None, *, include_pinned: bool = False
    ) -> int:
        """Delete a scope's notes (pinned ones only with ``include_pinned``); returns how many."""
        where = workspace_key(scope, workspace)
        pinned_clause = "" if include_pinned else " AND pinned = 0"
        async with self.db.transaction() as conn:
            selected = f"FROM memory WHERE scope = ? AND workspace = ?{pinned_clause}"
            rows = await _fetch(conn, f"SELECT {COLUMNS} {selected} ORDER BY id", (scope, where))
            await conn.execute(f"DELETE {selected}", (scope, where))
            if rows:
                await _record(
                    conn,
                    {
                        "op": "clear",
                        "actor": "operator",
                        "scope": scope,
                        "workspace": where,
                        "keys": [r[0] for r in rows],
                        "include_pinned": include_pinned,
                    },
                )
            await _revive(conn, scope, where, [r[0] for r in rows], "clear", audit=True)
        return len(rows)

    async def pin(self, key: str, scope: Scope, workspace: str | Path | None) -> bool:
        return await self._set_pinned(key, scope, workspace, True)

    async def unpin(self, key: str, scope: Scope, workspace: str | Path | None) -> bool:
        return await self._set_pinned(key, scope, workspace, False)

    async def _set_pinned(
        self, key: str, scope: Scope, workspace: str | Path | None, pinned: bool
    ) -> bool:
        where = workspace_key(scope, workspace)
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                "UPDATE memory SET pinned = ? WHERE scope = ? AND workspace = ? AND key = ?",
                (int(pinned), scope, where, key.strip()),
            )
            if not cursor.rowcount:
                return False
            rows = await _fetch(
                conn,
                f"SELECT {COLUMNS} FROM memory WHERE scope = ? AND workspace = ? AND key = ?",
                (scope, where, key.strip()),
            )
            await _audit(conn, "pin" if pinned else "unpin", _note(rows[0]))
        return True

    # -- provenance: verify, expire, supersede, merge (the operator's; audited) ------------------

    async def verify(
        self, key: str, scope: Scope, workspace: str | Path | None, *, verified: bool = True
    ) -> MemoryNote | None:
        """Mark a note verified (a confirmed preference, a verified fact), or unverified again."""
        status: NoteStatus = "verified" if verified else "unverified"
        return await self._update(key, scope, workspace, "verify", status=status)

    async def expire(
        self, key: str, scope: Scope, workspace: str | Path | None, at: float | None
    ) -> MemoryNote | None:
        """Set when a note stops being recalled (``None``: never; a past time: now)."""
        return await self._update(key, scope, workspace, "expire", expires_at=at)

    async def supersede(
        self, key: str, by: str | None, scope: Scope, workspace: str | Path | None
    ) -> MemoryNote | None:
        """Mark ``key`` superseded by the note ``by`` of the same scope (``None`` undoes it).

        Raises ValueError when ``by`` is ``key`` itself, is missing, or is itself superseded (a
        chain would hide both)."""
        if by is not None:
            by = by.strip()
            if by == key.strip():
                raise ValueError("a note cannot supersede itself")
            other = await self.get(by, scope, workspace)
            if other is None:
                raise ValueError(f"no note {by!r} in the same scope to supersede {key!r} with")
            if other.superseded_by is not None:
                raise ValueError(f"{by!r} is itself superseded by {other.superseded_by!r}")
        return await self._update(key, scope, workspace, "supersede", superseded_by=by)

    async def merge(
        self,
        key: str,
        into: str,
        value: str,
        scope: Scope,
        workspace: str | Path | None,
        limits: MemoryLimits | None = None,
    ) -> WriteResult:
        """Merge note ``key`` into ``into``: ``into`` gets ``value`` (as the operator's verified
        write, keeping its section and type) and ``key`` is superseded by it."""
        target = await self.get(into, scope, workspace)
        if target is None or await self.get(key, scope, workspace) is None:
            missing = into if target is None else key
            raise ValueError(f"no note {missing!r} to merge in {scope} scope")
        if key.strip() == into.strip():
            raise ValueError("a note cannot be merged into itself")
        merged = joined(target.source, f"merged {key.strip()}")
        kept = replace(Provenance.of(target), status="verified", source=merged)
        result = await self.set(into, value, scope, workspace, limits, kept)
        if result.written:
            await self.supersede(key, into, scope, workspace)
        return result

    async def _update(
        self, key: str, scope: Scope, workspace: str | Path | None, op: str, **columns: Any
    ) -> MemoryNote | None:
        """Set ``columns`` of one note and audit it as ``op``; None when there is no such note."""
        where = workspace_key(scope, workspace)
        assignments = ", ".join(f"{name} = ?" for name in columns)
        selected = "FROM memory WHERE scope = ? AND workspace = ? AND key = ?"
        async with self.db.transaction() as conn:
            cursor = await conn.execute(
                f"UPDATE memory SET {assignments} WHERE scope = ? AND workspace = ? AND key = ?",
                (*columns.values(), scope, where, key.strip()),
            )
            if not cursor.rowcount:
                return None
            rows = await _fetch(conn, f"SELECT {COLUMNS} {selected}", (scope, where, key.strip()))
            note = _note(rows[0])
            await _audit(conn, op, note, **columns)
        return note


def joined(*parts: str) -> str:
    """A note's ``source`` made of several: ``merged KEY; log 2026-12-01 run 12``."""
    return "; ".join(p for p in parts if p)


async def _fetch(
    conn: aiosqlite.Connection, sql: str, params: Sequence[Any]
) -> list[aiosqlite.Row]:
    async with conn.execute(sql, tuple(params)) as cursor:
        return list(await cursor.fetchall())


async def _elsewhere(
    conn: aiosqlite.Connection, key: str, scope: Scope, workspace: str | Path | None
) -> list[Scope]:
    """The other scope, when it holds ``key``: a hint for a forget aimed at the wrong scope."""
    if scope == "workspace":
        other: Scope = "global"
        where = ""
    elif workspace:
        other, where = "workspace", str(workspace)
    else:
        return []
    found = await _fetch(
        conn,
        "SELECT 1 FROM memory WHERE scope = ? AND workspace = ? AND key = ?",
        (other, where, key),
    )
    return [other] if found else []


async def _revive(
    conn: aiosqlite.Connection,
    scope: Scope,
    where: str,
    gone: Iterable[str],
    because: str,
    *,
    audit: bool,
) -> list[MemoryNote]:
    """Make current again the notes of a scope that the ``gone`` keys (just removed by
    ``because``: delete, forget, evict, clear) superseded, so no note stays superseded by one that
    no longer exists, never recalled. The operator's are audited as the supersession undone."""
    revived: list[MemoryNote] = []
    for key in dict.fromkeys(gone):
        selected = "FROM memory WHERE scope = ? AND workspace = ? AND superseded_by = ?"
        rows = await _fetch(conn, f"SELECT {COLUMNS} {selected} ORDER BY id", (scope, where, key))
        if not rows:
            continue
        await conn.execute(
            "UPDATE memory SET superseded_by = NULL"
            " WHERE scope = ? AND workspace = ? AND superseded_by = ?",
            (scope, where, key),
        )
        for row in rows:
            note = replace(_note(row), superseded_by=None)
            revived.append(note)
            if audit:
                await _audit(
                    conn,
                    "supersede",
                    note,
                    superseded_by=None,
                    was_superseded_by=key,
                    because=because,
                )
    return revived


async def _visible(
    conn: aiosqlite.Connection, scope: Scope, where: str, same_scope: list[MemoryNote]
) -> list[MemoryNote]:
    """Notes a restatement is checked against: this scope's plus, for a workspace note, the global
    ones (the agent sees both together); for a global note, only other global notes."""
    if scope == "global":
        return same_scope
    rows = await _fetch(
        conn, f"SELECT {COLUMNS} FROM memory WHERE scope = 'global' ORDER BY id", ()
    )
    return same_scope + [_note(r) for r in rows]


async def _audit(conn: aiosqlite.Connection, op: str, note: MemoryNote, **extra: Any) -> None:
    detail: dict[str, Any] = {
        "op": op,
        "actor": "operator",
        "scope": note.scope,
        "workspace": note.workspace,
        "key": note.key,
        "value": note.value,
        "pinned": note.pinned,
        "type": note.kind,
        "status": note.status,
    }
    replaced = extra.pop("replaced", None)
    if isinstance(replaced, MemoryNote):
        detail["replaced"] = {"value": replaced.value, "origin": replaced.origin}
    detail.update(extra)
    await _record(conn, detail)


async def _record(conn: aiosqlite.Connection, detail: dict[str, Any]) -> None:
    await conn.execute(
        "INSERT INTO events (run_id, step, kind, detail, at) VALUES (?, 0, ?, ?, ?)",
        (
            OPERATOR_RUN_ID,
            EventKind.MEMORY.value,
            json.dumps(detail, ensure_ascii=False),
            time.time(),
        ),
    )


def recalled(
    workspace: str, conn: Connection
) -> tuple[builtins.list[MemoryNote], builtins.list[MemoryNote]]:
    """``NoteRepo.recalled_for`` on a connection: read along with another hand-off (a step's
    first read, ``RunRepo.take_operator_messages``)."""
    rows = fetch(
        f"SELECT {COLUMNS} FROM memory WHERE (scope = 'workspace' AND workspace = ?)"
        " OR scope = 'global' ORDER BY scope = 'global', id",
        (workspace,),
        conn,
        many=True,
    )
    now = time.time()
    notes = [_note(r) for r in rows]
    return _unshadowed([n for n in notes if n.active(now)]), [n for n in notes if not n.active(now)]
