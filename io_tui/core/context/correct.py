"""Corrections: a result that went out of date is corrected by appending, not rewritten in place.

With a prompt cache, what a request already sent is nearly free to send again and expensive to
change: changing one message throws away the cached prefix from there on. So a read, range
read, grep, find or listing that went out of date (a later write, or a change on disk by a
command, an MCP tool, a sub-agent, the user's editor, a checkout) keeps its copy where the
cached prefix holds it, and the same call made again now (through the run's policy and
workspace containment: the engine's ``Refresher``) goes after the newest message, at the
boundary of the step being asked for, as a *correction*: a result of its own, whose first line
says what changed and since when and that the copy above is out of date (``stubs``). The copy
is then ``corrected``: carried as sent until the next rewrite stubs it. A stale copy is only
ever in a request whose correction comes later in it. A correction that goes out of date in
turn is corrected again, the newer superseding it; a re-run that gives the recorded result
again needs none (the result is current once more). Corrections are recorded with the step
(``StepRecord.corrections``), so every later request, and a fresh engine on resume, sends them
as they were sent.
"""

from __future__ import annotations

import posixpath
from dataclasses import replace
from difflib import SequenceMatcher

from io_tui.core.context.live import WHOLE_WRITES, LiveSteps
from io_tui.core.context.refresh import Fresh, Refresher, RefreshFailed
from io_tui.core.context.step import Entry
from io_tui.core.context.stubs import (
    RANGE,
    also_out_of_date,
    apply_edit,
    copy_of,
    correction_edited,
    correction_head,
    correction_written,
    edited_by,
    numbered_lines,
    rest_hint,
    same_lines,
)
from io_tui.core.ledger import Observation, ObsKind, Seen, bound_text, content_digest
from io_tui.core.text.numbered import range_from, range_span

NO_REFRESHER = "nothing can make calls again in this context"
_NOTHING_SEEN: tuple[Seen, ...] = ()


def _cause(e: Entry) -> str:
    """What put ``e`` out of date, as its correction's first line says it: a write to the file
    that line names already (a read's, a grep's in one file) is "step N wrote it"."""
    obs, stale = e.obs, e.stale
    if stale is None:
        return "it changed"
    if e.stale_by is not None and (
        (obs.kind is ObsKind.READ and e.stale_path == posixpath.normpath(obs.target))
        or obs.span == f"in {e.stale_path}"
    ):
        return f"step {e.stale_by} wrote it after this {obs.kind.value}"
    return stale


async def correct(
    live: LiveSteps, start: int, step: int, cap: int, refresh: Refresher | None
) -> list[tuple[Observation, str]]:
    """Correct every open result in live steps ``start`` on (the window's reach) that went out
    of date, at the boundary of ``step`` (the newest live step, being asked for). Returns each
    correction made with its whole text (what ``recall_result`` reads back)."""
    made: list[tuple[Observation, str]] = []
    wholes: dict[str, Fresh | None] = {}  # each file read whole once per pass, to find moved lines
    for e in live.uncorrected(start):
        if e.by is not None:  # a correction made just now covers it (a whole read's, a range)
            continue
        obs, cause = e.obs, _cause(e)
        before = live.stale_before(e, start)
        if before:
            cause += also_out_of_date([f"step {b.obs.step}'s {b.obs.kind.value}" for b in before])
        writer = await _whole_writer(live, e, refresh)
        if writer is not None:
            made.append(_written(live, e, cause, writer, step))
            continue
        failure: str | None = None
        fresh_text, seen = "", _NOTHING_SEEN
        try:
            if refresh is None:
                raise RefreshFailed(NO_REFRESHER)
            fresh_text, seen = await refresh(obs)
        except RefreshFailed as exc:
            failure = str(exc) or "the call was refused"
        except OSError as exc:
            failure = f"the call failed: {exc}"
        else:
            if fresh_text == obs.text or same_lines(obs.text, fresh_text):
                live.revalidate(e, seen)  # what changed did not change what it shows
                continue
            shown = _shown_lines(live, e)
            if await _still_shown(live, e, shown, refresh):
                continue
            edited = await _own_edit(live, e, shown, refresh)
            if edited is not None:
                writer, first, last, total, begins, now = edited
                text = correction_edited(obs, cause, writer, first, last, total, begins)
                made.append(_pointer(live, e, text, step, now))
                continue
        span = obs.span
        if failure is None and refresh is not None and obs.kind is ObsKind.READ and obs.span:
            moved = await _moved(obs, refresh, wholes) or await _followed(obs, refresh)
            if moved is not None:  # the same lines, numbered from elsewhere now, or edited
                fresh_text, seen, span = moved
        handle = _handle(live, obs, step)
        head = correction_head(obs, cause, failure)
        whole = head if failure is not None else f"{head}\n{fresh_text}"
        correction = Observation(
            step=step,
            call_id=handle,
            tool=obs.tool,
            kind=obs.kind,
            target=obs.target,
            text=bound_text(whole, cap, rest_hint(handle, len(whole), cap)),
            span=span,
            full_chars=len(whole),
            is_error=failure is not None,
            seen=seen,
            corrects=obs.call_id,
        )
        live.correct([correction])  # one at a time: a whole read's covers that file's ranges
        made.append((correction, whole))
    return made


