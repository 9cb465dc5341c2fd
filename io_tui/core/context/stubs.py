"""The one-line stubs that stand in for results a request does not carry.

Every stub names the step it stands for and its **handle** (the call id) and says how to get
the result back, in the model's terms, so nothing leaves the window without a way back:
``recall_result("<call id>")`` reads the recorded result back from the trace (``tools/recall``),
and a stale one says how to get its current result instead. What is not reproducible is never
cleared (``receipt``): a stub keeps the decision, the side effect's receipt, the exit status
(of a failed command as of a passed one) and the latest test command's output's end.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from io_tui.core.checks import is_test_command
from io_tui.core.ledger import Observation, ObsKind, bound_head, bound_text
from io_tui.core.text.heads import untrusted_body
from io_tui.core.text.numbered import GUTTER, number_lines, range_from, range_trailer
from io_tui.core.tokens import estimate_tokens

RECALL = "recall_result"
RECEIPT_CHARS = 200  # of a receipt's line
TEST_TAIL_CHARS = 400  # of the latest test output's end, kept in its stub
_DECIDED = ("The operator ", "Refused by policy")  # the harness's words on a decision
_RECEIPTS = frozenset({ObsKind.WRITE, ObsKind.MEMORY, ObsKind.AGENT, ObsKind.MCP})


def what(obs: Observation) -> str:
    """The observation's target, with its span when it has one."""
    return f"{obs.target} ({obs.span})" if obs.span else obs.target


def recall_call(call_id: str, offset: int = 0) -> str:
    """The call that reads a recorded result back, from ``offset`` (in characters)."""
    at = f", offset={offset}" if offset else ""
    return f'{RECALL}("{call_id}"{at})'


def rest_hint(call_id: str, chars: int, cap: int) -> str:
    """What a marker cutting a text of ``chars`` characters to ``cap`` says: where the
    recorded result goes on (the head kept is the recorded result's own head)."""
    return f"{recall_call(call_id, bound_head(chars, cap))} reads on"


def cut(obs: Observation, cap: int) -> str:
    """The recorded result cut to ``cap`` (within it: unchanged), the marker saying where the
    recall goes on."""
    return bound_text(obs.text, cap, rest_hint(obs.call_id, len(obs.text), cap))


def again(obs: Observation) -> str:
    """The call that gives an observation's current result, in the model's terms."""
    target = what(obs)
    match obs.kind:
        case ObsKind.READ | ObsKind.LIST | ObsKind.FIND | ObsKind.SKILL:
            return f"call {obs.tool} {target} again"
        case ObsKind.GREP:
            return f"rerun the {obs.tool} for {target}"
        case ObsKind.EXEC:
            return f"rerun {target}"
        case ObsKind.RECALL:  # a recall gives the recorded result again, never the current one
            return f"make the call {obs.target} recorded again"
        case _:
            return f"call {obs.tool} again with the same arguments"


def how_to_get_back(obs: Observation, stale: bool = False) -> str:
    """How to get an observation back: recalled as recorded, or, when what it was made from
    changed since, made again for its current result."""
    if stale:
        return f"{again(obs)} for its current result ({recall_call(obs.call_id)}: as recorded)"
    return f"{recall_call(obs.call_id)} reads it back"


def receipt(obs: Observation, latest: bool = False) -> str:
    """What of a result is never cleared, whatever stands in for it: the operator's or the
    policy's decision on the call, a side effect's receipt (a write, a memory write, a
    sub-agent's run, an MCP tool's answer: its first line), a command's exit status (passed or
    failed alike), and for the run's ``latest`` test command (``checks.is_test_command``) the end
    of its output (untrusted data), whether it passed or failed: the evidence the verification
    step needs. "" for a result with none (a read, a grep, a recall: reproducible, read back by
    handle)."""
    text = obs.text
    kept: list[str] = []
    if text.startswith(_DECIDED):
        first, _, text = text.partition("\n")
        kept.append(_line(first))
    text = untrusted_body(text)
    if obs.kind is ObsKind.EXEC:  # failed or passed: its exit status all the same
        lines = text.split("\n", 2)  # "$ argv", the exit status, the output
        if len(lines) > 1:
            kept.append(_line(lines[1]))
        if latest and len(lines) > 2 and is_test_command(obs.target):
            tail = lines[2][-TEST_TAIL_CHARS:]
            kept.append(f"the end of its output, untrusted data: {' '.join(tail.split())}")
    elif obs.kind in _RECEIPTS and not obs.is_error and text and not _resource(obs):
        kept.append(_line(text.partition("\n")[0]))
    return "; ".join(kept)


