"""The store on a PostgreSQL server, through psycopg 3: the same contract as the SQLite file.

As with aiosqlite, one connection per process lives on a thread of its own and the repos' callbacks
run there (``Database.call``/``write``), so a step's commit is one hand-off however many statements
it has. The callbacks get a ``PgConnection``, which speaks like sqlite3's: it takes the repos' SQL
(SQLite's) and rewrites, once per statement text, the few spellings PostgreSQL has otherwise:

- ``?`` parameters become ``%s`` (a literal ``%`` is doubled);
- an ``INSERT`` into a table with a generated ``id`` gets ``RETURNING id``: that is ``lastrowid``;
- ``json_extract(col, '$.key')`` becomes ``(col::json -> 'key')::text``, SQLite's scalar
  ``MAX(a, b)`` becomes ``GREATEST(a, b)``;
- a constraint violation raises ``sqlite3.IntegrityError``, what the repos' callers catch.

A module with a statement only PostgreSQL has (``FOR UPDATE SKIP LOCKED``, ``pg_notify``) runs it
the same way, through ``db.write(fn)`` or ``db.call(fn)``, after checking ``db.dialect``; the
driver's own connection is ``conn.raw`` and ``PgDatabase.connect()`` opens a second one (for
``LISTEN``, which needs a connection that is not busy with the store's statements).

A write transaction takes a transaction-scoped advisory lock first (``pg_advisory_xact_lock``):
writers of one store take turns, as SQLite's ``BEGIN IMMEDIATE`` makes them, so every repo's
read-then-write stays correct across processes and machines. Reads take no lock; nor does
``db.write(fn, exclusive=False)``, for statements made for concurrent writers (row locks). A
process stopped inside a write (SIGSTOP, a frozen VM) would hold that lock, and with it every
writer of the store, until it continues: a lock wait gives up after ``STOPPED_WRITER_S`` to
look at the holder, and a session of io-tui's that holds the lock while waiting on its own
process that long is ended (``_end_stopped_writers``). Its transaction rolls back; when the
process wakes, its write is tried again on a new connection, fenced as every driver's write is.

The schema is versioned in the table ``io_tui_schema`` (its application id and version, the
migration numbers of SQLite's ``user_version``); a database with tables and no such table is not
io-tui's and is refused untouched. Migrations run in one transaction under the same advisory
lock, the version re-read inside it: of many processes opening one new store at once, the first
migrates and the others find the work done.

A fault that passes (a dropped connection, a restart, a failover, a serialisation failure) is
waited through: the callback runs again on a new connection, backing off, for up to ``retry_s``
(``IO_TUI_STORE_RETRY_S``), then ``StoreUnreachable``. A write transaction reads its
transaction id first; one whose COMMIT went out and whose answer was lost is run again only if
the server says (``txid_status``) it did not commit, so every ``write(fn)`` is made once.
``transaction()``, whose statements the caller awaits one by one, is tried again only up to its
BEGIN.

The URL is libpq's (``postgresql://user@host:port/db?sslmode=verify-full&sslrootcert=...``):
every option passes through to the driver. The password is never part of what is shown: it
comes from ``PGPASSWORD`` or ``~/.pgpass`` (libpq reads them), from ``PGPASSWORD`` in io-tui's
credentials file, or from the URL itself, where ``store_url`` takes it out.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import re
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, TypeVar, cast

from io_tui.core.store.db import (
    APPLICATION_ID,
    Connection,
    Database,
    StoreError,
    StoreFull,
    StoreUnreachable,
)
from io_tui.core.store.schema import MIGRATIONS, SCHEMA_VERSION, id_tables, postgresql
from io_tui.core.store.urls import (  # re-exported: where a store's URL is read (``urls.py``)
    PASSWORD_VARIABLE as PASSWORD_VARIABLE,
    SCHEMES as SCHEMES,
    StoreUrl as StoreUrl,
    is_url as is_url,
    store_url as store_url,
)

if TYPE_CHECKING:
    import aiosqlite
    import psycopg

T = TypeVar("T")
VERSION_TABLE = "io_tui_schema"
CONNECT_TIMEOUT_S = 10
RETRY_S = 30.0  # how long a transient fault is waited through (``IO_TUI_STORE_RETRY_S``)
BACKOFF_S = (0.05, 2.0)  # the first wait after a transient fault, and the longest
# How long a session of io-tui's may hold the store's write lock while it waits on its own
# process (the process stopped by SIGSTOP, a frozen VM, a laptop lid, in the middle of a write)
# before a writer waiting for the lock ends that session (``_end_stopped_writers``). Every lock
# wait gives up after as long (``lock_timeout``) to look. io-tui's transactions never pause
# that long between statements.
STOPPED_WRITER_S = 5
# io-tui's sessions, other than this one, that hold the store's write lock (an advisory lock on
# APPLICATION_ID, below 2**32: its ``objid``) inside a transaction and have been waiting on their
# client for longer than STOPPED_WRITER_S, their sessions ended
_END_STOPPED_WRITERS = """SELECT a.pid, pg_terminate_backend(a.pid) FROM pg_stat_activity a
WHERE a.datname = current_database() AND a.application_name = 'io-tui'
  AND a.pid <> pg_backend_pid() AND a.xact_start IS NOT NULL AND a.wait_event = 'ClientRead'
  AND a.state_change < clock_timestamp() - make_interval(secs => ?)
  AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.granted
              AND l.locktype = 'advisory' AND l.classid = 0 AND l.objid = ?)"""
LOCK_NOT_AVAILABLE = "55P03"  # a lock wait gave up (``lock_timeout``)
# SQLSTATEs that pass: serialisation failure, deadlock, too many connections, the server shut
# down, crashed or starting (a connection exception is class 08, taken whole)
TRANSIENT_STATES = frozenset({"40001", "40P01", "53300", "57P01", "57P02", "57P03"})
DISK_FULL = "53100"
_FOREIGN = (
    "is not an io-tui store (a PostgreSQL database with tables of something else);"
    " io-tui leaves it untouched"
)


# psycopg logs (to stderr, with no handler set) an error it ignores while ending a pipeline
# whose connection was lost: the error that ended it is raised and handled (``_retrying``)
logging.getLogger("psycopg").setLevel(logging.ERROR)


def retry_s() -> float:
    """How long a transient fault is waited through: ``IO_TUI_STORE_RETRY_S``, else
    ``RETRY_S`` (the lease's life: a driver that waited longer may have lost its run)."""
    given = os.environ.get("IO_TUI_STORE_RETRY_S", "")
    try:
        return max(0.0, float(given)) if given else RETRY_S
    except ValueError:
        return RETRY_S


def _password(url: StoreUrl) -> str | None:
    """The password to give the driver: the URL's, else none when libpq finds one itself
    (``PGPASSWORD``), else the credentials file's ``PGPASSWORD``."""
    if url.password or os.environ.get(PASSWORD_VARIABLE):
        return url.password
    from io_tui.core.providers.base import ProviderConfigError
    from io_tui.core.providers.credentials import read_credential

    try:
        return read_credential(PASSWORD_VARIABLE)
    except ProviderConfigError as exc:
        raise StoreError(str(exc)) from None


class PgRow(tuple[Any, ...]):
    """A row read by column name and by index, as ``sqlite3.Row`` reads."""

    _names: dict[str, int]

    def __new__(cls, values: Sequence[Any], names: dict[str, int]) -> PgRow:
        row = super().__new__(cls, values)
        row._names = names
        return row

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names[key])
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


