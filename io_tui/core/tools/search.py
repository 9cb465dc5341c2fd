"""Search tools: find (glob over paths) and grep (regex over file contents) (DESIGN §3.7).

Neither is gated by the policy, so both stay inside the workspace on their own: symlinks that lead
out are skipped, and grep only opens files the policy lets the run read without asking (it looks
for the run's policy in ``ctx.policy`` and falls back to the defaults, whose
``builtin-secrets`` layer keeps ``.env`` and keys out of grep results).

Both cap their hits with a visible marker saying how many more there were, so a broad pattern is
answered with "narrow it" rather than a flood that crowds out the rest of the context.

grep never hangs: its pattern is bounded in size and run by the ``regex`` engine with a timeout
(a catastrophic pattern costs at most a second per file and ten per call, then says so), and only
regular files are opened (a FIFO would block until written to).

A file over ``MAX_GREP_FILE_BYTES`` is searched by streaming it a chunk at a time, a line longer
than ``MAX_STREAM_LINE_BYTES`` in pieces of that size; a hit in a long line is shown as a window
around the match with its byte offset (``read_file`` reads there). What grep did not search, and
why, ends its answer: nothing is passed over silently.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import BinaryIO, NamedTuple

import regex
from pydantic import Field

from io_tui.core.authority.policy import Act, Effect, Policy
from io_tui.core.boundary.safe_text import shown_name
from io_tui.core.boundary.workspace import (
    BINARY_SNIFF_BYTES,
    Workspace,
    is_binary,
    open_regular,
    refuse_special,
)
from io_tui.core.errors import WorkspaceError
from io_tui.core.ledger import ObsKind, Seen, content_digest
from io_tui.core.tools.base import Tool, ToolArgs, ToolContext, ToolError, ToolOutcome

SKIP_DIRS = frozenset({".git", ".venv", "node_modules", "__pycache__"})
MAX_FIND_HITS = 200
MAX_GREP_HITS = 100
MAX_GREP_LINE_CHARS = 300
MAX_GREP_FILE_BYTES = 4 * 1024 * 1024  # larger files are streamed
MAX_STREAM_LINE_BYTES = 1024 * 1024  # a longer line is searched in pieces of this size
STREAM_CHUNK_BYTES = 1024 * 1024
HIT_CONTEXT_CHARS = 100  # shown before a match in a line too long to show whole
MAX_GREP_PATTERN_CHARS = 1_000
GREP_FILE_TIMEOUT_S = 1.0  # the regex's time on one file
GREP_CALL_TIMEOUT_S = 10.0  # and on all of them
_REGEX_META = frozenset(".^$*+?{}[]\\|()")


def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a path glob: ``*`` and ``?`` stay within one segment, ``**`` spans segments.

    ``**/`` also matches zero directories, so ``src/**/*.py`` finds ``src/a.py``.
    """
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (close := pattern.find("]", i + 2)) != -1:
            body = pattern[i + 1 : close]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = close + 1
        else:
            out.append(re.escape(c))
            i += 1
    try:
        return re.compile("".join(out) + r"\Z")
    except re.error as exc:
        raise ToolError(f"invalid glob {pattern!r}: {exc}") from None


@dataclass(frozen=True, slots=True)
class PathGlob:
    """A glob over workspace-relative paths; a pattern without '/' matches basenames anywhere."""

    pattern: str
    regex: re.Pattern[str] = field(init=False)
    basename_only: bool = field(init=False)

    def __post_init__(self) -> None:
        cleaned = self.pattern.removeprefix("./")
        if not cleaned:
            raise ToolError("empty glob pattern")
        if cleaned.startswith("/") or ".." in PurePosixPath(cleaned).parts:
            raise ToolError(
                f"glob {self.pattern!r} must be relative to the workspace, without '..'"
            )
        object.__setattr__(self, "regex", glob_regex(cleaned))
        object.__setattr__(self, "basename_only", "/" not in cleaned)

    def matches(self, rel: str) -> bool:
        subject = rel.rsplit("/", 1)[-1] if self.basename_only else rel
        return self.regex.match(subject) is not None


class Entry(NamedTuple):
    rel: str  # workspace-relative, POSIX, as ``shown_name`` writes it
    path: str  # absolute, as walked (not resolved)
    is_dir: bool
    is_link: bool


