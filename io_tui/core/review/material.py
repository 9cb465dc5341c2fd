"""What a reviewer is shown of one ask: the run's goal, the request as the operator's modal shows
it (a write as a diff against the file on disk, a command as its argv), and the run's recent
steps, read from the store and the workspace, redacted and bounded.

Read from the store rather than the live run, so an ask put again after a resume, in any
process, is shown the same way.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path

from io_tui.core.authority.approvals import ApprovalRequest
from io_tui.core.authority.policy import Act
from io_tui.core.boundary.untrusted import redact
from io_tui.core.store import Store
from io_tui.core.store.trace import ObservationRow, StepRow

MAX_SHOWN_CHARS = 6_000  # the request: past this the reviewer may not approve (guards.py)
MAX_STEPS_CHARS = 3_000  # the recent steps, newest kept
RECENT_STEPS = 3
MAX_FILE_BYTES = 1_000_000  # a file larger than this is not read for the diff
WRITE_TOOLS = frozenset({"write_file", "edit_file"})


@dataclass(frozen=True, slots=True)
class ReviewAsk:
    """One ask as the reviewer sees it. ``shown`` is the request (``shown_kind`` says what it
    is: ``diff``, ``argv`` or ``arguments``), whole unless ``shown_whole`` is False; ``steps``
    the run's recent steps as text (the agent's words, its calls, their results)."""

    request: ApprovalRequest
    goal: str
    shown: str
    shown_kind: str
    shown_whole: bool
    steps: str
    argv: tuple[str, ...] = ()  # an exec's argv, for the guards (empty for anything else)
    results: tuple[str, ...] = ()  # the recent steps' tool results, whole (for the guards)


async def gather(store: Store, request: ApprovalRequest) -> ReviewAsk:
    """The ask ``request`` as a reviewer is shown it, from the store and the workspace."""
    row = await store.runs.get(request.run_id)
    goal = row.goal if row is not None else ""
    kind, text, argv = await asyncio.to_thread(_shown, request)
    text = redact(text)
    whole = len(text) <= MAX_SHOWN_CHARS
    if not whole:
        cut = len(text) - MAX_SHOWN_CHARS
        text = text[:MAX_SHOWN_CHARS] + f"\n… ({cut:,} more characters not shown)"
    steps, results = await recent_steps(store, request.run_id)
    return ReviewAsk(request, goal, text, kind, whole, steps, argv, results)


def ask_of(
    request: ApprovalRequest,
    *,
    goal: str,
    old_text: str | None = None,
    steps: str = "",
    results: tuple[str, ...] = (),
) -> ReviewAsk:
    """An ask built without a store (the benchmark, tests): ``old_text`` is the file a write
    replaces (None: a new file), ``steps`` the recent steps as text, ``results`` the tool
    results among them."""
    kind, text, argv = _shown(request, old_text=old_text, read_file=False)
    text = redact(text)
    whole = len(text) <= MAX_SHOWN_CHARS
    return ReviewAsk(
        request, goal, text[:MAX_SHOWN_CHARS], kind, whole, redact(steps), argv, results
    )


def request_argv(request: ApprovalRequest) -> tuple[str, ...]:
    """An exec request's argv: its ``argv`` argument, else its JSON content; () if neither."""
    raw = request.arguments.get("argv")
    if isinstance(raw, list):
        return tuple(str(a) for a in raw)
    try:
        parsed = json.loads(request.content)
    except ValueError:
        return ()
    return tuple(str(a) for a in parsed) if isinstance(parsed, list) else ()


def _shown(
    request: ApprovalRequest, *, old_text: str | None = None, read_file: bool = True
) -> tuple[str, str, tuple[str, ...]]:
    """(kind, text, argv) of the request: a write's diff, a command's argv, else arguments."""
    if request.act is Act.WRITE and request.tool in WRITE_TOOLS:
        old = _current_text(request) if read_file else old_text
        return "diff", _diff(request.target, old, request.content), ()
    argv = request_argv(request) if request.act is Act.EXEC else ()
    if argv:
        lines = [f"argv: {json.dumps(list(argv), ensure_ascii=False)}"]
        lines.append(f"as a command line: {shlex.join(argv)}")
        extra = {k: v for k, v in request.arguments.items() if k != "argv"}
        if extra:
            lines.append(f"other arguments: {json.dumps(extra, ensure_ascii=False)}")
        return "argv", "\n".join(lines), argv
    arguments = json.dumps(request.arguments, ensure_ascii=False, indent=1)
    return "arguments", f"tool {request.tool}, arguments:\n{arguments}", ()


def _current_text(request: ApprovalRequest) -> str | None:
    """The file a write would replace (None: none yet, or not a regular file it can read)."""
    path = Path(request.workspace) / request.target
    try:
        info = path.lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _diff(target: str, old: str | None, new: str) -> str:
    if old is None:
        lines = new.splitlines()
        head = f"new file {target} ({len(lines)} lines):"
        return "\n".join([head, *(f"+{line}" for line in lines)])
    diff = list(
        difflib.unified_diff(
            old.splitlines(), new.splitlines(), f"a/{target}", f"b/{target}", lineterm="", n=3
        )
    )
    return "\n".join(diff) if diff else f"(no change to {target})"


async def recent_steps(
    store: Store, run_id: int, count: int = RECENT_STEPS
) -> tuple[str, tuple[str, ...]]:
    """The run's newest ``count`` steps as text, cut to ``MAX_STEPS_CHARS`` (newest kept), and
    their tool results whole."""
    rows = await store.trace.steps_after(run_id, 0, limit=count)
    if not rows:
        return "(no steps yet)", ()
    observations = await store.trace.observations(run_id, rows[0].step)
    return steps_text(rows, observations), tuple(o.text for o in observations)


def steps_text(rows: list[StepRow], observations: list[ObservationRow]) -> str:
    results = {(o.step, o.call_id): o for o in observations}
    blocks = []
    for row in rows:
        lines = [f"step {row.step}, the agent said: {_clip(row.text, 400) or '(nothing)'}"]
        for call in row.tool_calls:
            args = json.dumps(call.arguments, ensure_ascii=False)
            lines.append(f"  call {call.name} {_clip(args, 300)}")
            result = results.get((row.step, call.id))
            if result is not None:
                lines.append(f"  result: {_clip(result.text, 600)}")
        blocks.append("\n".join(lines))
    text = redact("\n".join(blocks))
    if len(text) > MAX_STEPS_CHARS:
        text = "… (earlier text not shown)\n" + text[-MAX_STEPS_CHARS:]
    return text


def _clip(text: str, limit: int) -> str:
    text = text.strip()
    return text if len(text) <= limit else text[:limit] + f" … (+{len(text) - limit:,} chars)"