def _rows(cursor: Any) -> Callable[[Sequence[Any]], PgRow]:
    """psycopg's row factory for ``PgRow``."""
    names = {column.name: at for at, column in enumerate(cursor.description or ())}
    return partial(PgRow, names=names)


class PgCursor:
    """A statement's outcome as sqlite3's cursor gives it (in a pipeline, once it is back)."""

    def __init__(self, conn: PgConnection, cursor: psycopg.Cursor[Any], lastrowid: int | None):
        self._conn = conn
        self._cursor = cursor
        self.lastrowid = lastrowid

    @property
    def rowcount(self) -> int:
        if self._conn.pipeline is not None:
            self._conn.pipeline.sync()
        return self._cursor.rowcount

    def fetchone(self) -> Any:
        import psycopg

        try:
            return self._cursor.fetchone()
        except psycopg.ProgrammingError:  # a statement without rows: sqlite3 says None
            return None

    def fetchall(self) -> list[Any]:
        import psycopg

        try:
            return self._cursor.fetchall()
        except psycopg.ProgrammingError:
            return []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())

    def close(self) -> None:
        self._cursor.close()


class PgConnection:
    """sqlite3's ``execute``/``executemany`` over a psycopg connection (``raw``)."""

    dialect = "postgresql"  # what a statement only PostgreSQL has checks (``live.announce``)

    def __init__(self, raw: psycopg.Connection[Any]) -> None:
        self.raw = raw
        self.pipeline: psycopg.Pipeline | None = None

    def execute(self, sql: str, parameters: Any = (), /) -> PgCursor:
        text, returning = translate(sql)
        with _integrity():
            cursor = self.raw.execute(text, tuple(parameters))
            lastrowid = cursor.fetchone()[0] if returning else None  # type: ignore[index]
        return PgCursor(self, cursor, lastrowid)

    def executemany(self, sql: str, parameters: Iterable[Any], /) -> PgCursor:
        text, _ = translate(sql, returning=False)
        cursor = self.raw.cursor()
        with _integrity():
            cursor.executemany(text, [tuple(p) for p in parameters])
        return PgCursor(self, cursor, None)

    @contextmanager
    def pipelined(self) -> Iterator[None]:
        """Statements sent without waiting for each answer (psycopg's pipeline mode): a wait
        only where a result is read (a row, ``lastrowid``, ``rowcount``) and at the end. A
        failure surfaces at the next wait; a transaction it left aborted is rolled back."""
        from psycopg.pq import TransactionStatus

        try:
            with self.raw.pipeline() as self.pipeline:
                yield
        except BaseException:
            if not self.raw.broken and self.raw.info.transaction_status != TransactionStatus.IDLE:
                with contextlib.suppress(Exception):  # the error that ended it is the one raised
                    self.raw.execute("ROLLBACK")
            raise
        finally:
            self.pipeline = None


