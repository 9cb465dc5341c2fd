"""The store's connection: the contract both backends keep (``Database``, ``Connection``) and the
embedded one, one SQLite file through aiosqlite (WAL, busy timeout, migrations, serialized
transactions). PostgreSQL's is ``pg.py``."""

from __future__ import annotations

import asyncio
import errno
import os
import shlex
import shutil
import sqlite3
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass, fields
from functools import cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

import aiosqlite

from io_tui.core.store.schema import MIGRATIONS, SCHEMA_VERSION

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

BUSY_TIMEOUT_MS = 5_000
APPLICATION_ID = 0x696F7475  # "iotu": the SQLite header field that marks a file as an io-tui store
# the tables of io-tui's first schema: with user_version set, an io-tui store from before the id
FIRST_TABLES = frozenset(
    {
        "runs",
        "steps",
        "observations",
        "requests",
        "events",
        "approvals",
        "rules",
        "memory",
        "memory_recalls",
        "summaries",
        "operator_messages",
    }
)
_LOCKED = "database is locked"
_FOREIGN = "is not an io-tui store (a SQLite file of something else); io-tui leaves it untouched"
# SQLite's primary result codes for a damaged file (extended codes keep them in the low byte)
_DAMAGE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
# the room io-tui asks for beside a SQLite store: its write-ahead log grows by about 4 MB
# between checkpoints, and a checkpoint writes as much again into the file
STORE_HEADROOM = 8 * 1024 * 1024
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


class Cursor(Protocol):
    """What a repo reads from a statement: sqlite3's cursor, or ``pg.PgCursor``."""

    @property
    def lastrowid(self) -> int | None: ...
    @property
    def rowcount(self) -> int: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...
    def close(self) -> None: ...


class Connection(Protocol):
    """What a repo's callback runs statements on (SQLite's SQL, ``?`` parameters): sqlite3's
    connection, or ``pg.PgConnection``. A row reads by column name and by index."""

    def execute(self, sql: str, parameters: Any = (), /) -> Cursor: ...
    def executemany(self, sql: str, parameters: Iterable[Any], /) -> Cursor: ...


@dataclass(slots=True)
class _Queued:
    """A write waiting for its group (``Database.write``): its callback, and its caller's
    future."""

    fn: Callable[[Connection], Any]
    exclusive: bool
    done: asyncio.Future[Any]


class StoreError(Exception):
    """The store cannot be opened or used; the message says which file and why."""


class StoreDamaged(StoreError):
    """The store's file is damaged (SQLite: corrupt, or no longer a database), found at its open
    or by any query later. Nothing is written to it after: the connection that met the damage
    raises this again for every call."""

    @classmethod
    def of(cls, path: Path, problem: str) -> StoreDamaged:
        """The one line that names the file, what SQLite found, and what to do."""
        problem = " ".join(problem.split())  # quick_check's findings span lines
        where = shlex.quote(str(path))
        return cls(
            f"store {path} is damaged ({problem}); io-tui will not write to it: restore a backup,"
            f" or recover what is readable with sqlite3 {where} .recover | sqlite3 NEW.db"
        )


class StoreFull(StoreError):
    """The disk under the store (or the database server's) has no room left for a write. The
    write was rolled back whole: the store holds what it held, and once there is room a run
    stopped by it resumes from its last commit."""

    @classmethod
    def of(cls, path: Path) -> StoreFull:
        """The one line that names the store, the room left and the room needed."""
        try:
            free = shutil.disk_usage(path.parent).free
        except OSError:
            free = 0
        return cls(
            f"store {path} is full: {size(free)} free on its disk, and io-tui needs at least"
            f" {size(STORE_HEADROOM)} there to write; make room (nothing written before is lost)"
        )


class StoreUnreachable(StoreError):
    """The database could not be reached (a dropped connection, a restart, a failover) for
    longer than io-tui waits (``pg.retry_s``). Nothing was half-written: each write is one
    transaction, committed or not."""


def size(count: float) -> str:
    """A byte count as people read it: ``0 B``, ``812 kB``, ``16 MB``."""
    units = ("B", "kB", "MB", "GB")
    step = 0
    while count >= 1024 and step < len(units) - 1:
        count /= 1024
        step += 1
    unit = units[step]
    shown = f"{count:.0f}" if count >= 10 or count == int(count) else f"{count:.1f}"
    return f"{shown} {unit}"


