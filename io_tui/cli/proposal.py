"""What an approval request proposes, as a terminal shows it: a write or an edit as a unified
diff against the file as it is now, cut around its changes with the count of lines left out; a
command as its shell-quoted argv and where it runs; an MCP call's arguments as JSON.

``io-tui run --approve ask``, ``io-tui decide`` and ``io-tui approvals`` show a request through
``proposal_text``, and ``show`` writes it: coloured on a terminal (pygments' diff lexer), plain
when piped or under ``NO_COLOR``, and through a pager (``$PAGER``, else ``less``) when it is
longer than the terminal. The diff is difflib's unified diff; only the "⋯ N unchanged lines"
between its hunks are added, read off the hunk headers. Text from the run (file contents,
arguments) has its control characters made visible, so nothing it holds can drive the terminal.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import TextIO

from io_tui.cli.common import counted
from io_tui.core import Act, ApprovalRequest, is_elicitation

MAX_DIFF_FILE_BYTES = 2_000_000
CONTEXT_LINES = 3

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F)}
_CONTROL.update({c: f"\\x{c:02x}" for c in range(0x80, 0xA0)})


def visible(text: str) -> str:
    """``text`` with its control characters (escape sequences, carriage returns…) spelled out,
    tabs and newlines kept: what a run wrote can be read, never obeyed, by the terminal."""
    return text.translate(_CONTROL)


@dataclass(frozen=True, slots=True)
class Proposal:
    """A request as text: ``summary`` (one line: what changes, how much) and ``body`` (the diff,
    the command, the arguments), ``diff`` when the body is a unified diff."""

    summary: str
    body: str
    diff: bool = False


def is_file_write(request: ApprovalRequest) -> bool:
    return request.act is Act.WRITE and request.tool in ("write_file", "edit_file")


def current_file(request: ApprovalRequest) -> tuple[str | None, bool]:
    """The file a write would change, as it is now (None when it cannot be shown), and whether
    it exists. Read through the workspace's containment; blocking."""
    from io_tui.core import Workspace, WorkspaceError  # only a write's review reads a file

    try:
        workspace = Workspace(request.workspace)
    except WorkspaceError:  # the workspace is gone
        return None, False
    text = workspace.current_text(request.target, max_bytes=MAX_DIFF_FILE_BYTES)
    if text is not None:
        return text, True
    try:
        return None, workspace.resolve(request.target).exists()
    except (WorkspaceError, OSError):
        return None, False


def proposal(request: ApprovalRequest) -> Proposal:
    """What ``request`` would do, shown against the workspace as it is now. Blocking (it reads
    the file a write changes)."""
    if is_file_write(request):
        old, exists = current_file(request)
        return write_proposal(request.target, old, request.content, exists=exists)
    if is_elicitation(request):
        return Proposal(
            "a form to fill in (approve fills it, deny declines)", visible(request.content)
        )
    if request.tool.startswith("mcp__"):
        return Proposal(f"MCP tool {request.tool}", _json(request.arguments))
    if request.act is Act.EXEC:
        return Proposal(f"runs in {visible(request.workspace)}", _command(request))
    return Proposal(f"{request.tool} arguments", _json(request.arguments))


def write_proposal(path: str, old: str | None, new: str, *, exists: bool = False) -> Proposal:
    """A write of ``new`` over ``old`` (None: a new file, or one that ``exists`` but cannot be
    shown) as a diff cut around its changes."""
    lines = new.splitlines()
    if old is None and exists:
        return Proposal(
            f"{path} — replaces a file too large or not text to show, with {_count(len(lines))}",
            visible(new),
        )
    if old is None:
        return Proposal(f"{path} — new file, {_count(len(lines))}", cut_diff("", new, path), True)
    if old == new:
        return Proposal(f"{path} — no change: the content is the file's as it is", "")
    added, removed = _stats(old, new)
    return Proposal(
        f"{path} — against the current file · +{added} −{removed}", cut_diff(old, new, path), True
    )