@contextmanager
def _integrity() -> Iterator[None]:
    import psycopg

    try:
        yield
    except psycopg.IntegrityError as exc:
        raise sqlite3.IntegrityError(_first_line(exc)) from None


_JSON_EXTRACT = re.compile(r"json_extract\((\w+), '\$\.(\w+)'\)", re.IGNORECASE)
_SCALAR_MAX = re.compile(r"\bMAX\(([^(),]+),([^(),]+)\)", re.IGNORECASE)
_INSERT = re.compile(r"\s*INSERT\s+INTO\s+(\w+)", re.IGNORECASE)
_ID_TABLES = id_tables()


@lru_cache(maxsize=4096)
def translate(sql: str, *, returning: bool = True) -> tuple[str, bool]:
    """The repos' SQL as PostgreSQL takes it, and whether it returns the new row's id."""
    sql = _JSON_EXTRACT.sub(r"((\1)::json -> '\2')::text", sql)
    sql = _SCALAR_MAX.sub(r"GREATEST(\1,\2)", sql)
    parts = sql.replace("%", "%%").split("'")
    parts[::2] = [part.replace("?", "%s") for part in parts[::2]]  # outside string literals
    sql = "'".join(parts)
    insert = _INSERT.match(sql)
    if returning and insert and insert[1] in _ID_TABLES and "RETURNING" not in sql.upper():
        return f"{sql} RETURNING id", True
    return sql, False


class _AsyncCursor:
    """A statement's outcome inside ``transaction()``, as aiosqlite's cursor gives it."""

    def __init__(self, cursor: PgCursor) -> None:
        self.lastrowid = cursor.lastrowid
        self.rowcount = cursor.rowcount
        self._rows = cursor.fetchall()

    async def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None

    async def fetchall(self) -> list[Any]:
        return self._rows


class _Statement:
    """``conn.execute(...)`` inside ``transaction()``: awaited, or ``async with``-ed, as
    aiosqlite's."""

    def __init__(self, running: asyncio.Future[_AsyncCursor]) -> None:
        self._running = running

    def __await__(self) -> Any:
        return self._running.__await__()

    async def __aenter__(self) -> _AsyncCursor:
        return await self._running

    async def __aexit__(self, *exc: object) -> None:
        return None


class _AsyncConnection:
    def __init__(self, db: PgDatabase) -> None:
        self._db = db

    def execute(self, sql: str, parameters: Iterable[Any] = ()) -> _Statement:
        def run(conn: Connection) -> _AsyncCursor:
            return _AsyncCursor(cast(PgCursor, conn.execute(sql, tuple(parameters))))

        return _Statement(asyncio.ensure_future(self._db._once(run, reconnect=False)))