def receipt_rank(obs: Observation) -> int:
    """Which receipts come first where room runs out: decisions (0), side effects (1), a
    command's exit status (2)."""
    if obs.text.startswith(_DECIDED):
        return 0
    return 2 if obs.kind is ObsKind.EXEC else 1


def _resource(obs: Observation) -> bool:
    """An MCP resource's content: a read, reproducible."""
    return obs.kind is ObsKind.MCP and obs.target.startswith("mcp:")


def _line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= RECEIPT_CHARS else text[: RECEIPT_CHARS - 1] + "…"


def _with(stub: str, obs: Observation, latest: bool = False) -> str:
    """``stub`` with the result's receipt, when it has one."""
    kept = receipt(obs, latest)
    return f"{stub[:-1]}. Kept: {kept}]" if kept else stub


def superseded_stub(
    obs: Observation, by: int, covered: bool = False, corrected: bool = False
) -> str:
    if corrected:
        how = f"out of date, corrected at step {by}"
    else:
        how = f"superseded by step {by}, which " + (
            "read these lines again" if covered else "made the same call"
        )
    stub = (
        f"[step {obs.step} {obs.tool} {what(obs)}: {how}; the newest such result is the "
        f"current one; {recall_call(obs.call_id)} reads this one]"
    )
    return _with(stub, obs)


# -- corrections: a result that went out of date, re-read and sent after the newest message --


def correction_head(obs: Observation, cause: str, failure: str | None = None) -> str:
    """The line a correction of ``obs`` starts with: what changed and since when, and that the
    copy above is out of date. With ``failure``, why no current result could be had."""
    head = f"[correction of step {obs.step}'s {obs.kind.value} of {what(obs)}: {cause}"
    if failure is not None:
        return (
            f"{head}; redoing it failed: {failure}. Step {obs.step}'s copy above is out of "
            f"date; {again(obs)} if you still need it]"
        )
    return head + _FOLLOWS.format(step=obs.step)


def also_out_of_date(copies: list[str]) -> str:
    """The clause a correction's cause ends with when earlier copies of the same call, still
    carried, went out of date with the one it corrects (``copies``: "step 194's grep")."""
    return _ALSO.format(copies=", ".join(copies))


def named_also(head: str) -> list[tuple[int, str]]:
    """The copies (step, kind) a correction's first line names with ``also_out_of_date``."""
    found = _ALSO_AT.search(head)
    return [(int(n), k) for n, k in _COPY.findall(found[1])] if found else []


_ALSO = "; also out of date above: {copies}"
_ALSO_AT = re.compile(r"; also out of date above: ((?:step \d+'s \w+(?:, )?)+)")
_COPY = re.compile(r"step (\d+)'s (\w+)")


def correction_written(obs: Observation, cause: str, writer: int, copies: list[str]) -> str:
    """A correction of ``obs`` that needs no result of its own: the agent's ``write_file`` at
    step ``writer`` holds the file's whole current content in its call. It names every copy of
    the file above that the write put out of date (``copies``: "step 8's read"), so one line
    corrects them all."""
    return (
        f"[correction of step {obs.step}'s {obs.kind.value} of {what(obs)}: {cause}; "
        f"out of date above: {', '.join(copies)}" + _WRITTEN.format(writer=writer, path=obs.target)
    )


def _reading(template: str, *captured: str, text: tuple[str, ...] = ()) -> str:
    """The regular expression that reads ``template`` back: each ``{field}`` a number, a group
    when it is ``captured`` (in that order in the template), any text when it is in ``text``."""

    def field(found: re.Match[str]) -> str:
        name = found[1]
        return r"(\d+)" if name in captured else ".+" if name in text else r"\d+"

    return re.sub(r"\\\{(\w+)\\\}", field, re.escape(template))


def written_by(text: str) -> int | None:
    """The step whose ``write_file`` a ``correction_written`` points to, or None."""
    found = _WRITTEN_AT.search(text.partition("\n")[0])
    return int(found[1]) if found else None


