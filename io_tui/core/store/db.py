"""One SQLite file through aiosqlite: WAL, busy timeout, migrations, serialized transactions."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite

from io_tui.core.store.schema import MIGRATIONS, SCHEMA_VERSION

BUSY_TIMEOUT_MS = 5_000


class StoreError(Exception):
    """The store cannot be opened or used; the message says which file and why."""


class Database:
    """A single connection shared by every run in the process.

    Writes go through ``transaction()``, which holds an asyncio lock so concurrent runs never
    interleave statements inside each other's transactions.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()

    async def open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = await aiosqlite.connect(self.path, isolation_level=None)
            self._conn.row_factory = aiosqlite.Row
            await self._conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            await self._conn.execute("PRAGMA journal_mode = WAL")
            await self._conn.execute("PRAGMA foreign_keys = ON")
            await self._migrate()
        except StoreError:
            await self.close()
            raise
        except (sqlite3.Error, OSError) as exc:
            await self.close()
            raise StoreError(f"cannot open store {self.path}: {_describe(exc)}") from None

    async def _migrate(self) -> None:
        conn = self.conn
        (version,) = await (await conn.execute("PRAGMA user_version")).fetchone() or (0,)
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
        if self._conn is not None:
            conn, self._conn = self._conn, None
            await conn.close()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            conn = self.conn
            await conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                await conn.execute("ROLLBACK")
                raise
            await conn.execute("COMMIT")

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[aiosqlite.Row]:
        async with self.conn.execute(sql, tuple(params)) as cursor:
            return list(await cursor.fetchall())

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> aiosqlite.Row | None:
        async with self.conn.execute(sql, tuple(params)) as cursor:
            return await cursor.fetchone()


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