async def _whole_writer(live: LiveSteps, e: Entry, refresh: Refresher | None) -> int | None:
    """The step whose ``write_file`` put ``e`` out of date when the file is now exactly what
    that call wrote (its digest, as a one-line read of it finds it), else None."""
    writer, path = e.stale_by, e.stale_path
    record = live.record_of(writer) if writer is not None else None
    if record is None or refresh is None or not live.written_copies(path, writer or 0):
        return None
    contents = [
        c.arguments.get("content")
        for o in record.observations
        if o.tool in WHOLE_WRITES and not o.is_error and posixpath.normpath(o.target) == path
        for c in record.tool_calls
        if c.id == o.call_id
    ]
    if len(contents) != 1 or not isinstance(contents[0], str):
        return None
    probe = Observation(e.obs.step, "", "read_file", ObsKind.READ, path, "", span=range_span(1, 1))
    try:
        _, seen = await refresh(probe)
    except (RefreshFailed, OSError):
        return None
    now = next((s.digest for s in seen if s.path == path), "")
    return writer if now and content_digest(contents[0].encode()) == now else None


def _written(
    live: LiveSteps, e: Entry, cause: str, writer: int, step: int
) -> tuple[Observation, str]:
    """One line correcting every copy of ``e``'s file that step ``writer``'s whole write put
    out of date: that write's call holds the file as it is (``stubs.correction_written``)."""
    copies = live.written_copies(e.stale_path, writer)
    named = [f"step {c.obs.step}'s {c.obs.kind.value}" for c in copies]
    return _pointer(live, e, correction_written(e.obs, cause, writer, named), step)


def _pointer(
    live: LiveSteps, e: Entry, text: str, step: int, seen: tuple[Seen, ...] = ()
) -> tuple[Observation, str]:
    """A correction of ``e`` that is one line pointing to the agent's own write or edit; an
    edit's is watched from what its read saw (``seen``), the lines it stands for."""
    correction = Observation(
        step=step,
        call_id=_handle(live, e.obs, step),
        tool=e.obs.tool,
        kind=e.obs.kind,
        target=e.obs.target,
        text=text,
        span=e.obs.span,
        full_chars=len(text),
        seen=seen,
        corrects=e.obs.call_id,
    )
    live.correct([correction])
    return correction, text