_WRITTEN = "; step {writer}'s write_file call above holds {path} whole, as it wrote it]"
_WRITTEN_AT = re.compile(_reading(_WRITTEN, "writer", text=("path",)) + "$")


def correction_edited(
    obs: Observation,
    cause: str,
    writer: int,
    first: int,
    last: int,
    total: int,
    at: int | None = None,
) -> str:
    """A correction of ``obs``, a range read, that needs no result of its own: the agent's
    ``edit_file`` at step ``writer`` is the only change to its lines, which are lines
    ``first``-``last`` of ``total`` now, the copy above with that call's ``old`` replaced by its
    ``new`` (``at``: the copy's line where ``old`` begins, when the copy ends inside it)."""
    fields = {"writer": writer, "base": obs.step, "first": first, "last": last, "total": total}
    tail = _EDITED.format(**fields) if at is None else _EDITED_FROM.format(**fields, at=at)
    return f"[correction of step {obs.step}'s {obs.kind.value} of {what(obs)}: {cause}" + tail


def edited_by(text: str) -> tuple[int, int, int] | None:
    """The step whose ``edit_file`` a ``correction_edited`` points to, and the lines (first,
    last) the copy it corrects spans now; or None."""
    head = text.partition("\n")[0]
    found = _EDITED_AT.search(head) or _EDITED_FROM_AT.search(head)
    return (int(found[1]), int(found[3]), int(found[4])) if found else None


def apply_edit(lines: list[str], old: str, new: str) -> tuple[list[str], int | None] | None:
    """``lines`` (a copy's, without numbers) with an ``edit_file``'s ``old`` replaced by its
    ``new``: when ``old`` is in them exactly once (second item None), or when they end inside
    it, its first lines being their last (second item: the index of the line it begins at,
    at least ``TAIL_LINES`` lines and ``TAIL_CHARS`` characters of it in them); else None."""
    before = "\n".join(lines) + "\n"
    if before.count(old) == 1:
        return before.replace(old, new, 1).removesuffix("\n").split("\n"), None
    if old in before or not lines:
        return None
    head = old.split("\n")[:-1]  # its whole lines (the last one may run on past it)
    for k in range(min(len(head), len(lines)), TAIL_LINES - 1, -1):
        if lines[-k:] == head[:k] and sum(len(t.strip()) for t in head[:k]) >= TAIL_CHARS:
            start = len(lines) - k
            kept = "".join(t + "\n" for t in lines[:start])
            return (kept + new).removesuffix("\n").split("\n"), start
    return None


TAIL_LINES = 2  # the least of an edit's old text a copy may end with to be pointed to
TAIL_CHARS = 40


def points_to_call(text: str) -> bool:
    """Whether a correction shows no result, pointing to the agent's own write or edit."""
    return written_by(text) is not None or edited_by(text) is not None


_EDITED_MADE = (
    "; step {writer}'s edit_file call above made step {base}'s copy above lines {first}-{last} "
    "of {total}: its old text"
)
_EDITED = _EDITED_MADE + " replaced by its new]"
_EDITED_AT = re.compile(_reading(_EDITED, "writer", "base", "first", "last") + "$")
_EDITED_FROM = _EDITED_MADE + ", which begins at that copy's line {at}, replaced by its new]"
_EDITED_FROM_AT = re.compile(_reading(_EDITED_FROM, "writer", "base", "first", "last") + "$")


def correction_echo(correction: str, base: int, base_text: str) -> str:
    """A correction (its whole text: ``correction_head``, then the current result) sent as the
    lines in which its result differs from ``base_text``, step ``base``'s copy carried above:
    a unified diff without context (``line_diff``). ``apply_echo`` gives the whole back."""
    head, _, body = correction.partition("\n")
    found = _WHOLE_HEAD.search(head)
    assert found is not None, head
    diff = line_diff(copy_of(base_text), body)
    return head[: found.start()] + _DIFFERS.format(base=base) + "\n" + diff


def copy_of(text: str) -> str:
    """The copy a result carries: a correction's result without its first line (what it
    corrects and why), any other result as it is. A later correction is sent against it."""
    return correction_body(text) if text.startswith("[correction of step ") else text


