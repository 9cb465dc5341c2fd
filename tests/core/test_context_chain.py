"""A file corrected again and again is sent as the difference from its last correction, not
from the copy sent whole at the start (``live._chained``): an agent that edits a file it read
whole, one line at a time, pays for each edit once instead of for every edit since its read in
each correction (on the real session mini__pytest-5787, 4,300-char differences became
50-200). A chain is at most ``MAX_CHAIN`` long; a correction of a range read whose lines an
edit inside it moved is still sent as the difference from the copy it corrects."""

from __future__ import annotations

import re
from pathlib import Path

from engine_run import answered, ask

from io_tui.core.context.engine import ContextEngine
from io_tui.core.context.frame import Frame
from io_tui.core.context.live import MAX_CHAIN
from io_tui.core.context.manifest import Assembly, EntryState
from io_tui.core.context.stubs import apply_echo, copy_of
from io_tui.core.contract import Compaction, TaskContract
from io_tui.core.ledger import StepRecord
from tests.core.test_context_moved import File, edit, read, read_result


def engine_for(file: File) -> ContextEngine:
    contract = TaskContract("fix", Path("/ws"), compaction=Compaction(enabled=False))
    return ContextEngine(Frame("S", (), contract), refresh=file.refresh)


def corrections(assembly: Assembly) -> dict[str, str]:
    """The corrections a request carries, by their first line."""
    return {
        m.content.partition("\n")[0]: m.content
        for m in assembly.messages
        if m.role == "user" and m.content.startswith("[correction of step ")
    }


BASE = re.compile(r"; step (\d+)'s copy above is out of date in these lines")


async def test_each_correction_of_a_file_edited_line_by_line_is_the_difference_from_the_last(
    tmp_path: Path,
) -> None:
    file = File()
    engine = engine_for(file)
    done: list[StepRecord] = []
    edits = MAX_CHAIN + 2
    last: Assembly | None = None
    for step in range(1, 2 * edits + 2):
        assembly = await ask(engine, done, step, 24_000)
        if last is not None:  # append-only: no rewrite is worth it for these
            assert assembly.messages[: len(last.messages)] == last.messages
        last = assembly
        if step == 1:
            record = read(1, file)
        elif step % 2 == 0:  # an edit changes one line far from the others
            file.lines[10 * step] = f"def g{step}(x):  # changed at step {step}"
            record = edit(step)
        else:
            record = StepRecord(step, f"turn {step}")
        done.append(answered(record, assembly))
    assert last is not None
    fixes = list(corrections(last).values())
    assert len(fixes) == edits
    # each stands for the file as it was when it was made: the chain applied in order
    whole = {1: next(m.content for m in last.messages if m.tool_call_id == "c1")}
    steps = [int(re.match(r"\[correction of step (\d+)'s", f)[1]) for f in fixes]  # type: ignore[index]
    placed = [s + 1 for s in range(2, 2 * edits + 1, 2)]  # at the boundary after each edit
    assert steps == [1, *placed[:-1]]
    bases = []
    for at, fix in zip(placed, fixes, strict=True):
        found = BASE.search(fix.partition("\n")[0])
        assert found is not None, fix  # a difference, never the file again
        base = int(found[1])
        bases.append(base)
        whole[at] = apply_echo(whole[base], fix)
        changed = [x for x in fix.split("\n")[1:] if x.startswith("+")]
        # the difference from the last correction holds the newest edit alone; from the read
        # sent whole, every edit since
        assert len(changed) == (1 if base != 1 else placed.index(at) + 1), fix
    # chained links, at most MAX_CHAIN of them, then from the copy sent whole again
    assert bases == [1, *placed[: MAX_CHAIN - 1], 1, placed[MAX_CHAIN]][:edits]
    assert copy_of(whole[placed[-1]]) == read_result(file.lines)
    states = {e.call_id: e.state for e in last.entries}
    assert states["c1"] is EntryState.CORRECTED


async def test_a_range_whose_end_an_edit_inside_moved_is_corrected_as_a_difference() -> None:
    file = File()
    engine = engine_for(file)
    done: list[StepRecord] = []
    records = [read(1, file, "lines 100-140")]
    for step in (1, 2, 3):
        assembly = await ask(engine, done, step, 24_000)
        if step == 2:  # step 2's edit inserts a line inside the range
            file.lines[119:120] = [file.lines[119], "    pass  # inserted"]
            records.append(edit(2))
        if step == 3:
            records.append(StepRecord(3, "turn 3"))
        done.append(answered(records[step - 1], assembly))
    last = await ask(engine, done, 4, 24_000)
    [fix] = corrections(last).values()
    head = fix.partition("\n")[0]
    assert head.startswith("[correction of step 1's read of a.py (lines 100-140)")
    assert BASE.search(head) is not None, fix  # the inserted line, not 42 lines again
    assert len(fix.split("\n")) < 8, fix
    copy = next(m.content for m in last.messages if m.tool_call_id == "c1")
    assert copy_of(apply_echo(copy, fix)) == read_result(file.lines, "lines 100-141")