def walk(ws: Workspace, start: Path) -> Iterator[Entry]:
    """Every entry under ``start``, depth-first in sorted order, never leaving the workspace.

    Symlinked directories are listed but not descended, and symlinks whose target lies outside
    the workspace are not reported at all. ``os.scandir`` gives the link bit without a stat,
    which keeps a walk of a large tree cheap.
    """
    base = shown_name(start.relative_to(ws.root).as_posix())
    stack = [(str(start), "" if base == "." else base + "/")]
    while stack:
        dirpath, prefix = stack.pop()
        try:
            with os.scandir(dirpath) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for e in entries:
            is_link = e.is_symlink()
            if is_link and not ws.contains(e.path):
                continue
            try:
                is_dir = e.is_dir()
            except OSError:
                is_dir = False
            if is_dir and e.name in SKIP_DIRS:
                continue
            rel = prefix + shown_name(e.name)
            yield Entry(rel, e.path, is_dir, is_link)
            if is_dir and not is_link:
                subdirs.append((e.path, rel + "/"))
        stack.extend(reversed(subdirs))


def marker(more: int, noun: str, advice: str) -> str:
    return f"… {more:,} more {noun}; {advice}"


class FindArgs(ToolArgs):
    pattern: str = Field(
        description="Glob over workspace-relative paths, e.g. '**/*.py', 'src/*.ts', 'README*'. "
        "A pattern without '/' matches file names at any depth. '**' spans directories."
    )


class Find(Tool):
    changes_files = False
    only_reads = True
    name = "find"
    description = (
        "Find files and directories whose path matches a glob (skips .git, .venv, node_modules, "
        "__pycache__). Directories end with '/'."
    )
    Args = FindArgs

    async def run(self, args: FindArgs, ctx: ToolContext) -> ToolOutcome:
        glob = PathGlob(args.pattern)
        ws = ctx.workspace

        def scan() -> list[str]:
            matched = (e for e in walk(ws, ws.root) if glob.matches(e.rel))
            return sorted(e.rel + "/" if e.is_dir else e.rel for e in matched)

        hits = await asyncio.to_thread(scan)
        shown = hits[:MAX_FIND_HITS]
        lines = list(shown) or [f"no paths match {args.pattern!r}"]
        if len(hits) > len(shown):
            lines.append(marker(len(hits) - len(shown), "matches", "narrow the pattern"))
        seen = tuple(Seen(hit.rstrip("/"), -1, -1) for hit in shown)  # they exist
        return ToolOutcome(
            "\n".join(lines), ObsKind.FIND, args.pattern, data={"hits": len(hits)}, seen=seen
        )


class GrepArgs(ToolArgs):
    pattern: str = Field(
        min_length=1,
        max_length=MAX_GREP_PATTERN_CHARS,
        description="Python regular expression searched line by line, e.g. 'def parse\\(' or "
        "'(?i)todo'.",
    )
    path: str | None = Field(
        default=None, description="File or directory to search, relative to the workspace root."
    )
    glob: str | None = Field(
        default=None, description="Only search files whose path matches this glob, e.g. '*.py'."
    )


@dataclass
class _GrepResult:
    hits: list[str] = field(default_factory=list)
    total: int = 0
    files: int = 0
    policy_skipped: int = 0
    binary_skipped: int = 0  # the tool's description says binary files are skipped
    streamed: int = 0  # files over MAX_GREP_FILE_BYTES, searched a chunk at a time
    pieces: int = 0  # lines over MAX_STREAM_LINE_BYTES, searched in pieces
    special_skipped: int = 0  # FIFOs, sockets, devices: never opened
    slow_skipped: int = 0  # the regex ran out of time on them
    unsearched: int = 0  # the call's time ran out before them
    seen: list[Seen] = field(default_factory=list)  # every file searched, with or without hits


class Grep(Tool):
    changes_files = False
    only_reads = True
    name = "grep"
    description = (
        "Search file contents with a Python regex; answers 'path:line:text'. Narrow with path "
        "(a file or directory) and glob. Skips binary files and .git, .venv, node_modules, "
        "__pycache__."
    )
    Args = GrepArgs

    async def run(self, args: GrepArgs, ctx: ToolContext) -> ToolOutcome:
        try:
            compiled = regex.compile(args.pattern)
        except (regex.error, RecursionError, OverflowError) as exc:
            raise ToolError(f"invalid regex {args.pattern!r}: {exc}") from None
        glob = PathGlob(args.glob) if args.glob else None
        ws = ctx.workspace
        start = ws.resolve(args.path or ".")
        scope = ws.relative(start)
        policy = ctx.policy or Policy()
        if start.is_file():
            verdict = policy.explain(Act.READ, scope)
            if verdict.effect is not Effect.ALLOW:
                raise ToolError(f"grep cannot read {scope}: {verdict.explain()}")
            if args.path and args.path != scope:
                named = policy.explain(Act.READ, args.path.removeprefix("./"))
                if named.effect is not Effect.ALLOW:
                    raise ToolError(f"grep cannot read {args.path}: {named.explain()}")
        elif not start.exists():
            raise ToolError(f"{scope}: no such file or directory")
        elif not start.is_dir():
            refuse_special(scope, start.stat().st_mode)

        result = await asyncio.to_thread(_scan, ws, start, compiled, glob, policy)
        span = " ".join(
            part
            for part in (f"in {scope}" if scope != "." else "", f"glob {args.glob}" if glob else "")
            if part
        )
        return ToolOutcome(
            _render(result, args.pattern, scope),
            ObsKind.GREP,
            args.pattern,
            span=span,
            data={"hits": result.total, "files": result.files},
            seen=tuple(result.seen),
        )