def moved_lines(base_text: str, body: str) -> tuple[int, int, int] | None:
    """Whether ``body``, a range read's result, shows exactly the lines ``base_text`` (an
    earlier read of the same file) shows, only numbered from elsewhere: (its first line, its
    last, the file's line count), or None. A line inserted or deleted above a range moves it."""
    old, new = numbered_lines(copy_of(base_text)), numbered_lines(body)
    if old is None or new is None or not old[1] or [t for _, t in old[1]] != [t for _, t in new[1]]:
        return None
    trailer = RANGE.fullmatch(body.rpartition("\n")[2])
    if trailer is None or old[0] != new[0]:  # the frame line (the file) must be the same
        return None
    return int(trailer[1]), int(trailer[2]), int(trailer[3])


def same_lines(old: str, new: str) -> bool:
    """Whether two results of one range read show the same lines at the same numbers, only
    the file's line count in their trailers differing (lines were added or removed below the
    range): the older copy shows every line as it is."""
    was, now = numbered_lines(copy_of(old)), numbered_lines(copy_of(new))
    return was is not None and now is not None and was == now and bool(was[1])


def numbered_lines(text: str) -> tuple[str, list[tuple[int, str]]] | None:
    """A read's result as its frame line and its numbered lines (number, text), its range
    trailer left out; None when it is not one read's numbered output."""
    frame, _, body = text.partition("\n")
    if not frame.startswith("[") or not body:
        return None
    lines = body.split("\n")
    if _TRAILER.fullmatch(lines[-1]):
        lines.pop()
    found = [_GUTTERED.match(line) for line in lines]
    if not all(found):
        return None
    return frame, [(int(m[1]), line[m.end() :]) for m, line in zip(found, lines, strict=True) if m]


def correction_moved(correction: str, base: int, first: int, last: int, total: int) -> str:
    """A correction whose current result is the copy of step ``base`` above, every line as it
    was, only numbered from ``first`` now (lines were inserted or deleted above it): one line.
    ``apply_echo`` gives the whole back from that copy."""
    head = correction.partition("\n")[0]
    found = _WHOLE_HEAD.search(head)
    assert found is not None, head
    return head[: found.start()] + _MOVED.format(base=base, first=first, last=last, total=total)


RANGE = re.compile(r"\(lines (\d+)-(\d+) of (\d+)\)")  # a range read's trailer
_MOVED = (
    "; step {base}'s copy above shows its lines unchanged, numbered now {first}-{last} of {total}]"
)
_MOVED_AT = re.compile(_reading(_MOVED, "first", "last", "total") + "$")


def _renumbered(base_text: str, first: int, total: int) -> str:
    """``base_text``, a read's result, its lines numbered from ``first`` of ``total``."""
    parsed = numbered_lines(copy_of(base_text))
    assert parsed is not None
    frame, lines = parsed
    last = first + len(lines) - 1
    body = number_lines([t for _, t in lines], first, total)
    return f"{frame}\n{body}\n{range_trailer(first, last, total)}"


_FOLLOWS = "; its current result follows, and step {step}'s copy above is out of date]"
_DIFFERS = (
    "; step {base}'s copy above is out of date in these lines (a unified diff: `-` that "
    "copy's lines, `+` the current ones)]"
)
_WHOLE_HEAD = re.compile(_reading(_FOLLOWS, "step") + "$")
_ECHO_HEAD = re.compile(r"^\[correction of step (\d+)'s .*?" + _reading(_DIFFERS) + "$")


def correction_against(correction: str, base: int, base_text: str) -> str:
    """A correction sent against step ``base``'s copy above (``base_text``): a grep's as that
    copy's hits renumbered (``correction_renumbered``) when that is smaller than the lines in
    which it differs (``correction_echo``), any other as those lines."""
    diff = correction_echo(correction, base, base_text)
    renumbered = correction_renumbered(correction, base, base_text)
    if renumbered is not None and estimate_tokens(renumbered) < estimate_tokens(diff):
        return renumbered
    return diff


