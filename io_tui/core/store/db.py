"""One SQLite file through aiosqlite: WAL, busy timeout, migrations, serialized transactions."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import fields
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import aiosqlite

from io_tui.core.store.schema import MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

BUSY_TIMEOUT_MS = 5_000
T = TypeVar("T")
D = TypeVar("D", bound="DataclassInstance")


def row_as(cls: type[D], row: sqlite3.Row, **decoded: Any) -> D:
    """The dataclass ``cls`` from a row whose columns are named like its fields; ``decoded``
    gives the fields whose columns need decoding first (JSON text, 0/1 flags, enums)."""
    return cls(**{name: row[name] for name in _plain(cls, tuple(decoded))}, **decoded)


@cache
def _plain(cls: type[DataclassInstance], decoded: tuple[str, ...]) -> tuple[str, ...]:
    """The fields of ``cls`` read straight from their columns."""
    return tuple(f.name for f in fields(cls) if f.name not in decoded)


class StoreError(Exception):
    """The store cannot be opened or used; the message says which file and why."""


class Database:
    """A single connection shared by every run in the process.

    Writes go through ``transaction()`` or ``write()``, which hold one asyncio lock so concurrent
    runs never interleave statements inside each other's transactions. ``write()`` and the
    fetches run on the connection's thread in a single hand-off; the hot paths (a step's
    commit) use them.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: aiosqlite.Connection | None = None
        self._opening: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    def open_soon(self) -> asyncio.Task[None]:
        """Start opening the file, once, and go on: every call waits for it to be open (the app
        draws its first frame meanwhile). The task raises what ``open`` raises."""
        if self._opening is None:
            self._opening = asyncio.ensure_future(self.open())
        return self._opening

    async def _connection(self) -> aiosqlite.Connection:
        """The open connection, once ``open_soon`` has opened it."""
        if self._conn is None and self._opening is not None:
            await asyncio.shield(self._opening)
        return self.conn

    async def open(self) -> None:
        """Connect, set the connection up and migrate; the connection is used by others only
        once all of that is done (with ``open_soon`` they wait for it meanwhile)."""
        conn: aiosqlite.Connection | None = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = await aiosqlite.connect(self.path, isolation_level=None)
            conn.row_factory = aiosqlite.Row
            await self._migrate(conn, await _on_thread(conn, _configure))
        except BaseException as exc:
            if conn is not None:
                await conn.close()
            if isinstance(exc, sqlite3.Error | OSError):
                raise StoreError(f"cannot open store {self.path}: {_describe(exc)}") from None
            raise
        self._conn = conn

    async def _migrate(self, conn: aiosqlite.Connection, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"store {self.path} has schema version {version}, newer than this io-tui "
                f"({SCHEMA_VERSION}); upgrade io-tui"
            )
        for number in range(version, SCHEMA_VERSION):
            await conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _statements(MIGRATIONS[number]):
                    await conn.execute(statement)
                await conn.execute(f"PRAGMA user_version = {number + 1}")
                await conn.execute("COMMIT")
            except BaseException:
                await conn.execute("ROLLBACK")
                raise

    @property
    def conn(self) -> aiosqlite.Connection:
        if self._conn is None:
            raise StoreError("store is not open")
        return self._conn

    async def close(self) -> None:
        opening, self._opening = self._opening, None
        if opening is not None:
            await asyncio.wait([opening])  # a failed open has closed what it opened
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await conn.close()

    async def call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)`` run on the connection's thread: any number of statements for one
        hand-off between threads (each ``aiosqlite`` await is one)."""
        conn = await self._connection()
        return await _on_thread(conn, fn)

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """``fn(connection)`` in one transaction, in one hand-off: all of it or nothing."""
        async with self._lock:
            return await self.call(partial(_in_transaction, fn))

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            conn = await self._connection()
            await conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                await conn.execute("ROLLBACK")
                raise
            await conn.execute("COMMIT")

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[aiosqlite.Row]:
        return await self.call(partial(_fetch, sql, tuple(params), many=True))

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> aiosqlite.Row | None:
        return await self.call(partial(_fetch, sql, tuple(params), many=False))


async def _on_thread(conn: aiosqlite.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """``fn(connection)`` on aiosqlite's thread, through ``_execute``: the queue every one of its
    own calls goes through (aiosqlite is pinned < 1)."""
    return await conn._execute(lambda: fn(conn._conn))


def _configure(conn: sqlite3.Connection) -> int:
    """Set the connection up (one hand-off to its thread: the app's first frame waits for it)
    and return the file's schema version."""
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA journal_mode = WAL")
    # WAL's recommended level: a commit is not fsynced until a checkpoint, so a power cut may
    # lose the last commits but never corrupts the file; an app crash loses nothing.
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    row = conn.execute("PRAGMA user_version").fetchone()
    return int(row[0]) if row else 0


def _in_transaction(fn: Callable[[sqlite3.Connection], T], conn: sqlite3.Connection) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


def _fetch(sql: str, params: tuple[Any, ...], conn: sqlite3.Connection, *, many: bool) -> Any:
    cursor = conn.execute(sql, params)
    try:
        return cursor.fetchall() if many else cursor.fetchone()
    finally:
        cursor.close()


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _describe(exc: BaseException) -> str:
    text = str(exc)
    if "file is not a database" in text:
        return "the file is not an io-tui store (not a SQLite database, or corrupt)"
    if "database is locked" in text:
        return "the database is locked by another process; try again"
    if "unable to open" in text:
        return "the path cannot be opened (missing directory or no permission)"
    return text