class Database(ABC):
    """What the repos write and read through, on either backend: one connection shared by
    every run in the process (``SqliteDatabase`` here, ``PgDatabase`` in ``pg.py``).

    Writes go through ``transaction()`` or ``write()``, which hold one asyncio lock so concurrent
    runs never interleave statements inside each other's transactions (``write()`` makes the
    writes queued behind that lock together: a group commit). ``call()``, ``write()``
    and the fetches run a callback ``fn(connection)`` on the connection's thread in a single
    hand-off (the hot paths, a step's commit, use them). The callback gets a ``Connection``:
    sqlite3's own, or PostgreSQL's behind the same calls, so every repo is written once, in
    SQLite's SQL (``pg.py`` says what it rewrites).
    """

    dialect: ClassVar[str]  # "sqlite" or "postgresql": for the rare statement only one has
    path: Path | str  # what messages name the store by (a URL never with its password)

    def __init__(self, *, create: bool) -> None:
        self.create = create
        self._opening: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()
        self._queued: list[_Queued] = []  # writes waiting for the next group (``write``)
        self._flushing: asyncio.Future[None] | None = None  # the task making them

    def open_soon(self) -> asyncio.Task[None]:
        """Start opening the store, once, and go on: every call waits for it to be open (the
        app draws its first frame meanwhile). The task raises what ``open`` raises."""
        if self._opening is None:
            self._opening = asyncio.ensure_future(self.open())
        return self._opening

    async def _wait_open(self) -> None:
        if not self.is_open and self._opening is not None:
            await asyncio.shield(self._opening)

    @property
    @abstractmethod
    def is_open(self) -> bool: ...

    @abstractmethod
    async def open(self) -> None:
        """Check the store is io-tui's (or new), connect and migrate; nothing is written to a
        store of something else, and without ``create`` none is made."""

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def call(self, fn: Callable[[Connection], T]) -> T:
        """``fn(connection)`` run on the connection's thread: any number of statements for one
        hand-off between threads."""

    @abstractmethod
    def transaction(self) -> AbstractAsyncContextManager[aiosqlite.Connection]:
        """One write transaction whose statements are awaited one by one (``await
        conn.execute(...)``, as aiosqlite's); ``write()`` is the one hand-off form. On
        PostgreSQL only its BEGIN rides through a transient fault: a write a run makes goes
        through ``write()``, which is tried again and made once."""

    @staticmethod
    @abstractmethod
    def begin(conn: Connection, exclusive: bool = True) -> None:
        """Start a write transaction; ``exclusive``: one that excludes every other writer of
        the store (SQLite's transactions always do)."""

    async def write(self, fn: Callable[[Connection], T], *, exclusive: bool = True) -> T:
        """``fn(connection)`` in one transaction, in one hand-off: all of it or nothing.

        Not ``exclusive`` is for statements made for concurrent writers (PostgreSQL's row locks,
        ``FOR UPDATE SKIP LOCKED``): there the transaction takes no store-wide lock.

        Writes that queue while another is being made are made together (a group commit: one
        transaction, one hand-off, one commit for all of them), each in a savepoint of its own,
        so a write that fails is undone alone and raises to its caller only. Each returns once
        the commit that holds it is made, as it would alone."""
        queued = _Queued(fn, exclusive, asyncio.get_running_loop().create_future())
        self._queued.append(queued)
        if self._flushing is None:
            self._flushing = asyncio.ensure_future(self._flush())
        return await queued.done  # type: ignore[no-any-return]

    async def _flush(self) -> None:
        """Make the queued writes, those that queued meanwhile in the next group, until none is
        left; the lock is taken again for each group (a ``transaction()`` waiting for it goes
        between two)."""
        group: list[_Queued] = []
        try:
            while self._queued:
                async with self._lock:
                    group = [q for q in self._queued if not q.done.done()]  # (not cancelled)
                    self._queued.clear()
                    if group:
                        await self._make(group)
                group = []
        finally:
            self._flushing = None
            for queued in (*group, *self._queued):  # this task was cancelled: said to each
                if not queued.done.done():
                    queued.done.cancel()
            self._queued.clear()

    async def _make(self, group: list[_Queued]) -> None:
        """One group in one transaction: its outcomes, or the error that undid all of it, to
        each of its writers."""
        begin = partial(self.begin, exclusive=any(q.exclusive for q in group))
        try:
            if len(group) == 1:
                outcomes = [(True, await self.call(partial(in_transaction, begin, group[0].fn)))]
            else:
                fns = [q.fn for q in group]
                outcomes = await self.call(partial(in_savepoints, begin, fns))
        except Exception as exc:
            outcomes = [(False, exc)] * len(group)
        for queued, (made, outcome) in zip(group, outcomes, strict=True):
            if queued.done.done():
                continue  # its writer was cancelled while it was made
            if made:
                queued.done.set_result(outcome)
            else:
                queued.done.set_exception(self._as_error(outcome))

    def _as_error(self, exc: BaseException) -> BaseException:
        """The error a write's caller is given for ``exc`` (what ``call`` raises for it)."""
        return exc

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[aiosqlite.Row]:
        return await self.call(partial(fetch, sql, tuple(params), many=True))

    async def fetchone(self, sql: str, params: Iterable[Any] = ()) -> aiosqlite.Row | None:
        return await self.call(partial(fetch, sql, tuple(params), many=False))