def cut_diff(old: str, new: str, path: str, context: int = CONTEXT_LINES) -> str:
    """difflib's unified diff of ``old`` → ``new`` with ``context`` lines around each change,
    and between, before and after its hunks a line counting the unchanged lines left out."""
    total = len(old.splitlines())
    out: list[str] = []
    shown_to = 0  # the old file's lines shown or passed so far
    for line in difflib.unified_diff(
        old.splitlines(), new.splitlines(), f"a/{path}", f"b/{path}", lineterm="", n=context
    ):
        hunk = _HUNK.match(line)
        if hunk:
            start, length = int(hunk.group(1)), int(hunk.group(2) or 1)
            first = start - 1 if length else start  # a hunk of no old lines starts after it
            out.extend(_left_out(first - shown_to))
            shown_to = first + length
        out.append(visible(line))
    if out:
        out.extend(_left_out(total - shown_to))
    return "\n".join(out)


def _left_out(count: int) -> list[str]:
    return [f"⋯ {_count(count, 'unchanged line')}"] if count > 0 else []


def _stats(old: str, new: str) -> tuple[int, int]:
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
    return added, removed


def _count(n: int, noun: str = "line") -> str:
    return counted(n, noun)


def _command(request: ApprovalRequest) -> str:
    """``$ git status --short`` (the argv shell-quoted), with its timeout when set."""
    raw = request.arguments.get("argv")
    if not isinstance(raw, list):
        try:
            raw = json.loads(request.content or "[]")
        except ValueError:
            raw = [request.target]
    argv = [str(a) for a in raw] if isinstance(raw, list) else [request.target]
    line = f"$ {visible(shlex.join(argv))}"
    timeout = request.arguments.get("timeout_s")
    if isinstance(timeout, int | float):
        line += f"\n  (timeout {timeout:g}s)"
    return line


def _json(value: object) -> str:
    return visible(json.dumps(value, indent=2, ensure_ascii=False))


# -- to the terminal --


def colour_on(out: TextIO) -> bool:
    """Colour for a terminal, none for a pipe or a file, or under ``NO_COLOR`` / ``TERM=dumb``."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(out, "isatty", lambda: False)())


def coloured(text: str) -> str:
    """A unified diff in a terminal's colours: additions green, removals red, hunks cyan."""
    from pygments import highlight
    from pygments.formatters import TerminalFormatter
    from pygments.lexers import DiffLexer

    return highlight(text, DiffLexer(), TerminalFormatter()).rstrip("\n")


def render(proposal: Proposal, out: TextIO) -> str:
    """The proposal's body as ``out`` shows it: coloured on a terminal, plain otherwise."""
    if proposal.diff and proposal.body and colour_on(out):
        return coloured(proposal.body)
    return proposal.body


def show(text: str, out: TextIO) -> None:
    """Write ``text`` to ``out``: through a pager when ``out`` is a terminal (and stdin one, to
    page with) and ``text`` is taller than it; else as it is."""
    lines = text.count("\n") + 1
    if _interactive(out) and lines > shutil.get_terminal_size().lines - 3 and _page(text, out):
        return
    out.write(text + "\n")
    out.flush()


def _interactive(out: TextIO) -> bool:
    try:
        return out.isatty() and sys.stdin.isatty()
    except (AttributeError, ValueError):
        return False


def _page(text: str, out: TextIO) -> bool:
    """``$PAGER`` (else ``less``; ``LESS=FRX`` when unset, as git sets it: colours kept, one
    screen not paged, the text left on screen). False when no pager could be started."""
    command = shlex.split(os.environ.get("PAGER") or "less")
    if not command:
        return False
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    out.flush()
    try:
        subprocess.run(command, input=text + "\n", text=True, stdout=out.fileno(), env=env)
    except (OSError, ValueError):
        return False
    return True