def correction_renumbered(correction: str, base: int, base_text: str) -> str | None:
    """A grep's correction (its whole text: ``correction_head``, then the current result) sent
    as step ``base``'s copy above (``base_text``) renumbered: a line inserted or deleted above a
    hit changes its number alone, so the hits whose file and text are as they were are given
    by file and run ("a.py: hits from line 990 on are 3 lines down"), and the lines added or
    removed besides (matched with the numbers left out) as a unified diff after them. None when
    no hit moved, or for any other result. ``apply_echo`` gives the whole back, to the
    character: a form it would not (a file name that reads as a run's line) is never made."""
    head, _, body = correction.partition("\n")
    found = _WHOLE_HEAD.search(head) if _GREP_CORRECTION.match(head) else None
    if found is None:
        return None
    old, new = copy_of(base_text).split("\n"), body.split("\n")
    matcher = difflib.SequenceMatcher(None, _unnumbered(old), _unnumbered(new), autojunk=False)
    kept: dict[str, list[tuple[int, int]]] = {}  # each file's unchanged hits: number, move
    diff: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for was, now in zip(old[i1:i2], new[j1:j2], strict=True):
                hit, moved = _HIT.fullmatch(was), _HIT.fullmatch(now)
                if hit and moved:
                    kept.setdefault(hit[1], []).append((int(hit[2]), int(moved[2]) - int(hit[2])))
            continue
        diff.append(f"@@ -{_hunk_side(i1, i2 - i1)} +{_hunk_side(j1, j2 - j1)} @@")
        diff += ["-" + line for line in old[i1:i2]] + ["+" + line for line in new[j1:j2]]
    runs = [_run(path, first, move) for path, first, move in _runs(kept)]
    if not runs:  # no hit moved: a diff says it all
        return None
    how = _RENUMBERED.format(base=base) + (_AND_DIFFERS if diff else "") + "]"
    sent = head[: found.start()] + how + "\n" + "\n".join(runs + diff)
    try:
        exact = apply_echo(base_text, sent) == correction
    except (AssertionError, ValueError):
        exact = False
    return sent if exact else None


def renumbers(text: str) -> bool:
    """Whether a correction is sent as its copy's hits renumbered (``correction_renumbered``)."""
    head = text.partition("\n")[0]
    return _GREP_CORRECTION.match(head) is not None and _RENUMBERED_AT.search(head) is not None


def _unnumbered(lines: list[str]) -> list[tuple[str, ...]]:
    """Lines to match between two results of a grep: a hit by its file and text alone."""
    keys: list[tuple[str, ...]] = []
    for line in lines:
        hit = _HIT.fullmatch(line)
        keys.append((hit[1], hit[3]) if hit else (line,))
    return keys


def _runs(kept: dict[str, list[tuple[int, int]]]) -> Iterable[tuple[str, int, int]]:
    """Each file's unchanged hits as runs: (file, the copy's number a run starts at, how far its
    hits moved), a run wherever the move changes (from no move at the start)."""
    for path, hits in kept.items():
        move = 0
        for number, now in sorted(hits):
            if now != move:
                yield path, number, now
                move = now


def _run(path: str, first: int, move: int) -> str:
    """A run's line: its file's hits from the copy's line ``first`` on moved ``move`` lines."""
    if not move:
        return _STAYS.format(path=path, first=first)
    far = f"{abs(move)} line{'' if abs(move) == 1 else 's'} {'down' if move > 0 else 'up'}"
    return _MOVES.format(path=path, first=first, far=far)


def _hunk_side(start: int, count: int) -> str:
    """One side of a unified diff's hunk header for ``count`` lines from index ``start``."""
    if count == 1:
        return str(start + 1)
    return f"{start if count == 0 else start + 1},{count}"


def _renumber(lines: Iterable[str], runs: dict[str, list[tuple[int, int]]]) -> list[str]:
    """``lines`` of a grep's result, each hit moved as the last of its file's ``runs`` (the
    copy's number a run starts at, how far) that starts at or before it says."""
    out = []
    for line in lines:
        hit = _HIT.fullmatch(line)
        starts = runs.get(hit[1], []) if hit else []
        move = next((m for first, m in reversed(starts) if first <= int(hit[2])), 0) if hit else 0
        out.append(f"{hit[1]}:{int(hit[2]) + move}:{hit[3]}" if hit and move else line)
    return out