class SqliteDatabase(Database):
    """One SQLite file through aiosqlite: WAL, busy timeout, the file's header checked first."""

    dialect = "sqlite"

    def __init__(self, path: Path, *, create: bool = True, check: bool = False) -> None:
        super().__init__(create=create)
        self.path: Path = path
        self.check = check  # quick_check the whole file at open (commands that start runs)
        self._conn: aiosqlite.Connection | None = None
        self._damaged: str | None = None  # what a query found: every later call raises it

    @property
    def is_open(self) -> bool:
        return self._conn is not None

    async def _connection(self) -> aiosqlite.Connection:
        """The open connection, once ``open_soon`` has opened it; none once it met damage."""
        await self._wait_open()
        if self._damaged is not None:
            raise StoreDamaged(self._damaged)
        return self.conn

    @contextmanager
    def _as_store_error(self) -> Iterator[None]:
        """SQLite's errors the user can act on as a ``StoreError`` (one line, no traceback): a
        lock that outlasted the busy timeout, and a damaged file (``StoreDamaged``), which
        also closes this store to every later call, so nothing more is written to the file."""
        try:
            yield
        except sqlite3.Error as exc:
            error = self._as_error(exc)
            if error is exc:
                raise
            raise error from None

    def _as_error(self, exc: BaseException) -> BaseException:
        if not isinstance(exc, sqlite3.Error):
            return exc
        if _is_damage(exc):
            damaged = StoreDamaged.of(self.path, str(exc))
            self._damaged = str(damaged)
            return damaged
        if _is_full(exc):
            return StoreFull.of(self.path)
        if isinstance(exc, sqlite3.OperationalError) and _LOCKED in str(exc):
            return StoreError(f"store {self.path}: {_describe(exc)}")
        return exc

    async def open(self) -> None:
        """Check the file is an io-tui store (or absent, or empty), connect, set the connection
        up and migrate; the connection is used by others only once all of that is done (with
        ``open_soon`` they wait for it meanwhile). Nothing is written to a file that is not an
        io-tui store, and without ``create`` no file is made."""
        path = self.path
        if path.is_dir():
            raise StoreError(f"store path {path} is a directory; give a file path with --store")
        exists = path.exists()
        if not exists and not self.create:
            raise StoreError(f"no store at {path} (nothing has run with this store yet)")
        conn: aiosqlite.Connection | None = None
        try:
            if exists:
                await asyncio.to_thread(_patiently, partial(_inspect, path))
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
            mode = "rwc" if self.create else "rw"
            conn = await aiosqlite.connect(_uri(path, mode), uri=True, isolation_level=None)
            conn.row_factory = aiosqlite.Row
            prepare = partial(_prepare, path, check=self.check and exists)
            await _on_thread(conn, lambda c: _patiently(partial(prepare, c)))
        except BaseException as exc:
            if conn is not None:
                await conn.close()
            if _is_damage(exc) and not _is_garbage(exc):
                raise StoreDamaged.of(path, str(exc)) from None
            if _is_full(exc):
                raise StoreFull.of(path) from None
            if isinstance(exc, sqlite3.Error | OSError):
                raise StoreError(f"cannot open store {path}: {_describe(exc)}") from None
            raise
        self._conn = conn

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

    async def call(self, fn: Callable[[Connection], T]) -> T:
        """``fn(connection)`` on aiosqlite's thread: one hand-off for all of it (each
        ``aiosqlite`` await is one)."""
        conn = await self._connection()
        with self._as_store_error():
            return await _on_thread(conn, fn)

    @staticmethod
    def begin(conn: Connection, exclusive: bool = True) -> None:
        conn.execute("BEGIN IMMEDIATE")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        async with self._lock:
            conn = await self._connection()
            with self._as_store_error():
                await conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    await _rollback(conn)
                    raise
                await conn.execute("COMMIT")