class PgDatabase(Database):
    """One PostgreSQL database through one psycopg connection on a thread of its own."""

    dialect = "postgresql"

    def __init__(self, url: StoreUrl, *, create: bool = True) -> None:
        super().__init__(create=create)
        self.path: StoreUrl = url
        self.retry_s = retry_s()  # how long a transient fault is waited through
        self._conn: PgConnection | None = None
        self._thread: ThreadPoolExecutor | None = None

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    def _on_thread(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="io-tui-store")
        return asyncio.get_running_loop().run_in_executor(self._thread, fn)

    async def open(self) -> None:
        """Connect, identify the database (io-tui's, empty, or refused) and migrate."""
        if importlib.util.find_spec("psycopg") is None:
            raise StoreError(
                f"{self.path}: a PostgreSQL store needs the pg extra: pip install 'io-tui[pg]'"
            )
        raw = None
        try:
            with self._as_store_error("cannot open store"):
                raw = await self._on_thread(partial(self.connect_sync, self.path))
                conn = PgConnection(raw)
                await self._on_thread(partial(_prepare, self.path, conn, self.create))
        except BaseException:
            if raw is not None:
                await self._on_thread(raw.close)
            raise
        self._conn = conn

    @staticmethod
    def connect_sync(url: StoreUrl) -> psycopg.Connection[Any]:
        """A new autocommit connection to the store's server, rows as ``PgRow``, whose lock
        waits give up after ``STOPPED_WRITER_S`` (``_retrying`` looks at the holder then)."""
        import psycopg

        options: dict[str, Any] = {}
        password = _password(url)
        if password:
            options["password"] = password
        if "connect_timeout" not in url:
            options["connect_timeout"] = CONNECT_TIMEOUT_S
        raw = psycopg.connect(
            str(url), autocommit=True, row_factory=_rows, application_name="io-tui", **options
        )
        try:
            raw.execute(f"SET lock_timeout = '{STOPPED_WRITER_S}s'")
        except BaseException:
            raw.close()
            raise
        return raw

    async def connect(self) -> psycopg.AsyncConnection[Any]:
        """A second connection of the process's own (autocommit), for what must not share the
        store's: ``LISTEN`` and waiting for its notifications. The caller closes it."""
        import psycopg

        options: dict[str, Any] = {"connect_timeout": CONNECT_TIMEOUT_S}
        password = _password(self.path)
        if password:
            options["password"] = password
        with self._as_store_error("cannot connect to store"):
            return await psycopg.AsyncConnection.connect(
                str(self.path), autocommit=True, application_name="io-tui", **options
            )

    async def close(self) -> None:
        opening, self._opening = self._opening, None
        if opening is not None:
            await asyncio.wait([opening])  # a failed open has closed what it opened
        conn, self._conn = self._conn, None
        if conn is not None:
            await self._on_thread(conn.raw.close)
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.shutdown(wait=False)

    async def call(self, fn: Callable[[Connection], T]) -> T:
        """``fn(conn)``, tried again through a transient fault (``_retrying``): a read, or a
        statement that may run twice."""
        return await self._retrying(fn)

    async def _retrying(self, fn: Callable[[Connection], T]) -> T:
        """``fn(conn)``; through a transient fault (``transient``: a dropped connection, a
        restart, a failover, a serialisation failure) it is tried again on a new connection,
        waiting longer each time (``BACKOFF_S``), for up to ``retry_s``, then
        ``StoreUnreachable``. A transaction whose COMMIT went out and whose answer was lost
        (``CommitUnknown``) is not run again blind: the server says whether it committed, by
        its transaction id, and only one that did not is run again; so a write is made once.

        A lock waited for ``STOPPED_WRITER_S`` in vain is not a fault: the session holding it is
        ended if its process has stopped inside a write (``_end_stopped_writers``), and ``fn``
        waits again, for as long as a holder at work needs."""
        await self._wait_open()
        started: float | None = None
        delay = BACKOFF_S[0]
        unsure: CommitUnknown | None = None
        locked = False  # a lock wait gave up: its holder is looked at first
        while True:
            try:
                if locked:
                    locked = False
                    await self._once(_end_stopped_writers, mapped=False)
                if unsure is not None:
                    if await self._once(partial(_committed, unsure.xid), mapped=False):
                        return cast(T, unsure.result)
                    unsure = None  # rolled back: it runs again
                return await self._once(fn, mapped=False)
            except CommitUnknown as exc:
                unsure, cause = exc, exc.cause
            except Exception as exc:
                if getattr(exc, "sqlstate", None) == LOCK_NOT_AVAILABLE:
                    locked = True
                    continue
                if not transient(exc):
                    raise self._store_error("store", exc) from None
                cause = exc
            now = time.monotonic()
            started = now if started is None else started
            if now - started >= self.retry_s:
                raise StoreUnreachable(
                    f"the database at {self.path} was unreachable for {now - started:.0f} s"
                    f" ({self._said(cause)})"
                ) from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, BACKOFF_S[1])

    async def _once(
        self, fn: Callable[[Connection], T], *, mapped: bool = True, reconnect: bool = True
    ) -> T:
        """``fn(conn)`` on the store's thread, once; on a new connection first when the server
        dropped the last one (``reconnect``), unless a transaction is open on it (its
        statements must not go on outside it, in autocommit)."""
        await self._wait_open()
        conn = self._conn
        if conn is None:
            raise StoreError("store is not open")
        try:
            return await self._on_thread(partial(self._reconnected, fn, conn, reconnect))
        except Exception as exc:
            if mapped:
                raise self._store_error("store", exc) from None
            raise

    def _reconnected(self, fn: Callable[[Connection], T], conn: PgConnection, reconnect: bool) -> T:
        if conn.raw.broken or conn.raw.closed:
            if not reconnect:
                raise StoreError(f"store {self.path}: the connection was lost mid-transaction")
            with contextlib.suppress(Exception):
                conn.raw.close()
            conn.raw = self.connect_sync(self.path)
        return fn(conn)

    async def write(self, fn: Callable[[Connection], T], *, exclusive: bool = True) -> T:
        """(pipelined: a step's commit waits for the server about three times, not once per
        statement; the store's write lock is held that much shorter. Through a transient fault
        it is tried again and made once: ``_retrying``)"""
        async with self._lock:
            return await self._retrying(partial(_pipelined_transaction, exclusive, fn))

    @staticmethod
    def begin(conn: Connection, exclusive: bool = True) -> None:
        conn.execute("BEGIN")
        if exclusive:
            conn.execute("SELECT pg_advisory_xact_lock(?)", (APPLICATION_ID,))

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """(its BEGIN is tried again through a transient fault, as nothing has happened yet;
        a fault after it fails the transaction, which the server rolls back)"""
        async with self._lock:
            await self._retrying(self.begin)
            try:
                yield cast("aiosqlite.Connection", _AsyncConnection(self))
            except BaseException:
                await self._once(_rollback, reconnect=False)
                raise
            await self._once(_commit, reconnect=False)

    @contextmanager
    def _as_store_error(self, doing: str) -> Iterator[None]:
        """The driver's failures to reach or keep the server as one line that names the store
        (never its password)."""
        try:
            yield
        except Exception as exc:
            raise self._store_error(doing, exc) from None

    def _store_error(self, doing: str, exc: Exception) -> Exception:
        """``exc`` as io-tui says it: a full server as ``StoreFull``, a server out of reach as
        a ``StoreError`` naming the store (never its password); anything else as it is."""
        import psycopg

        if getattr(exc, "sqlstate", None) == DISK_FULL:
            return StoreFull(
                f"store {self.path} is full: the database server has no room left"
                f" ({self._said(exc)}); make room on it (nothing written before is lost)"
            )
        if isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError):
            return StoreError(f"{doing} {self.path}: {self._said(exc)}")
        return exc

    def _said(self, exc: BaseException) -> str:
        text = _first_line(exc)
        if self.path.password:
            text = text.replace(self.path.password, "***")
        return text


