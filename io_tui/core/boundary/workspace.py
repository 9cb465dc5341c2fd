"""The agent's workspace: path containment plus async file and subprocess primitives.

Every path a tool touches goes through ``Workspace.resolve``, which follows symlinks (including
symlinked directories in the middle of a path and dangling links) and refuses anything that ends up
outside the root. The policy then matches the *resolved* relative path, so a link named
``notes.txt`` that points at ``.env`` is checked as ``.env``.

Only regular files are opened: a FIFO, socket or device is refused with what it is (opening a FIFO
blocks until someone writes to it). Blocking work (disk I/O, directory walks) runs in
``asyncio.to_thread`` so a run never stalls the event loop the TUI shares; what costs less than
that hand-off (a path's resolution, a small folder's listing) runs on the loop.

Commands run as an argv (never a shell) in their own session, with an allow-listed environment
(``command_env``) carrying a tag of their own: when the command ends, times out or is cancelled,
everything in its session and everything that still carries its tag (a ``setsid`` or
double-forked grandchild has left the session but not the environment) is killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import itertools
import os
import signal
import stat
import tempfile
import uuid
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from io_tui.core.boundary.safe_text import shown_name, unescape_name
from io_tui.core.boundary.sandbox import SandboxPlan
from io_tui.core.errors import WorkspaceError as WorkspaceError  # what containment raises
from io_tui.core.ledger import Seen, content_digest

BINARY_SNIFF_BYTES = 8_192
# a listing reads this many entries on the event loop, the rest of a larger folder in a thread
LISTED_ON_LOOP = 64
MAX_READ_BYTES = 32 * 1024 * 1024
# Command output is kept whole up to this many bytes at each end; beyond that the middle is dropped
# with a marker. Far above any observation cap, it only stops a runaway command filling memory.
EXEC_KEEP_HEAD_BYTES = 1024 * 1024
EXEC_KEEP_TAIL_BYTES = 1024 * 1024
STRAGGLER_GRACE_S = 1.0
EXIT_POLL_S = 0.02


# What a command's environment keeps from the harness's: names of harmless variables (``*`` ends
# a prefix), plus what the config's ``[run] env_allow`` adds. Everything else (keys, tokens,
# database URLs, cloud credentials) stays out, whatever it is called.
ENV_ALLOW = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "COLORTERM",
    "NO_COLOR", "TZ", "TMPDIR", "TEMP", "TMP", "COLUMNS", "LINES", "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "VIRTUAL_ENV",
)  # fmt: skip
KILL_ROUNDS = 100  # scans for tagged stragglers after a command; each kills what it finds
KILL_POLL_S = 0.01
EXEC_TAG_VAR = "IO_TUI_EXEC_TAG"


def command_env(allow: Iterable[str] = (), tag: str = "") -> dict[str, str]:
    """The harness's environment cut to ``ENV_ALLOW`` and ``allow`` (exact names, or prefixes
    ending in ``*``), plus the command's tag: a command the model runs (``env``, ``printenv``)
    must never read a credential into the trace."""
    names = (*ENV_ALLOW, *allow)
    exact = {n for n in names if not n.endswith("*")}
    prefixes = tuple(n[:-1] for n in names if n.endswith("*"))
    env = {k: v for k, v in os.environ.items() if k in exact or k.startswith(prefixes)}
    if tag:
        env[EXEC_TAG_VAR] = tag
    return env


def file_kind(mode: int) -> str:
    """What a non-regular file is, in words."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def refuse_special(display: str, mode: int) -> None:
    """Raise unless ``mode`` is a regular file's: nothing else is read or written."""
    if not stat.S_ISREG(mode):
        raise WorkspaceError(
            f"{display} is {file_kind(mode)}, not a regular file; only regular files are "
            "read or written"
        )