async def _rollback(conn: aiosqlite.Connection) -> None:
    """Roll back the transaction in progress, if SQLite has not already (it may have after an
    error): the error that ended it is the one to raise, not "no transaction is active"."""
    if conn.in_transaction:
        await conn.execute("ROLLBACK")


async def _on_thread(conn: aiosqlite.Connection, fn: Callable[[sqlite3.Connection], T]) -> T:
    """``fn(connection)`` on aiosqlite's thread, through ``_execute``: the queue every one of its
    own calls goes through (aiosqlite is pinned < 1)."""
    result: T = await conn._execute(lambda: fn(conn._conn))  # type: ignore[no-untyped-call]
    return result


def _patiently(fn: Callable[[], T]) -> T:
    """``fn()``, tried again while SQLite answers "database is locked" before the busy timeout
    has passed: where waiting could deadlock (a journal-mode change, a read turning into a
    write, another process's WAL recovery) SQLite says busy at once instead of calling the busy
    handler, and many processes opening one new store at once meet exactly those."""
    deadline = time.monotonic() + busy_timeout_ms() / 1000
    while True:
        try:
            return fn()
        except sqlite3.OperationalError as exc:
            if _LOCKED not in str(exc) or time.monotonic() >= deadline:
                raise
        time.sleep(0.05)


def _inspect(path: Path) -> None:
    """Identify an existing file through a read-only connection, which can neither roll back a
    journal nor checkpoint a WAL into it: a file that is not an io-tui store, or is damaged, is
    refused with its bytes as they were. A WAL file left at open means a process died with the
    store open (or one has it open now): then ``quick_check`` it first."""
    if not _may_be_ours(path):
        raise StoreError(f"{path} {_FOREIGN}")
    wal_left = _wal_left(path)
    conn = sqlite3.connect(_uri(path, "ro"), uri=True)
    try:
        conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms()}")
        _identify(path, conn)
        if wal_left:
            _quick_check(path, conn)
    finally:
        conn.close()


def _prepare(path: Path, conn: sqlite3.Connection, *, check: bool = False) -> None:
    """Set the connection up and migrate, in one hand-off to its thread (the app's first frame
    waits for it). The file is identified again (it may have been made since ``_inspect``)
    before anything is written to it: not even the journal mode changes on a foreign file.

    ``check``: ``quick_check`` the whole file before that (about 1 ms per MB of store: the
    commands that start runs do, not every open). Here rather than in ``_inspect``: a read-only
    connection leaves an empty ``-wal`` and ``-shm`` beside a WAL store, this one removes them
    as it closes (with nothing to checkpoint: a refused file keeps its bytes)."""
    conn.execute(f"PRAGMA busy_timeout = {busy_timeout_ms()}")
    version, app_id = _identify(path, conn)
    if check:
        _quick_check(path, conn)
    conn.execute("PRAGMA journal_mode = WAL")
    # WAL's recommended level: a commit is not fsynced until a checkpoint, so a power cut may
    # lose the last commits but never corrupts the file; an app crash loses nothing.
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA foreign_keys = ON")
    if version < SCHEMA_VERSION or app_id != APPLICATION_ID:
        _migrate(path, conn)


def _identify(path: Path, conn: sqlite3.Connection) -> tuple[int, int]:
    """The file's schema version and application id, once it is known to be an io-tui store:
    one that carries io-tui's ``application_id``, an empty file, or a store of an io-tui from
    before the id (``user_version`` set and io-tui's first tables present). Anything else is
    refused with ``StoreError``.

    The three are read in one snapshot: one by one, outside a transaction, a store another
    process migrates in between looks foreign (no id, no version yet, then its tables)."""
    own = not conn.in_transaction
    if own:
        conn.execute("BEGIN")
    try:
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    finally:
        if own:
            conn.execute("COMMIT")
    if app_id != APPLICATION_ID:
        empty = app_id == 0 and version == 0 and not names
        legacy = app_id == 0 and version >= 1 and names >= FIRST_TABLES
        if not (empty or legacy):
            raise StoreError(f"{path} {_FOREIGN}")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"store {path} has schema version {version}, newer than this io-tui "
            f"({SCHEMA_VERSION}); upgrade io-tui"
        )
    return version, app_id