def _scan(
    ws: Workspace, start: Path, compiled: regex.Pattern[str], glob: PathGlob | None, policy: Policy
) -> _GrepResult:
    result = _GrepResult()
    deadline = time.monotonic() + GREP_CALL_TIMEOUT_S
    # A pattern without metacharacters can only match a line of a file that contains it.
    pattern = compiled.pattern
    literal = None if any(c in _REGEX_META for c in pattern) else pattern
    if start.is_file():  # already resolved, so never a link
        files: Iterable[Entry] = [Entry(ws.relative(start), str(start), False, False)]
    else:
        files = (e for e in walk(ws, start) if not e.is_dir)
    for entry in files:
        if glob is not None and not glob.matches(entry.rel):
            continue
        now = time.monotonic()
        if now >= deadline:
            result.unsearched += 1
            continue
        if not _readable(ws, entry, policy):
            result.policy_skipped += 1
            continue
        read = _read_for_grep(entry, result)
        if read is None:
            continue
        if isinstance(read, _Streamed):
            if not _stream(entry, read, compiled, literal, deadline, result):
                result.unsearched += 1
            continue
        text, seen = read
        if literal is not None and literal not in text:
            result.seen.append(seen)
            continue
        lines = text.splitlines()
        matched = _matching(compiled, lines, min(now + GREP_FILE_TIMEOUT_S, deadline))
        if matched is None:
            result.slow_skipped += 1
            continue
        # every file searched: a change to one can change the hits, shown or counted in
        # "… N more hits", including those of a file that had none
        result.seen.append(seen)
        result.total += len(matched)
        result.files += bool(matched)
        shown = matched[: MAX_GREP_HITS - len(result.hits)]
        for i, at in shown:
            result.hits.append(f"{entry.rel}:{i + 1}:{_hit_text(lines[i], at)}")
    return result


def _hit_text(line: str, at: int, base: int | None = None) -> str:
    """A hit's line, or for a long one a window from a little before the match (at ``at``),
    headed by where the window starts: its column, or for a streamed file (``base``: the byte
    the text starts at) its byte in the file, where ``read_file``'s ``byte_offset`` reads."""
    if len(line) <= MAX_GREP_LINE_CHARS:
        return line
    start = max(0, at - HIT_CONTEXT_CHARS)
    window = line[start : start + MAX_GREP_LINE_CHARS]
    if base is None:
        if start == 0:
            return window + "…"
        where = f"[col {start + 1:,}] "
    else:
        where = f"[byte {base + len(line[:start].encode('utf-8')):,}] "
    return where + ("…" if start else "") + window + "…"


@dataclass(frozen=True, slots=True)
class _Streamed:
    """A file too large to read whole: searched as it is read (``_stream``)."""

    handle: BinaryIO
    size: int
    mtime_ns: int


def _stream(
    entry: Entry,
    opened: _Streamed,
    compiled: regex.Pattern[str],
    literal: str | None,
    deadline: float,
    result: _GrepResult,
) -> bool:
    """Search a large file a chunk at a time, lines over ``MAX_STREAM_LINE_BYTES`` in pieces;
    False when the call's time ran out before its end."""
    digest = hashlib.blake2b(digest_size=12)
    matched = 0
    line_no, line_byte = 1, 0  # the line being assembled and the byte it starts at
    carry = b""
    split = False
    with opened.handle as f:
        while True:
            chunk = f.read(STREAM_CHUNK_BYTES)
            digest.update(chunk)
            data = carry + chunk
            parts = data.split(b"\n")
            carry = parts.pop() if chunk else b""
            if not chunk and data:
                parts = parts or [data]
            for part in parts:
                matched += _search_piece(
                    entry, part, line_no, line_byte, compiled, literal, deadline, result
                )
                line_byte += len(part) + 1
                line_no += 1
                split = False
            while len(carry) > MAX_STREAM_LINE_BYTES:  # a line too long: search it in pieces
                piece, carry = carry[:MAX_STREAM_LINE_BYTES], carry[MAX_STREAM_LINE_BYTES:]
                matched += _search_piece(
                    entry, piece, line_no, line_byte, compiled, literal, deadline, result
                )
                line_byte += len(piece)
                if not split:
                    result.pieces += 1
                    split = True
            if time.monotonic() >= deadline:
                return False
            if not chunk:
                break
    result.streamed += 1
    result.files += bool(matched)
    result.seen.append(Seen(entry.rel, opened.size, opened.mtime_ns, digest.hexdigest()))
    return True