class CommitUnknown(Exception):
    """A transaction's COMMIT was sent and the connection lost before its answer: it may have
    committed or not. ``xid`` says which, once the server can be asked (``_committed``);
    ``result`` is what the transaction's work returned."""

    def __init__(self, xid: int, result: object, cause: BaseException) -> None:
        super().__init__(f"transaction {xid}: commit unknown ({_first_line(cause)})")
        self.xid = xid
        self.result = result
        self.cause = cause


def transient(exc: BaseException) -> bool:
    """A fault that passes: the connection dropped or could not be made (a restart, a failover,
    a terminated backend: no SQLSTATE, class 08, 57P01-03), a serialisation failure or a
    deadlock (40001, 40P01), too many connections (53300). Trying again is right."""
    import psycopg

    if not isinstance(exc, psycopg.Error):
        return False
    state = exc.sqlstate
    if state is None:
        return isinstance(exc, psycopg.OperationalError | psycopg.InterfaceError)
    return state in TRANSIENT_STATES or state.startswith("08")


def _pipelined_transaction(exclusive: bool, fn: Callable[[Connection], T], conn: Connection) -> T:
    """``fn`` in one transaction, pipelined. Its transaction id is read first, so that a COMMIT
    whose answer is lost with the connection is ``CommitUnknown``, not a guess."""
    pg = cast(PgConnection, conn)
    committing = False
    try:
        with _integrity(), pg.pipelined():
            pg.execute("BEGIN")
            if exclusive:
                pg.execute("SELECT pg_advisory_xact_lock(?)", (APPLICATION_ID,))
            xid = int(pg.execute("SELECT txid_current()").fetchone()[0])
            result = fn(pg)
            committing = True  # from here a lost connection may have lost only the answer
            pg.execute("COMMIT")
            assert pg.pipeline is not None
            pg.pipeline.sync()
    except Exception as exc:
        if committing and transient(exc):
            raise CommitUnknown(xid, result, exc) from exc
        raise
    return result