def open_regular(path: str | os.PathLike[str], display: str) -> int:
    """A read-only descriptor for ``path``, refused unless it is a regular file (a socket cannot
    be opened at all). Opened non-blocking, so a FIFO swapped in after the first check answers at
    once instead of waiting for a writer; the second check catches it."""
    refuse_special(display, os.stat(path).st_mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        refuse_special(display, os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


TEMPORARY_SUFFIX = ".io-tui"  # of the file ``replace_atomically`` writes before its rename


def discard_unfinished_writes(target: Path, since: float) -> list[str]:
    """Remove the temporary files ``replace_atomically`` made for ``target`` from ``since`` (a
    timestamp) on and never renamed: a process killed mid-write leaves one beside the file.
    Returns their names."""
    removed = []
    for leftover in target.parent.glob(f".{glob.escape(target.name)}.*{TEMPORARY_SUFFIX}"):
        with contextlib.suppress(OSError):  # gone meanwhile, or not ours to remove
            info = leftover.lstat()
            if stat.S_ISREG(info.st_mode) and info.st_mtime >= since:
                leftover.unlink()
                removed.append(leftover.name)
    return removed


def replace_atomically(target: Path, data: bytes, before: os.stat_result | None) -> None:
    """Put ``data`` at ``target`` all at once: written to a new file in the same directory,
    synced, given the old file's mode (and owner, where allowed; a new file gets the umask's
    mode), then renamed over the target and the directory synced. On any failure the temporary
    file goes and ``target`` is as it was; the ``OSError`` is raised."""
    fd, temporary = tempfile.mkstemp(
        prefix=f".{target.name}.", suffix=TEMPORARY_SUFFIX, dir=target.parent
    )
    try:
        try:
            mode = stat.S_IMODE(before.st_mode) if before else 0o666 & ~_umask()
            os.fchmod(fd, mode)
            if before is not None:
                with contextlib.suppress(OSError):  # another user's file: keep ours
                    os.fchown(fd, before.st_uid, before.st_gid)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_directory(target.parent)


def _sync_directory(directory: Path) -> None:
    """Make a rename in ``directory`` durable (a file system that cannot sync one is left be)."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def _umask() -> int:
    """The process's umask: Linux says it in ``/proc/self/status``; elsewhere the one it had
    when this module loaded (reading it means setting it, which other threads would see)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return _UMASK_AT_LOAD


_UMASK_AT_LOAD = os.umask(0o022)
os.umask(_UMASK_AT_LOAD)


@dataclass(frozen=True, slots=True)
class ByteRange:
    """Bytes ``offset`` … ``offset + len(data)`` of a file of ``size`` bytes; ``line``: the
    line the range starts in."""

    path: str
    offset: int
    data: bytes
    size: int
    line: int
    seen: Seen


@dataclass(frozen=True, slots=True)
class ExecResult:
    """How a command ended. ``exit_code`` is negative when a signal ended it (e.g. the timeout)."""

    exit_code: int | None
    output: str
    timed_out: bool


def is_binary(head: bytes) -> bool:
    """Treat a NUL byte near the start as binary, the heuristic git and grep use."""
    return b"\0" in head[:BINARY_SNIFF_BYTES]


def _entries(it: Iterator[os.DirEntry[str]], limit: int | None = None) -> list[tuple[str, bool]]:
    """``(shown name, is_dir)`` for the next ``limit`` entries of a ``scandir`` (None: all)."""
    entries = []
    for entry in itertools.islice(it, limit):
        try:
            is_dir = entry.is_dir()
        except OSError:
            is_dir = False
        entries.append((shown_name(entry.name), is_dir))
    return entries


@contextlib.contextmanager
def fs_errors(display: str) -> Iterator[None]:
    """Turn OS errors into messages the model can act on, naming the workspace-relative path."""
    try:
        yield
    except FileNotFoundError:
        raise WorkspaceError(f"{display}: no such file or directory") from None
    except IsADirectoryError:
        raise WorkspaceError(f"{display} is a directory; use list_dir to see its entries") from None
    except NotADirectoryError:
        raise WorkspaceError(
            f"{display}: a parent of this path is a file, not a directory"
        ) from None
    except PermissionError:
        raise WorkspaceError(f"{display}: permission denied") from None
    except UnicodeDecodeError as exc:
        raise WorkspaceError(
            f"{display} is not UTF-8 text (undecodable byte at offset {exc.start})"
        ) from None
    except OSError as exc:
        raise WorkspaceError(f"{display}: {exc.strerror or exc}") from None


class Workspace:
    """The directory a run may touch, and nothing outside it."""

    def __init__(self, root: str | os.PathLike[str], *, env_allow: Iterable[str] = ()) -> None:
        given = Path(root).expanduser()
        if not given.exists():
            raise WorkspaceError(f"workspace root does not exist: {given}")
        if not given.is_dir():
            raise WorkspaceError(f"workspace root is not a directory: {given}")
        self.root = given.resolve()
        # the root's directory as it was found (``_plain``: the same directory still?)
        found = self.root.stat()
        self._root_id = (found.st_dev, found.st_ino)
        self._root_text = str(self.root)
        self._below = self._root_text.rstrip("/") + "/"
        self._digests: dict[str, tuple[tuple[int, int], str]] = {}  # ``changed``'s last hashes
        self.env_allow = tuple(env_allow)  # what commands see besides ``ENV_ALLOW``

    def __repr__(self) -> str:
        return f"Workspace({str(self.root)!r})"

    # -- containment -------------------------------------------------------------------------

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """The real absolute path for ``path`` (relative to the root, or absolute inside it).

        Symlinks are followed wherever they sit; a path that does not exist yet is resolved
        through its nearest existing parent. Anything landing outside the root is refused.
        """
        raw = os.fspath(path)
        if "\0" in raw:
            raise WorkspaceError("path contains a NUL byte")
        candidate = self._given(raw)
        resolved = self._real(candidate)
        if resolved != self.root and not resolved.is_relative_to(self.root):
            raise WorkspaceError(
                f"{raw!r} is outside the workspace; paths must stay under the workspace root "
                "(use a path relative to it)"
            )
        return resolved

    def _given(self, raw: str) -> Path:
        """``raw`` as a path under the root: as written, or, when no such entry exists and it
        holds ``\\xNN``, the name those bytes spell (a name shown by ``shown_name``, passed
        back by the model as it was shown)."""
        given = Path(raw or ".")
        candidate = given if given.is_absolute() else self.root / given
        if "\\x" in raw and not os.path.lexists(candidate):
            decoded = Path(unescape_name(raw))
            named = decoded if decoded.is_absolute() else self.root / decoded
            if os.path.lexists(named) or os.path.lexists(named.parent):
                return named
        return candidate

    def _real(self, candidate: Path) -> Path:
        """Resolve symlinks in the existing part of ``candidate``; keep the rest lexically.

        ``os.path.realpath`` (non-strict) does exactly this: each existing component is
        resolved, dangling links are followed to their target, and ``..`` after a missing
        component is applied to the already-resolved prefix, so it cannot hide an escape. A
        plain path below the root (``_plain``) is what it would give, without its ``lstat`` of
        every component of the root itself.
        """
        if self._plain(candidate):
            return candidate
        try:
            return Path(os.path.realpath(candidate))
        except (OSError, ValueError) as exc:  # pragma: no cover - exotic loops on some OSes
            raise WorkspaceError(f"cannot resolve {candidate}: {exc}") from None

    def _plain(self, candidate: Path) -> bool:
        """Whether ``candidate`` is the root or a path below it whose every component there
        exists and is no link, with no ``..``, while the root's path still leads to the root's
        directory (the same device and inode as when the run found it): then it is its own real
        path, as far as the workspace is concerned. Anything else goes to ``realpath``."""
        text = str(candidate)
        if text == self._root_text:
            below = ""
        elif text.startswith(self._below):
            below = text[len(self._below) :]
        else:
            return False
        try:
            found = os.stat(self._root_text)
            if (found.st_dev, found.st_ino) != self._root_id:
                return False
            path = self._root_text.rstrip("/")
            for part in below.split("/") if below else ():
                if part in ("", ".", ".."):
                    return False
                path = f"{path}/{part}"
                if stat.S_ISLNK(os.lstat(path).st_mode):
                    return False
        except OSError:  # a missing component, a file in the middle: as realpath says
            return False
        return True

    def relative(self, path: str | os.PathLike[str]) -> str:
        """The POSIX path relative to the root ('.' for the root), for policy and display: a
        name that is not UTF-8, or holds a control character, is shown byte by byte
        (``bad\\xff.txt``), and ``resolve`` takes it back as it was shown."""
        return self.shown(self.resolve(path))

    def shown(self, resolved: Path) -> str:
        """``relative`` of a path ``resolve`` has just given: its symlinks are resolved and it
        is inside the root already, so it is not resolved again (``realpath``: a ``lstat`` per
        component)."""
        rel = resolved.relative_to(self.root).as_posix()
        return shown_name(rel) or "."

    def contains(self, path: str | os.PathLike[str]) -> bool:
        """Whether ``path`` resolves inside the root; never raises."""
        try:
            self.resolve(path)
        except WorkspaceError:
            return False
        return True

    # -- files -------------------------------------------------------------------------------

    async def read_bytes(self, path: str, *, max_bytes: int = MAX_READ_BYTES) -> bytes:
        return (await self._read(path, max_bytes))[0]

    async def _read(self, path: str, max_bytes: int) -> tuple[bytes, Seen]:
        """The file's bytes and what they were (``Seen``: the digest of those bytes)."""
        target = self.resolve(path)
        display = self.shown(target)

        def read() -> tuple[bytes, Seen]:
            with fs_errors(display), os.fdopen(open_regular(target, display), "rb") as f:
                st = os.fstat(f.fileno())  # before the read: a change during it shows as a new stat
                if st.st_size > max_bytes:
                    raise WorkspaceError(
                        f"{display} is {st.st_size:,} bytes, more than the {max_bytes:,} a line "
                        "read takes; read a byte range (byte_offset, byte_limit) or grep for "
                        "the part you need"
                    )
                data = f.read()
            return data, Seen(display, len(data), st.st_mtime_ns, content_digest(data))

        return await asyncio.to_thread(read)

    async def read_range(self, path: str, offset: int, limit: int) -> ByteRange:
        """``limit`` bytes of the file at ``offset`` (fewer at its end), whatever its size, with
        the line the range starts in (a streamed count of the newlines before it)."""
        target = self.resolve(path)
        display = self.shown(target)

        def read() -> ByteRange:
            with fs_errors(display), os.fdopen(open_regular(target, display), "rb") as f:
                st = os.fstat(f.fileno())
                line = 1
                left = min(offset, st.st_size)
                while left > 0:
                    chunk = f.read(min(left, 1 << 20))
                    if not chunk:
                        break
                    line += chunk.count(b"\n")
                    left -= len(chunk)
                f.seek(offset)
                data = f.read(limit)
            seen = Seen(display, st.st_size, st.st_mtime_ns, content_digest(data))
            return ByteRange(display, offset, data, st.st_size, line, seen)

        return await asyncio.to_thread(read)

    async def read_text(self, path: str) -> str:
        """The file as text, refusing binary and non-UTF-8 files with a clear error."""
        return (await self.read_text_seen(path))[0]

    def current_text(self, path: str, *, max_bytes: int) -> str | None:
        """The file at ``path`` as text as it is now, for showing a proposed change against it
        (an approval's diff): None when it resolves outside the root, does not exist, is not a
        regular file (a FIFO would block), is larger than ``max_bytes`` or is not UTF-8 text.
        Blocking: call it from a thread. Never raises."""
        try:
            target = self.resolve(path)
            st = target.stat()
            if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
                return None
            return target.read_text(encoding="utf-8")
        except (WorkspaceError, OSError, UnicodeDecodeError):
            return None

    async def read_text_seen(self, path: str) -> tuple[str, Seen]:
        """``read_text``, and what was read (for ``Observation.seen``)."""
        data, seen = await self._read(path, MAX_READ_BYTES)
        display = seen.path
        if is_binary(data):
            raise WorkspaceError(f"{display} is a binary file ({len(data):,} bytes); not shown")
        with fs_errors(display):
            return data.decode("utf-8"), seen

    async def changed(self, seen: Collection[Seen]) -> dict[Seen, int | None]:
        """Which of ``seen`` no longer hold: each maps to the file's mtime now, or None when it
        is gone (the context engine's ``Probe``). One ``stat`` per path; a file whose size or
        mtime moved is hashed again, once per new stat (a ``touch`` is not a change)."""

        def check() -> dict[Seen, int | None]:
            out: dict[Seen, int | None] = {}
            stats: dict[str, os.stat_result | None] = {}
            for s in seen:
                if s.path not in stats:
                    try:
                        stats[s.path] = os.stat(self.root / unescape_name(s.path))
                    except OSError:
                        stats[s.path] = None
                st = stats[s.path]
                if st is None:
                    out[s] = None
                elif s.size < 0 or (st.st_size, st.st_mtime_ns) == (s.size, s.mtime_ns):
                    continue  # existence was all it saw, or the stat still holds
                elif self._digest(s.path, st) != s.digest:
                    out[s] = st.st_mtime_ns
            return out

        return await asyncio.to_thread(check)

    def _digest(self, rel: str, st: os.stat_result) -> str:
        """The digest of ``rel`` as it is at ``st``, hashed once per (size, mtime)."""
        key = (st.st_size, st.st_mtime_ns)
        known = self._digests.get(rel)
        if known is not None and known[0] == key:
            return known[1]
        if st.st_size > MAX_READ_BYTES or not stat.S_ISREG(st.st_mode):
            return ""  # never opened: a FIFO or device put in the file's place would block
        try:
            digest = content_digest((self.root / unescape_name(rel)).read_bytes())
        except OSError:
            digest = ""
        self._digests[rel] = (key, digest)
        return digest

    async def write_text(self, path: str, text: str) -> bool:
        """Write ``text`` exactly (no newline translation), creating parents, atomically: the
        bytes go to a temporary file beside the target, are synced to disk, get the target's
        mode, and are renamed over it. A write that fails (a full disk, a kill mid-write)
        leaves the old file whole, or no file where there was none, and says so.

        Returns whether the file existed before, so a tool can say "created" or "overwrote".
        """
        target = self.resolve(path)
        display = self.shown(target)
        if target == self.root:
            raise WorkspaceError("cannot write to the workspace root itself; name a file")

        def write() -> bool:
            with fs_errors(display):
                try:
                    before = target.stat()
                    refuse_special(display, before.st_mode)
                except FileNotFoundError:
                    before = None
                target.parent.mkdir(parents=True, exist_ok=True)
            try:
                replace_atomically(target, text.encode("utf-8"), before)
            except OSError as exc:
                kept = "its old content is intact" if before else "it was not created"
                why = exc.strerror or str(exc)
                raise WorkspaceError(f"could not write {display}: {why}; {kept}") from None
            return before is not None

        return await asyncio.to_thread(write)

    async def listing(self, path: str = ".") -> tuple[str, list[tuple[str, bool]]]:
        """The directory as ``relative`` shows it, and ``(name, is_dir)`` for each entry,
        sorted by name, each name as ``shown_name`` writes it (one resolve for both). Its first
        ``LISTED_ON_LOOP`` entries are read on the event loop (a small folder's whole listing is
        one system call, less than a hand-off to a thread and back); the rest in a thread."""
        target = self.resolve(path)
        display = self.shown(target)
        with fs_errors(display):
            try:
                listed = os.scandir(target)
            except NotADirectoryError:
                raise WorkspaceError(
                    f"{display} is a file, not a directory; use read_file"
                ) from None
            with listed as it:
                entries = _entries(it, LISTED_ON_LOOP)
                if len(entries) == LISTED_ON_LOOP:  # (there may be more)
                    entries += await asyncio.to_thread(_entries, it)
        return display, sorted(entries)

    # -- commands ----------------------------------------------------------------------------

    async def exec(
        self, argv: Sequence[str], timeout_s: float, *, sandbox: SandboxPlan | None = None
    ) -> ExecResult:
        """Run ``argv`` in the root with stdout and stderr merged, killing its tree on timeout;
        inside ``sandbox`` when one is given (``core.sandbox``: bubblewrap).

        The process gets no stdin (so a prompt cannot hang the run), its own session and a tag
        in its environment, so the timeout, a cancelled run, or stragglers it left behind (in
        its session or out of it) are all ended together.
        """
        if not argv or not argv[0]:
            raise WorkspaceError("argv must name a program as its first element")
        tag = uuid.uuid4().hex
        env = command_env(self.env_allow, tag)
        if sandbox is not None:
            if self.find_program(argv[0], env) is None:  # bwrap would say it less plainly
                raise WorkspaceError(f"command not found: {argv[0]}")
            argv = sandbox.wrap(argv)
        starting = asyncio.ensure_future(_start(argv, self.root, env))
        try:
            proc = await asyncio.shield(starting)
        except asyncio.CancelledError:
            # Let the start finish, then end the tree: asyncio's own cancel of a start kills
            # the process alone and waits for its pipe, which the rest of the tree holds
            # (bubblewrap killed in its first milliseconds leaves the sandboxed command).
            await asyncio.shield(_end_start(starting, tag))
            raise

        sink = _OutputSink()
        assert proc.stdout is not None
        reader = asyncio.create_task(sink.drain(proc.stdout))
        waiter = asyncio.create_task(_exited(proc))
        try:
            await asyncio.wait({waiter}, timeout=timeout_s)
            timed_out = not waiter.done()
            if not timed_out:
                # The pipe closes at exit unless a straggler inherited it; give those a moment.
                await asyncio.wait({reader}, timeout=STRAGGLER_GRACE_S)
        finally:
            # Also reached when the run is cancelled: never leave the tree running. Once all of
            # it is gone the pipe is closed, so the transport is finished before the loop is.
            await kill_tree(proc.pid, tag)
            await asyncio.wait({reader, waiter}, timeout=5)
            reader.cancel()
            waiter.cancel()
        return ExecResult(proc.returncode, sink.text(), timed_out)

    def find_program(self, name: str, env: dict[str, str] | None = None) -> Path | None:
        """The executable ``name`` starts from the root: a path as given, else the first on
        the commands' PATH (``env``'s; relative entries from the root, where commands run)."""
        env = command_env(self.env_allow) if env is None else env
        if "/" in name:
            path = Path(name) if Path(name).is_absolute() else self.root / name
            return path if path.is_file() and os.access(path, os.X_OK) else None
        for entry in env.get("PATH", os.defpath).split(os.pathsep):
            base = Path(entry or ".")
            candidate = (base if base.is_absolute() else self.root / base) / name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
        return None


async def _start(argv: Sequence[str], cwd: Path, env: dict[str, str]) -> asyncio.subprocess.Process:
    """``argv`` started in ``cwd`` with no stdin, stdout and stderr merged, in a session of its
    own; WorkspaceError when it cannot start."""
    try:
        return await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
    except FileNotFoundError:
        raise WorkspaceError(f"command not found: {argv[0]}") from None
    except PermissionError:
        raise WorkspaceError(f"not executable: {argv[0]}") from None
    except OSError as exc:
        raise WorkspaceError(f"could not start {argv[0]}: {exc.strerror or exc}") from None


async def _end_start(starting: asyncio.Future[asyncio.subprocess.Process], tag: str) -> None:
    """End what a cancelled ``exec`` was starting, once it has started (if it could)."""
    try:
        proc = await starting
    except WorkspaceError:
        return
    await kill_tree(proc.pid, tag)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), 5)  # the pipe closes with the tree: transport done