def _apply_renumbered(base_text: str, body: str) -> str:
    """The result a ``correction_renumbered`` body stands for, given the copy it renumbers."""
    lines = copy_of(base_text).split("\n")
    rows = body.split("\n")
    at_diff = next((i for i, row in enumerate(rows) if row.startswith("@@")), len(rows))
    runs: dict[str, list[tuple[int, int]]] = {}
    for row in rows[:at_diff]:
        run = _RUN_AT.fullmatch(row)
        assert run is not None, row
        move = int(run["far"] or 0) * (1 if run["way"] == "down" else -1)
        runs.setdefault(run["path"], []).append((int(run["first"]), move))
    out: list[str] = []
    at = 0  # the next line of ``lines`` not yet copied
    for row in rows[at_diff:]:
        hunk = _HUNK_ANY.match(row)
        if hunk:
            place, count = int(hunk[1]), int(hunk[2] or "1")
            start = place if count == 0 else place - 1
            out += _renumber(lines[at:start], runs)
            at = start + count
        elif row.startswith("+"):
            out.append(row[1:])
    out += _renumber(lines[at:], runs)
    return "\n".join(out)


_HIT = re.compile(r"([^\s:][^:]*):(\d+):(.*)", re.DOTALL)  # a grep's hit: file, number, text
_GREP_CORRECTION = re.compile(r"\[correction of step \d+'s grep of ")
_MOVES = "{path}: hits from line {first} on are {far}"
_STAYS = "{path}: hits from line {first} on keep their numbers"
_RUN_AT = re.compile(
    r"(?P<path>.+): hits from line (?P<first>\d+) on "
    r"(?:are (?P<far>\d+) lines? (?P<way>up|down)|keep their numbers)"
)
_RENUMBERED = "; step {base}'s copy above shows the current hits, renumbered as below"
_AND_DIFFERS = " and changed by the unified diff after (`-` its lines, `+` the current ones)"
_RENUMBERED_AT = re.compile(_reading(_RENUMBERED) + f"(?:{re.escape(_AND_DIFFERS)})?\\]$")


def line_diff(old: str, new: str) -> str:
    """``new`` as its difference from ``old``: a unified diff without context lines. For two
    results of the read tool, the diff is of the file's lines, numbered in the hunk headers
    (a line inserted does not renumber every line after it). ``apply_line_diff`` inverts it."""
    old_lines, old_first = _diff_lines(old)
    new_lines, new_first = _diff_lines(new)
    out = []
    for line in difflib.unified_diff(old_lines, new_lines, n=0):
        if line.startswith(("---", "+++")):
            continue
        hunk = _HUNK_ANY.match(line)
        if hunk and (old_first or new_first):
            line = _numbered_hunk(hunk, _shift(old_first), _shift(new_first))
        out.append(line)
    return "".join(out)


def apply_line_diff(old: str, diff: str) -> str:
    """The result ``line_diff(old, new)`` stands for, given ``old``: ``new``, to the character
    (a read's lines numbered again as the read tool numbers them)."""
    lines, first = _diff_lines(old)
    shift = _shift(first)
    out: list[str] = []
    at = 0  # the next line of ``lines`` not yet copied
    for line in diff.splitlines(keepends=True):
        hunk = _HUNK_ANY.match(line)
        if hunk:
            place, count = int(hunk[1]) - shift, int(hunk[2] or "1")
            start = place if count == 0 else place - 1
            out += lines[at:start]
            at = start + count
        elif line.startswith("+"):
            out.append(line[1:])
    out += lines[at:]
    if first is None:
        return "".join(out).removesuffix("\n")
    frame, body = out[0], [line.removesuffix("\n") for line in out[1:]]
    trailer = _TRAILER.fullmatch(body[-1]) if body else None
    if trailer:
        body.pop()
    total = int(trailer[1]) if trailer else first + len(body) - 1
    if trailer:  # the range it shows now: the same lines followed where an edit moved them
        first = int(trailer[0][len("(lines ") :].partition("-")[0])
    numbered = number_lines(body, first, total)
    return frame + numbered + (f"\n{trailer[0]}" if trailer else "")


def _diff_lines(text: str) -> tuple[list[str], int | None]:
    """A result's lines to diff, each ending in a newline, and for a read the number of its
    first file line: its frame line, then the file's lines without their gutters, then its
    range trailer (a line's place among them less ``_shift(first)`` is its number). Any other
    result is its lines as they are (None)."""
    lines = (text + "\n").splitlines(keepends=True)
    if len(lines) > 1 and lines[0].startswith("["):
        body, trailer = lines[1:], []
        if _TRAILER.fullmatch(body[-1].rstrip("\n")):
            body, trailer = body[:-1], body[-1:]
        found = [_GUTTERED.match(line) for line in body]
        numbers = [m for m in found if m is not None]
        if body and len(numbers) == len(body):
            plain = [line[m.end() :] for line, m in zip(body, numbers, strict=True)]
            return [lines[0], *plain, *trailer], int(numbers[0][1])
    return lines, None