def _committed(xid: int, conn: Connection) -> bool:
    """Whether transaction ``xid`` committed; a transient fault while it is still ending (its
    backend not yet gone)."""
    import psycopg

    status = conn.execute("SELECT txid_status(?)", (xid,)).fetchone()[0]
    if status == "in progress":
        raise psycopg.OperationalError(f"transaction {xid} is still ending")
    return bool(status == "committed")


def _end_stopped_writers(conn: Connection) -> None:
    """Ends the sessions that hold the store's write lock for processes stopped inside a write
    (``STOPPED_WRITER_S``): the server rolls their transactions back and the lock is free. A
    stopped process that wakes finds its connection gone, a transient fault: its write runs
    again on a new connection (a driver's, fenced, finds whether its lease still holds). A
    session of another role, which this one may not end, is waited for."""
    import psycopg
    from psycopg.pq import TransactionStatus

    pg = cast(PgConnection, conn)
    if pg.raw.info.transaction_status != TransactionStatus.IDLE:
        pg.raw.execute("ROLLBACK")  # the transaction whose lock wait gave up
    with contextlib.suppress(psycopg.errors.InsufficientPrivilege):
        conn.execute(_END_STOPPED_WRITERS, (STOPPED_WRITER_S, APPLICATION_ID)).fetchall()


def _rollback(conn: Connection) -> None:
    conn.execute("ROLLBACK")


def _commit(conn: Connection) -> None:
    conn.execute("COMMIT")


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _prepare(url: StoreUrl, conn: PgConnection, create: bool) -> None:
    version = _identify(url, conn)
    if version == 0 and not create:
        raise StoreError(f"no store at {url} (nothing has run with this store yet)")
    if version < SCHEMA_VERSION:
        _migrate(url, conn)


def _identify(url: StoreUrl, conn: PgConnection) -> int:
    """The database's schema version, once it is known to be an io-tui store (0: empty)."""
    tables = {
        row[0]
        for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
    }
    if VERSION_TABLE not in tables:
        if tables:
            raise StoreError(f"{url} {_FOREIGN}")
        return 0
    row = conn.execute(f"SELECT application_id, version FROM {VERSION_TABLE}").fetchone()
    if row is None or row[0] != APPLICATION_ID:
        raise StoreError(f"{url} {_FOREIGN}")
    version = int(row[1])
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"store {url} has schema version {version}, newer than this io-tui "
            f"({SCHEMA_VERSION}); upgrade io-tui"
        )
    return version


def _migrate(url: StoreUrl, conn: PgConnection) -> None:
    """Every pending migration in one transaction under the store's write lock, the version
    re-read inside it; a peer migrating is waited for however long it takes."""
    conn.execute("BEGIN")
    conn.execute("SET LOCAL lock_timeout = 0")
    conn.execute("SELECT pg_advisory_xact_lock(?)", (APPLICATION_ID,))
    try:
        version = _identify(url, conn)
        if version == 0:
            conn.raw.execute(
                f"CREATE TABLE {VERSION_TABLE} (application_id BIGINT NOT NULL,"
                " version INTEGER NOT NULL)"
            )
            conn.execute(f"INSERT INTO {VERSION_TABLE} VALUES (?, 0)", (APPLICATION_ID,))
        for number in range(version, SCHEMA_VERSION):
            conn.raw.execute(postgresql(MIGRATIONS[number]))  # one round trip: no parameters
        conn.execute(f"UPDATE {VERSION_TABLE} SET version = ?", (SCHEMA_VERSION,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