def _search_piece(
    entry: Entry,
    piece: bytes,
    line_no: int,
    line_byte: int,
    compiled: regex.Pattern[str],
    literal: str | None,
    deadline: float,
    result: _GrepResult,
) -> int:
    """Search one line (or piece of one) of a streamed file; the number of hits (0 or 1)."""
    text = piece.decode("utf-8", errors="replace")
    if literal is not None and literal not in text:
        return 0
    try:
        found = compiled.search(text, timeout=max(0.001, deadline - time.monotonic()))
    except TimeoutError:
        return 0
    if found is None:
        return 0
    result.total += 1
    if len(result.hits) < MAX_GREP_HITS:
        result.hits.append(f"{entry.rel}:{line_no}:{_hit_text(text, found.start(), line_byte)}")
    return 1


def _matching(
    compiled: regex.Pattern[str], lines: list[str], deadline: float
) -> list[tuple[int, int]] | None:
    """The lines ``compiled`` matches (index, where the match starts), or None when it runs
    past ``deadline``."""
    search, clock = compiled.search, time.monotonic
    matched = []
    try:
        for i, line in enumerate(lines):
            left = deadline - clock()
            if left <= 0:
                return None
            if found := search(line, timeout=left):
                matched.append((i, found.start()))
    except TimeoutError:
        return None
    return matched


def _readable(ws: Workspace, entry: Entry, policy: Policy) -> bool:
    """Whether the policy allows reading the file outright: checked on its name and, for a
    symlink, on what it really is (a link called notes.txt may point at .env)."""
    names = {entry.rel, ws.relative(entry.path)} if entry.is_link else {entry.rel}
    return all(policy.explain(Act.READ, name).effect is Effect.ALLOW for name in names)


def _read_for_grep(entry: Entry, result: _GrepResult) -> tuple[str, Seen] | _Streamed | None:
    """The file's text and what it was; a large file opened to be streamed; or None for files
    grep passes over (binary, unreadable)."""
    try:
        f = os.fdopen(open_regular(entry.path, entry.rel), "rb")
    except WorkspaceError:
        result.special_skipped += 1
        return None
    except OSError:
        return None
    try:
        st = os.fstat(f.fileno())
        head = f.read(BINARY_SNIFF_BYTES)
        if is_binary(head):
            result.binary_skipped += 1
            f.close()
            return None
        if st.st_size > MAX_GREP_FILE_BYTES:
            f.seek(0)
            return _Streamed(f, st.st_size, st.st_mtime_ns)  # closed by ``_stream``
        with f:
            data = head + f.read()
    except OSError:
        f.close()
        return None
    seen = Seen(entry.rel, len(data), st.st_mtime_ns, content_digest(data))
    return data.decode("utf-8", errors="replace"), seen


def _render(result: _GrepResult, pattern: str, scope: str) -> str:
    lines = result.hits or [f"no matches for /{pattern}/ in {scope}"]
    more = result.total - len(result.hits)
    if more:
        lines.append(marker(more, "hits", "narrow the pattern or path"))
    if result.policy_skipped:
        lines.append(
            f"({result.policy_skipped} file(s) skipped: the policy does not allow reading them)"
        )
    if result.streamed:
        lines.append(
            f"({result.streamed} file(s) over {MAX_GREP_FILE_BYTES // 1_048_576} MiB searched by "
            "streaming: one hit per line, shown as a window around the match)"
        )
    if result.pieces:
        lines.append(
            f"({result.pieces} line(s) over {MAX_STREAM_LINE_BYTES // 1_048_576} MiB searched in "
            f"{MAX_STREAM_LINE_BYTES // 1_048_576} MiB pieces: a match across a piece's edge is "
            "missed; read_file with byte_offset reads around a hit)"
        )

    if result.special_skipped:
        lines.append(
            f"({result.special_skipped} file(s) skipped: not regular files (FIFOs, sockets, "
            "devices))"
        )
    if result.slow_skipped:
        lines.append(
            f"({result.slow_skipped} file(s) skipped: the pattern took over "
            f"{GREP_FILE_TIMEOUT_S:g}s on each; simplify it (nested quantifiers backtrack))"
        )
    if result.unsearched:
        lines.append(
            f"({result.unsearched} file(s) not searched: the call's {GREP_CALL_TIMEOUT_S:g}s ran "
            "out; narrow the path or glob)"
        )
    return "\n".join(lines)