async def _moved(
    obs: Observation, refresh: Refresher, wholes: dict[str, Fresh | None]
) -> tuple[str, tuple[Seen, ...], str] | None:
    """Where the lines a range read showed are now, when a line inserted or deleted above them
    moved them, every one as it was: the range read of them there (its text, what it saw, its
    span). The copy above then needs no correction but their numbers (``stubs.correction_moved``)."""
    if obs.target not in wholes:
        try:
            wholes[obs.target] = await refresh(replace(obs, span=""))
        except (RefreshFailed, OSError):
            wholes[obs.target] = None
    whole = wholes[obs.target]
    old = numbered_lines(copy_of(obs.text))
    new = numbered_lines(whole.text) if whole is not None else None
    if whole is None or old is None or new is None or old[0] != new[0]:
        return None
    texts = [t for _, t in old[1]]
    if sum(len(t.strip()) for t in texts) < MOVED_CHARS:  # too little to tell where it went
        return None
    now = [t for _, t in new[1]]
    was = old[1][0][0]
    found = [i for i in range(len(now) - len(texts) + 1) if now[i : i + len(texts)] == texts]
    if not found:
        return None
    at = min(found, key=lambda i: abs(new[1][i][0] - was))  # the nearest, if it repeats
    first, last = new[1][at][0], new[1][at + len(texts) - 1][0]
    text = range_from(whole.text, first, last)
    if text is None:
        return None
    return text, whole.seen, range_span(first, last)


async def _own_edit(
    live: LiveSteps, e: Entry, old: list[tuple[int, str]] | None, refresh: Refresher
) -> tuple[int, int, int, int, int | None, tuple[Seen, ...]] | None:
    """When the agent's ``edit_file`` that put ``e`` (a range read) out of date is the only
    change to its lines (``old``: the lines its copy shows, ``_shown_lines``): that step,
    where the edited lines are now (first, last, the file's line count), found where the copy
    began or else in a read around them (one the read policy may refuse as too long), the
    copy's line the edit's old text begins at when the copy ends inside it, and what that
    read saw; else None."""
    writer, obs = e.stale_by, e.obs
    if writer is None or old is None or not obs.span:
        return None
    edited = _edited(live, writer, e.stale_path, [t for _, t in old])
    if edited is None:
        return None
    after, begins = edited
    first = old[0][0]
    reach = FOLLOW_LINES + len(after)
    # where the copy began first (the edit moved nothing above it), then all around it
    for low, high in ((first, first + len(after) - 1), (first - reach, first + reach)):
        try:
            wide, seen = await refresh(replace(obs, span=range_span(max(1, low), high)))
        except (RefreshFailed, OSError):
            continue
        new, total = numbered_lines(wide), RANGE.search(wide.rpartition("\n")[2])
        if new is None or total is None:
            continue
        now = [t for _, t in new[1]]
        found = [i for i in range(len(now) - len(after) + 1) if now[i : i + len(after)] == after]
        if found:
            at = min(found, key=lambda i: abs(new[1][i][0] - first))
            top = new[1][at][0]
            where = None if begins is None else old[begins][0]
            return writer, top, top + len(after) - 1, int(total[3]), where, seen
    return None


def _edited(
    live: LiveSteps, writer: int, path: str | None, lines: list[str]
) -> tuple[list[str], int | None] | None:
    """``lines`` with step ``writer``'s one ``edit_file`` of ``path`` applied
    (``stubs.apply_edit``: its old text in them once, or they end inside it); else None."""
    record = live.record_of(writer)
    if record is None:
        return None
    edits = [
        c.arguments
        for o in record.observations
        if o.tool == "edit_file" and not o.is_error and posixpath.normpath(o.target) == path
        for c in record.tool_calls
        if c.id == o.call_id
    ]
    if len(edits) != 1 or not lines:
        return None
    edit_old, edit_new = edits[0].get("old"), edits[0].get("new")
    if not isinstance(edit_old, str) or not isinstance(edit_new, str):
        return None
    return apply_edit(lines, edit_old, edit_new)