def _shift(first: int | None) -> int:
    """What turns a line's place in ``_diff_lines`` into its number (the frame is place 1)."""
    return 0 if first is None else first - 2


def _numbered_hunk(hunk: re.Match[str], old_shift: int, new_shift: int) -> str:
    """A hunk header with each side's places turned into the numbers its lines are shown with.
    A side of no lines (``,0``) names the place after which the other side's lines go."""
    old_at, old_n, new_at, new_n, rest = hunk.groups()

    def side(at: str, n: str | None, shift: int) -> str:
        return f"{int(at) + shift}" + (f",{n}" if n is not None else "")

    return f"@@ -{side(old_at, old_n, old_shift)} +{side(new_at, new_n, new_shift)} @@{rest}"


def shown_stub(obs: Observation, by: int) -> str:
    return (
        f"[step {obs.step} {obs.tool} {what(obs)}: these lines are in step {by}'s read of "
        f"{obs.target}, the file unchanged since; {how_to_get_back(obs)} if that result is "
        "not above]"
    )


def same_stub(obs: Observation, by: int) -> str:
    return (
        f"[step {obs.step} {obs.tool} {what(obs)}: the same result as step {by}'s, to the "
        f"character; {how_to_get_back(obs)} if that result is not above]"
    )


def noted_stub(obs: Observation) -> str:
    return (
        f"[step {obs.step} {obs.tool} {obs.target!r}: saved as its call says; "
        f"{how_to_get_back(obs)}]"
    )


def elided_stub(obs: Observation, stale: str | None, latest: bool = False) -> str:
    """``latest``: the run's latest test command, whose output's end the stub keeps."""
    why = f" (and stale: {stale})" if stale is not None else ""
    stub = (
        f"[step {obs.step} {obs.tool} {what(obs)}: elided, older than this request's "
        f"window{why}; {how_to_get_back(obs, stale is not None)}]"
    )
    return _with(stub, obs, latest)


def aged_stub(obs: Observation, at: int) -> str:
    """A command's output cleared once a later step had acted on it (``live.AGE_STEPS``):
    its size, when it aged, how to read it back, its exit status (a test command's output,
    which never ages, is the only one whose end a stub keeps)."""
    stub = (
        f"[step {obs.step} {obs.tool} {what(obs)}: its output "
        f"({estimate_tokens(untrusted_body(obs.text)):,} tokens) cleared, aged out at step "
        f"{at}; {how_to_get_back(obs)}]"
    )
    return _with(stub, obs)


def is_test_run(obs: Observation) -> bool:
    """Whether ``obs`` is a test command's result (``checks.is_test_command``)."""
    return obs.kind is ObsKind.EXEC and is_test_command(obs.target)


def echo_stub(
    obs: Observation, base: int, base_text: str, text: str, correction: bool = False
) -> str:
    """``text`` (the result of ``obs``) as the difference from ``base_text``, step ``base``'s
    result of the same call, which the request carries whole before it: the same, or a
    unified diff without context lines (``-`` its lines, ``+`` this result's). A base that is a
    ``correction`` is named so, and compared without its first line (``correction_head``)."""
    head = f"[step {obs.step} {obs.tool} {what(obs)}: "
    if correction:
        base_text = correction_body(base_text)
        if text == base_text:
            return head + _SAME_AS_CORRECTION.format(base=base)
        return head + _CHANGED_CORRECTION.format(base=base) + line_diff(base_text, text)
    if text == base_text:
        return head + f"the same result as step {base}'s, above, to the character]"
    old, new = base_text.splitlines(keepends=True), text.splitlines(keepends=True)
    lines = [
        line if line.endswith("\n") else line + "\n" + NO_NEWLINE
        for line in difflib.unified_diff(old, new, n=0)
        if not line.startswith(("---", "+++"))
    ]
    return (
        head + f"step {base}'s result above, with these lines changed (a unified diff: `-` "
        "its lines, `+` this result's)]\n" + "".join(lines)
    )