async def _exited(proc: asyncio.subprocess.Process) -> None:
    """Wait for the process itself to exit.

    ``proc.wait()`` is no use here: on Python 3.11 it also waits for the pipes to close, which a
    background grandchild holding stdout can postpone until the timeout.
    """
    while proc.returncode is None:  # noqa: ASYNC110 - nothing to wait on but the status
        await asyncio.sleep(EXIT_POLL_S)


async def kill_tree(pid: int | None, tag: str) -> None:
    """SIGKILL the session ``pid`` leads (when there is one: a command another program started
    has none of ours) and every process carrying ``tag`` in its environment, until a scan finds
    none left (a process forked between a scan and its kill is found by the next). Without
    ``/proc`` only the process group is killed."""
    for _ in range(KILL_ROUNDS):
        if pid is not None:
            _signal_group(pid)
        found = tagged_processes(tag)
        if not found:
            return
        for victim in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(victim, signal.SIGKILL)
        await asyncio.sleep(KILL_POLL_S)


def _signal_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def tagged_processes(tag: str) -> list[int]:
    """Live processes whose environment holds ``IO_TUI_EXEC_TAG=tag`` (a zombie's reads empty)."""
    needle = f"{EXEC_TAG_VAR}={tag}".encode()
    found = []
    try:
        pids = [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                environ = f.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            found.append(pid)
    return found


class _OutputSink:
    """Collects a stream whole, unless it is enormous: then head and tail with a marker."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65_536):
            self.add(chunk)

    def add(self, chunk: bytes) -> None:
        room = EXEC_KEEP_HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        excess = len(self.tail) - EXEC_KEEP_TAIL_BYTES
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def text(self) -> str:
        if not self.dropped:
            return bytes(self.head + self.tail).decode("utf-8", errors="replace")
        head = self.head.decode("utf-8", errors="replace")
        tail = self.tail.decode("utf-8", errors="replace")
        return f"{head}\n[… {self.dropped:,} bytes of output dropped here …]\n{tail}"