def _shown_lines(live: LiveSteps, e: Entry, depth: int = 0) -> list[tuple[int, str]] | None:
    """The numbered lines ``e``'s copy shows: its own, or, for a correction pointing to the
    agent's edit (``stubs.correction_edited``), the lines of the copy it corrects with that
    edit applied, numbered from where the pointer says they stand, back along a chain of
    such pointers (each was checked against the file when it was made). None when a copy or
    an edit on the way is no longer in the window."""
    edited = edited_by(e.obs.text)
    if edited is None:
        found = numbered_lines(copy_of(e.obs.text))
        return found[1] if found is not None and found[1] else None
    base = live.corrected_by(e)
    if base is None or depth >= MAX_POINTERS:
        return None
    writer, first, last = edited
    lines = _shown_lines(live, base, depth + 1)
    after = _edited(live, writer, posixpath.normpath(e.obs.target), [t for _, t in lines or ()])
    if after is None or len(after[0]) != last - first + 1:
        return None
    return [(first + i, text) for i, text in enumerate(after[0])]


MAX_POINTERS = 8  # edit pointers followed back to the copy they apply to


async def _still_shown(
    live: LiveSteps, e: Entry, shown: list[tuple[int, str]] | None, refresh: Refresher
) -> bool:
    """Whether ``e``, a correction pointing to the agent's edit, stands for the lines its file
    holds now at the numbers it gives (``shown``: a change elsewhere in the file changed none
    of them): then it is current, watched from this read of them on."""
    if not shown or edited_by(e.obs.text) is None:
        return False
    try:
        text, seen = await refresh(replace(e.obs, span=range_span(shown[0][0], shown[-1][0])))
    except (RefreshFailed, OSError):
        return False
    now = numbered_lines(text)
    if now is None or now[1] != shown:
        return False
    live.revalidate(e, seen)
    return True


async def _followed(
    obs: Observation, refresh: Refresher
) -> tuple[str, tuple[Seen, ...], str] | None:
    """The range a range read's lines span now, when an edit above or inside it moved them:
    found in a wider read around them by matching lines (``difflib``), so the correction is
    the edit itself rather than every line shifted under fixed numbers. None when most of the
    lines are gone, or they did not move."""
    old = numbered_lines(copy_of(obs.text))
    if old is None or not old[1]:
        return None
    texts = [t for _, t in old[1]]
    first, last = old[1][0][0], old[1][-1][0]
    reach = max(FOLLOW_LINES, 2 * len(texts))
    low = max(1, first - reach)
    try:
        wide, seen = await refresh(replace(obs, span=range_span(low, last + reach)))
    except (RefreshFailed, OSError):
        return None
    new = numbered_lines(wide)
    if new is None or not new[1]:
        return None
    now = [t for _, t in new[1]]
    blocks = [
        b for b in SequenceMatcher(None, texts, now, autojunk=False).get_matching_blocks() if b.size
    ]
    if not blocks or 2 * sum(b.size for b in blocks) < len(texts):
        return None
    top = new[1][blocks[0].b][0] - blocks[0].a
    end = blocks[-1].b + blocks[-1].size - 1
    bottom = new[1][end][0] + len(texts) - blocks[-1].a - blocks[-1].size
    top, bottom = max(top, new[1][0][0]), min(bottom, new[1][-1][0])
    if (top, bottom) == (first, last) or top > bottom:
        return None
    text = range_from(wide, top, bottom)
    return None if text is None else (text, seen, range_span(top, bottom))


FOLLOW_LINES = 60  # how far around a range read its lines are looked for after an edit
MOVED_CHARS = 40  # the least a range must hold to be found elsewhere in its file


def _handle(live: LiveSteps, obs: Observation, step: int) -> str:
    """The correction's call id, its handle for ``recall_result``: the first call's id at
    ``step`` (``c3@8``), numbered on when that one is taken."""
    root = obs.call_id.split("@", 1)[0]
    handle, n = f"{root}@{step}", 1
    while live.knows(handle):
        n += 1
        handle = f"{root}@{step}.{n}"
    return handle