_SAME_AS_CORRECTION = (
    "the same result as the correction at step {base} above (its lines after the first), to "
    "the character]"
)
_CHANGED_CORRECTION = (
    "the correction at step {base} above (its lines after the first), with these lines changed "
    "(a unified diff: `-` its lines, `+` this result's)]\n"
)


_SAME_AS_CORRECTION_AT = re.compile(_reading(_SAME_AS_CORRECTION) + "$")
_CHANGED_CORRECTION_AT = re.compile(_reading(_CHANGED_CORRECTION.rstrip("\n")) + "$")


def correction_body(text: str) -> str:
    """A correction's result: its text after its first line (``correction_head``)."""
    return text.partition("\n")[2]


def quote_stub(obs: Observation, base: int, correction: bool = False) -> str:
    """A range read (``obs``) whose lines step ``base``'s read of the same file (or the
    ``correction`` made at that step), carried whole above in the request, shows as they are
    now: a pointer to them (``apply_echo`` gives the range back from that read's text)."""
    pointer = (_QUOTED_CORRECTION if correction else _QUOTED).format(base=base)
    return f"[step {obs.step} {obs.tool} {what(obs)}: {pointer}]"


_QUOTED = "these lines are in step {base}'s read above, as they are now"
_QUOTED_CORRECTION = "these lines are in the correction at step {base} above, as they are now"
_QUOTE = re.compile(
    r"\(lines (\d+)-(\d+)\): (?:"
    + _QUOTED.format(base=r"\d+")
    + "|"
    + _QUOTED_CORRECTION.format(base=r"\d+")
    + r")\]"
)
NO_NEWLINE = "\\ No newline at end of file\n"
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
_HUNK_ANY = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$", re.DOTALL)
_GUTTERED = re.compile(r" *(\d+)" + GUTTER)
_TRAILER = re.compile(r"\(lines \d+-\d+ of (\d+)\)")


def apply_echo(base_text: str, echo: str) -> str:
    """The result an ``echo_stub``, a ``quote_stub``, a ``correction_echo``, a
    ``correction_moved`` or a ``correction_renumbered`` stands for, given the base result it
    names: the inverse of each, to the character."""
    head, _, body = echo.partition("\n")
    moved = _MOVED_AT.search(head)
    if moved is not None and head.startswith("[correction of step "):
        step = re.match(r"\[correction of step (\d+)'s", head)
        assert step is not None
        whole = head[: moved.start()] + _FOLLOWS.format(step=step[1])
        return f"{whole}\n" + _renumbered(base_text, int(moved[1]), int(moved[3]))
    renumbered = _RENUMBERED_AT.search(head) if renumbers(head) else None
    if renumbered is not None:
        step = re.match(r"\[correction of step (\d+)'s", head)
        assert step is not None
        whole = head[: renumbered.start()] + _FOLLOWS.format(step=step[1])
        return f"{whole}\n" + _apply_renumbered(base_text, body)
    correction = _ECHO_HEAD.match(head)
    if correction:
        at = head.rindex(_DIFFERS.split("{base}")[0])
        whole = head[:at] + _FOLLOWS.format(step=correction[1])
        return f"{whole}\n" + apply_line_diff(copy_of(base_text), body)
    quoted = _QUOTE.search(head)
    if quoted:
        if "correction at step" in quoted[0]:
            base_text = correction_body(base_text)
        return range_from(base_text, int(quoted[1]), int(quoted[2])) or ""
    if _SAME_AS_CORRECTION_AT.search(head):
        return correction_body(base_text)
    if _CHANGED_CORRECTION_AT.search(head):
        return apply_line_diff(correction_body(base_text), body)
    if head.endswith("to the character]"):
        return base_text
    old = base_text.splitlines(keepends=True)
    out: list[str] = []
    at = 0  # the next line of ``old`` not yet copied
    previous = ""
    for line in body.splitlines(keepends=True):
        hunk = _HUNK.match(line)
        if hunk:
            first, count = int(hunk[1]), int(hunk[2] or "1")
            start = first if count == 0 else first - 1
            out += old[at:start]
            at = start + count
        elif line.startswith("+"):
            out.append(line[1:])
        elif line == NO_NEWLINE and previous.startswith("+"):
            out[-1] = out[-1].removesuffix("\n")
        previous = line
    return "".join(out + old[at:])