def _migrate(path: Path, conn: sqlite3.Connection) -> None:
    """Every pending migration and the application id in one ``BEGIN IMMEDIATE`` transaction,
    the version re-read inside it: of any number of processes opening one new store at once,
    the first migrates and the others find the work done."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        version, _ = _identify(path, conn)
        for number in range(version, SCHEMA_VERSION):
            for statement in _statements(MIGRATIONS[number]):
                conn.execute(statement)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _quick_check(path: Path, conn: sqlite3.Connection) -> None:
    try:
        problems = [row[0] for row in conn.execute("PRAGMA quick_check")]
    except sqlite3.DatabaseError as exc:
        problems = [str(exc)]
    if problems != ["ok"]:
        raise StoreDamaged.of(path, problems[0])


def _may_be_ours(path: Path) -> bool:
    """What the file's first 100 bytes (SQLite's header) say, read without SQLite, so that a
    foreign file is refused before any connection leaves a ``-wal`` or ``-shm`` beside it: false
    for another application's id, or no id, no version and tables already (pages beyond the
    first). An empty file, io-tui's id, or a version (an io-tui from before the id?) are
    looked at closer; so is what is not SQLite at all (SQLite says so)."""
    with path.open("rb") as f:
        header = f.read(100)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\0"):
        return True
    pages, version, app_id = (int.from_bytes(header[at : at + 4], "big") for at in (28, 60, 68))
    if app_id:
        return app_id == APPLICATION_ID
    return version > 0 or pages <= 1


def _wal_left(path: Path) -> bool:
    wal = path.with_name(path.name + "-wal")
    try:
        return wal.stat().st_size > 0
    except OSError:
        return False


def _uri(path: Path, mode: str) -> str:
    return f"{path.absolute().as_uri()}?mode={mode}"


def busy_timeout_ms() -> int:
    """How long a statement waits for another process's write lock before giving up
    (``IO_TUI_BUSY_TIMEOUT_MS`` overrides the default, for tests and slow disks)."""
    given = os.environ.get("IO_TUI_BUSY_TIMEOUT_MS", "")
    return int(given) if given.isdigit() else BUSY_TIMEOUT_MS


def _is_damage(exc: BaseException) -> bool:
    """SQLite says the file is damaged: ``SQLITE_CORRUPT`` ("database disk image is
    malformed") or ``SQLITE_NOTADB`` ("file is not a database") from any statement."""
    code = getattr(exc, "sqlite_errorcode", None)
    return (
        isinstance(exc, sqlite3.DatabaseError) and code is not None and code & 0xFF in _DAMAGE_CODES
    )


def _is_full(exc: BaseException) -> bool:
    """The disk is full: ``SQLITE_FULL`` from a statement, or ``ENOSPC`` from the file system."""
    if isinstance(exc, OSError):
        return exc.errno == errno.ENOSPC
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF == sqlite3.SQLITE_FULL


def _is_garbage(exc: BaseException) -> bool:
    """At open, "file is not a database": not SQLite at all, said as a foreign file is."""
    return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_NOTADB


def in_transaction(
    begin: Callable[[Connection], None], fn: Callable[[Connection], T], conn: Connection
) -> T:
    begin(conn)
    try:
        result = fn(conn)
    except BaseException:
        if getattr(conn, "in_transaction", True):  # SQLite may have rolled it back already
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


def in_savepoints(
    begin: Callable[[Connection], None], fns: list[Callable[[Connection], Any]], conn: Connection
) -> list[tuple[bool, Any]]:
    """Each of ``fns`` in a savepoint of its own, all in one transaction: (True, its result),
    or (False, its error) for one undone alone. An error that ends the whole transaction
    (SQLite rolls it back on a full disk or an I/O error) undoes all of them: it is raised."""
    begin(conn)
    outcomes: list[tuple[bool, Any]] = []
    try:
        for fn in fns:
            conn.execute("SAVEPOINT write")
            try:
                outcomes.append((True, fn(conn)))
            except Exception as exc:
                if not getattr(conn, "in_transaction", True):
                    raise
                conn.execute("ROLLBACK TO write")
                outcomes.append((False, exc))
            conn.execute("RELEASE write")
    except BaseException:
        if getattr(conn, "in_transaction", True):
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return outcomes


def fetch(sql: str, params: tuple[Any, ...], conn: Connection, *, many: bool) -> Any:
    """Every row (``many``) or the first (None: none) of ``sql``, its cursor closed."""
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
    if _LOCKED in text:
        waited = busy_timeout_ms() / 1000
        return f"the database is locked by another process (waited {waited:g} s); try again"
    if "unable to open" in text:
        return "the path cannot be opened (missing directory or no permission)"
    return text
