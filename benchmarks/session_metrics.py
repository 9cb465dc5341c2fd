"""What the real-session benchmark measures in one request: copies, stale ones, recall, the oracle.

``real_sessions.py``'s docstring defines each figure; this module holds how a request's
messages are read for them: each tool result taken back to the text it stands for (a
difference or a pointer applied to the result it names), the file lines it copies, the lines
an action uses, and the oracle's live content, all against the workspace as a recorded tree
held it.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from session_convert import bre_to_python
from session_replay import Files

from io_tui.core.context.stubs import (
    apply_echo,
    apply_edit,
    correction_against,
    edited_by,
    named_also,
)
from io_tui.core.ledger import StepRecord
from io_tui.core.providers.messages import Message, ToolCall
from io_tui.core.text.numbered import number_lines

PROBE_CHARS = 8  # a used line shorter than this (stripped) says too little to look for

# -- what a request carries of the files --------------------------------------------------------

FRAME = re.compile(r"^\[untrusted data from [^\n]*\]\n?", re.M)
REREAD = re.compile(r"^\[step \d+'s \w+ re-(?:read|run) now: [^\n]*\]\n")
ECHO = re.compile(
    r"^\[step \d+ \w+ [^\n]*?(?:step (\d+)'s result above|in step (\d+)'s read above"
    r"|the same result as step (\d+)'s, above)"
)
STUB = re.compile(r"^\[step \d+ \w+ ")
NUMBERED = re.compile(r"^ *(\d+)│(.*)$")
HIT = re.compile(r"^([^\s:][^:]*):(\d+):(.*)$")


def message_of(data: dict[str, Any]) -> Message:
    calls = tuple(
        ToolCall(str(c.get("id", "")), str(c.get("name", "")), c.get("arguments") or {})
        for c in data.get("tool_calls") or ()
    )
    return Message(data["role"], data.get("content", ""), calls, data.get("tool_call_id"))


@dataclass(frozen=True)
class Copy:
    """Lines of one file a tool result shows: line number → text; the result it came from
    (``origin``: the step and kind of call, a correction's the step it was placed at) and, for
    a correction, the result it names as out of date (``corrects``). A read also shows which
    of the lines it asked for the file does not have (``absent``: from the line after the
    file's last, as its range trailer counts them, to the last it asked for): a read of lines
    410-443 answered ``(lines 410-440 of 440)`` shows that lines 441-443 are gone."""

    path: str
    lines: dict[int, str]
    origin: tuple[int, str] | None = None
    corrects: tuple[tuple[int, str], ...] = ()
    absent: range = range(0)


@dataclass
class Result:
    """One tool result of a request as the text it stands for (``results``)."""

    call: ToolCall | None
    text: str
    origin: tuple[int, str] | None = None
    corrects: tuple[tuple[int, str], ...] = ()


KINDS = {"read_file": "read", "grep": "grep", "find": "find", "list_dir": "list"}


def results(messages: Sequence[Message]) -> list[Result]:
    """Each tool result with its call and the text it stands for: a difference or a pointer
    taken back to the lines it names (``apply_echo``), the re-read line and the untrusted-data
    frame taken off, a stub (which shows nothing) empty. A correction (a user message at a
    step's boundary: the same call made again after its result went out of date) is a result
    too, under the call it makes again, naming the result it corrects; its own origin is the
    step whose turn follows it."""
    calls = {c.id: c for m in messages for c in m.tool_calls}
    edits = {step_of(c.id) or 0: c for c in calls.values() if c.name == "edit_file"}
    by_step: dict[Any, str] = {}  # by step, and by (step, target)
    fixes: dict[int, dict[str, str]] = {}  # each step's corrections by target, as they stand for
    waiting: dict[str, str] = {}  # corrections not yet placed at their step (its turn is next)
    unplaced: list[Result] = []
    out: list[Result] = []
    for m in messages:
        if m.role == "assistant" and m.tool_calls:
            step = step_of(m.tool_calls[0].id)
            if step is not None:
                if waiting:
                    fixes[step] = waiting
                for r in unplaced:
                    r.origin = (step, KINDS.get(r.call.name, "") if r.call else "")
            waiting, unplaced = {}, []
        if m.role == "user" and m.content.startswith("[correction of step "):
            call, text, corrects = _correction(m.content, by_step, fixes, edits)
            if call is not None:
                target = str(next(iter(call.arguments.values())))
                waiting[target] = waiting[_keyed(target, _span_of(text))] = text
                asked = call.arguments.get("offset"), call.arguments.get("limit")
                if asked[0] is not None and asked[1] is not None:  # the lines its head names
                    waiting[_named(target, (asked[0], asked[0] + asked[1] - 1))] = text
            body = text.partition("\n")[2]
            unplaced.append(Result(call, FRAME.sub("", body, count=1), None, corrects))
            out.append(unplaced[-1])
            continue
        if m.role != "tool":
            continue
        call = calls.get(m.tool_call_id or "")
        text = REREAD.sub("", m.content)
        fixed = ECHO_FIX.match(text)
        echo = ECHO.match(text)
        if fixed:
            base = fixes.get(int(fixed[2]), {}).get(fixed[1])
            text = apply_echo(base, text) if base is not None else ""
        elif echo:
            base = by_step.get(int(next(g for g in echo.groups() if g)))
            text = apply_echo(base, text) if base is not None else ""
        elif STUB.match(text):
            text = ""
        step = step_of(m.tool_call_id)
        if step is not None and text:
            by_step[step] = text
            if call is not None and call.arguments:  # whose copy it is, to look it up by
                by_step[step, str(next(iter(call.arguments.values())))] = text
        origin = (step, KINDS.get(call.name, "")) if step is not None and call else None
        out.append(Result(call, FRAME.sub("", text, count=1), origin))
    return out


FIX_HEAD = re.compile(r"^\[correction of step (\d+)'s (\w+) of (.+?)(?: \(lines (\d+)-(\d+)\))?: ")
FIX_BASE = re.compile(
    r"; step (\d+)'s copy above (?:is out of date in these lines|shows its lines unchanged"
    r"|shows the current hits, renumbered)"
)
ECHO_FIX = re.compile(
    r"^\[step \d+ \w+ (.+?)(?: \(lines \d+-\d+\))?: [^\n]*?the correction at step (\d+) above"
)
TOOLS = {kind: tool for tool, kind in KINDS.items()}
WRITTEN = re.compile(r"; out of date above: (.*?); step \d+'s write_file call above holds ")
GREP_SPAN = re.compile(r" \((?:in|glob) [^\n]*\)$")
MOVED_TO = re.compile(r"numbered now (\d+)-(\d+) of \d+\]$")
NAMED = re.compile(r"step (\d+)'s (\w+)")


def _correction(
    content: str,
    by_step: dict[Any, str],
    fixes: dict[int, dict[str, str]],
    calls: dict[int, ToolCall],
) -> tuple[ToolCall | None, str, tuple[tuple[int, str], ...]]:
    """A correction's call (the one it makes again), its whole text (its first line, then the
    result; a difference from, or a renumbering of, the copy above taken back to the whole),
    and the results it names as out of date (their steps and kinds: a correction pointing to a
    whole write names every copy that write put out of date)."""
    head = FIX_HEAD.match(content)
    if head is None:
        return None, "", ()
    step, kind, target, first, last = head.groups()
    if kind == "grep":  # named with where it searched ("PATTERN (in PATH)"), kept by its pattern
        target = GREP_SPAN.sub("", target)
    key = _keyed(target, (int(first), int(last)) if first is not None else None)
    base_at = FIX_BASE.search(content.partition("\n")[0])
    text = content
    if base_at is not None:  # the copy named: a correction placed at that step, or its result
        moved = MOVED_TO.search(content.partition("\n")[0])
        count = int(moved[2]) - int(moved[1]) + 1 if moved else None
        base = _base(int(base_at[1]), key, target, by_step, fixes, count, content)
        text = _whole(content, base)
    arguments: dict[str, Any] = {"pattern": target} if kind == "grep" else {"path": target}
    if first is not None:
        arguments |= {"offset": int(first), "limit": int(last) - int(first) + 1}
    edited = edited_by(content)
    if edited is not None:  # the copy above with the agent's edit applied, numbered from first
        writer, top, _ = edited
        base = _base(int(step), key, target, by_step, fixes) or ""
        text = _edited(base, calls.get(writer), top)
    named = WRITTEN.search(content.partition("\n")[0])
    corrects = [(int(step), kind)]
    corrects += named_also(content.partition("\n")[0])  # earlier copies out of date with it
    if named:
        corrects += [(int(n), k) for n, k in NAMED.findall(named[1])]
        text = ""  # it shows nothing of the file: the write's call does
    return ToolCall("", TOOLS.get(kind, kind), arguments), text, tuple(corrects)


def _base(
    step: int,
    key: str,
    target: str,
    by_step: dict[Any, str],
    fixes: dict[int, dict[str, str]],
    lines: int | None = None,
    content: str = "",
) -> str | None:
    """The copy of ``target`` a correction names as step ``step``'s: a correction placed at
    that step of those lines, else that step's own result, else a correction of the target
    placed there; with ``lines`` (a renumbering names how many), the one showing that many;
    for a correction sent as a difference (``content``), the one it is the difference from
    when that step placed several of the file (ranges of it): taken back to the whole and
    diffed again against it, it gives the difference as sent."""
    placed = fixes.get(step, {})
    found = [placed.get(_NAMED_PREFIX + key), placed.get(key), by_step.get((step, target))]
    found += [text for k, text in placed.items() if k.startswith(target)]
    found = [text for text in found if text]
    if lines is not None:
        found = [t for t in found if len(list(_numbered(t))) == lines] or found
    if content and len(found) > 1 and DIFF_FIX.search(content.partition("\n")[0]):
        found = [t for t in found if _differs_from(content, step, t)] or found
    return found[0] if found else None


DIFF_FIX = re.compile(
    r"; step \d+'s copy above (?:is out of date in these lines \(a unified diff"
    r"|shows the current hits, renumbered as below)"
)


def _differs_from(content: str, step: int, base: str) -> bool:
    """Whether ``content``, a correction sent as a difference (or a renumbering), is the
    difference from ``base``."""
    try:
        whole = apply_echo(base, content)
        return correction_against(whole, step, base) == content
    except (AssertionError, ValueError, IndexError):
        return False


def _whole(content: str, base: str | None) -> str:
    """A correction sent as a difference or a renumbering, taken back to the whole; empty when
    its base cannot be found (then it shows nothing the metric can read)."""
    if base is None:
        return ""
    try:
        return apply_echo(base, content)
    except (AssertionError, ValueError, IndexError):
        return ""


def _keyed(target: str, span: tuple[int, int] | None) -> str:
    """A correction's key among those placed at one step: its target and the lines it shows
    (two ranges of one file corrected at one boundary are two copies)."""
    return f"{target} (lines {span[0]}-{span[1]})" if span else target


_NAMED_PREFIX = "named: "


def _named(target: str, span: tuple[int, int]) -> str:
    """A correction's key by the lines its head names, which a later correction of it names
    too: an edit pointer's head keeps the range first read while the lines it stands for grow
    with each edit, so two ranges of one file corrected at one step are told apart by it."""
    return _NAMED_PREFIX + _keyed(target, span)


def _span_of(text: str) -> tuple[int, int] | None:
    """The lines a read's result shows, from its numbered lines."""
    numbers = [int(m.group(1)) for x in _numbered(text) if (m := NUMBERED.match(x))]
    return (numbers[0], numbers[-1]) if numbers else None


def _edited(base: str, edit: ToolCall | None, top: int) -> str:
    """A read's result ``base`` with ``edit`` (an ``edit_file`` call) applied to its lines,
    numbered from ``top``: what a correction pointing to that edit stands for."""
    lines = [NUMBERED.match(x).group(2) for x in _numbered(base)]
    old, new = (edit.arguments.get("old"), edit.arguments.get("new")) if edit else (None, None)
    if not lines or not isinstance(old, str) or not isinstance(new, str):
        return ""
    edited = apply_edit(lines, old, new)
    if edited is None:
        return ""
    return "[edited]\n" + "\n".join(f"{top + i}│{t}" for i, t in enumerate(edited[0]))


def step_of(call_id: str | None) -> int | None:
    found = re.fullmatch(r"call_(\d+)_\d+", call_id or "")
    return int(found.group(1)) if found else None


def copies(messages: Sequence[Message]) -> list[Copy]:
    """The copies of file lines the request's tool results carry, in order."""
    out: list[Copy] = []
    for r in results(messages):
        call, text = r.call, r.text
        if r.corrects:  # what it names as out of date, whatever it shows
            out.append(Copy("", {}, r.origin, r.corrects))
        if call is None or not text:
            continue
        if call.name == "read_file":
            lines = {int(n): t for n, t in (NUMBERED.match(x).groups() for x in _numbered(text))}
            if lines:
                path = os.path.normpath(call.arguments["path"])
                out.append(Copy(path, lines, r.origin, r.corrects, _absent(call, text, lines)))
        elif call.name == "grep":
            hits: dict[str, dict[int, str]] = {}
            for line in text.splitlines():
                hit = HIT.match(line)
                if hit:
                    hits.setdefault(os.path.normpath(hit[1]), {})[int(hit[2])] = hit[3]
            out += [Copy(path, lines, r.origin, r.corrects) for path, lines in hits.items()]
    return out


TRAILER = re.compile(r"^\(lines \d+-\d+ of (\d+)\)$", re.M)


def _absent(call: ToolCall, text: str, lines: dict[int, str]) -> range:
    """The lines a read asked for (its offset and limit) that its result shows the file does
    not have: past the file's last line, which its range trailer counts (``read_file``), or
    which a read of the whole file (no offset, no limit) shows, every line from the first
    (nothing cut). A pointer to the agent's edit (``_edited``) shows no trailer: nothing."""
    offset, limit = call.arguments.get("offset") or 1, call.arguments.get("limit")
    trailer = TRAILER.search(text)
    if trailer is not None:
        total = int(trailer[1])
    elif offset == 1 and limit is None and len(lines) == max(lines) and min(lines) == 1:
        total = max(lines)
    else:
        return range(0)
    asked = offset + limit - 1 if isinstance(limit, int) else sys.maxsize
    return range(total + 1, asked + 1)


def _numbered(text: str) -> Iterable[str]:
    return (line for line in text.splitlines() if NUMBERED.match(line))


def stale_count(messages: Sequence[Message], tree: str, files: Files) -> int:
    """Copies that differ from the file as it is, with no later correction (module doc)."""
    found = copies(messages)
    count = 0
    for i, copy in enumerate(found):
        if not copy.lines:
            continue
        current = files.lines(tree, copy.path)
        wrong = {
            n for n, text in copy.lines.items()
            if current is None or n > len(current) or current[n - 1] != text
        }  # fmt: skip
        if copy.origin is not None and any(
            copy.origin in later.corrects for later in found[i + 1 :]
        ):
            continue  # a later correction names this copy as out of date
        for later in found[i + 1 :]:
            if later.path == copy.path and current is not None:
                wrong -= {
                    n for n in wrong
                    if (later.lines.get(n) == current[n - 1] if n <= len(current)
                        else n in later.absent)
                }  # fmt: skip  # shown as it is: its text, or gone past the file's end
        count += bool(wrong)
    return count


def visible(messages: Sequence[Message]) -> str:
    """Everything of the workspace a request shows: its results as they stand for, and the
    agent's own turns (their text and their calls' arguments)."""
    parts = [r.text for r in results(messages)]
    for m in messages:
        if m.role == "assistant":
            parts.append(m.content)
            parts += [str(v) for c in m.tool_calls for v in _strings(c.arguments)]
    return "\n".join(parts)


def seen_by_tools(messages: Sequence[Message]) -> str:
    return "\n".join(r.text for r in results(messages))


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# -- the lines an action uses -------------------------------------------------------------------

SED_I = re.compile(r"sed -i (['\"])(.*?)\1 (\S+)")
SED_LINES = re.compile(r"^(\d+)(?:,(\d+))?[dcaip]")
SED_SUB = re.compile(r"^s(.)(.*?)(?<!\\)\1")


def used_lines(call: ToolCall, tree: str, files: Files) -> list[str]:
    """The text of the lines ``call`` uses, the files as they are in ``tree`` (module doc)."""
    args = call.arguments
    if call.name == "edit_file":
        lines = files.lines(tree, args["path"])
        old = args.get("old")
        at = "\n".join(lines).find(old) if lines is not None and old else -1
        if at < 0:
            return []
        text = "\n".join(lines or [])
        first = text.count("\n", 0, at)
        return (lines or [])[first : first + args["old"].count("\n") + 1]
    if call.name == "read_file" and (args.get("offset") or args.get("limit")):
        lines = files.lines(tree, args["path"]) or []
        first = (args.get("offset") or 1) - 1
        return lines[first : first + args["limit"]] if args.get("limit") else lines[first:]
    if call.name == "run_command" and args["argv"][:2] == ["bash", "-c"]:
        out: list[str] = []
        for _, expr, path in SED_I.findall(args["argv"][2]):
            lines = files.lines(tree, path) or []
            if by_number := SED_LINES.match(expr):
                first = int(by_number[1])
                out += lines[first - 1 : int(by_number[2] or first)]
            elif sub := SED_SUB.match(expr):
                try:
                    pattern = re.compile(bre_to_python(sub[2]))
                except re.error:
                    continue
                out += [line for line in lines if pattern.search(line)]
        return out
    return []


# -- the baselines ------------------------------------------------------------------------------


def oracle(
    frame: list[Message], history: Sequence[StepRecord], tree: str, files: Files
) -> list[Message]:
    """The frame, the live content and the agent's own turns (module doc)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    latest: dict[str, str] = {}
    turns: list[Message] = []
    for record in history:
        turns.append(Message("assistant", record.text, record.tool_calls))
        results_by_id = {o.call_id: o for o in record.observations}
        for call in record.tool_calls:
            result = results_by_id.get(call.id)
            if result is None or result.is_error:
                continue
            args = call.arguments
            if call.name == "read_file":
                first = args.get("offset") or 1
                last = first + args["limit"] - 1 if args.get("limit") else 1 << 30
                spans.setdefault(os.path.normpath(args["path"]), []).append((first, last))
            elif call.name in ("grep", "find", "run_command"):
                latest[json.dumps([call.name, args], sort_keys=True)] = result.text
    live = [
        Message("user", live_lines(path, wanted, tree, files)) for path, wanted in spans.items()
    ]
    live += [Message("user", text) for text in latest.values()]
    return frame + live + turns


def live_lines(path: str, spans: list[tuple[int, int]], tree: str, files: Files) -> str:
    lines = files.lines(tree, path) or []
    wanted = sorted({n for a, b in spans for n in range(a, min(b, len(lines)) + 1)})
    runs: list[list[int]] = []
    for n in wanted:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    shown = [number_lines(lines[r[0] - 1 : r[-1]], r[0], len(lines)) for r in runs]
    return f"{path}\n" + "\n…\n".join(shown)
