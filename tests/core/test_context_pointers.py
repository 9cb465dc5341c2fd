"""A copy the agent's own write or edit put out of date is corrected by one line pointing to
that call, which holds the new text (``correct.py``, ``stubs.correction_written`` and
``correction_edited``): the same lines are not sent again after every edit."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

from engine_run import answered, ask, grow
from test_context_moved import File, entry, read, read_result

from io_tui.core.context.engine import ContextEngine
from io_tui.core.context.frame import Frame
from io_tui.core.context.manifest import EntryState
from io_tui.core.context.refresh import Fresh, RefreshFailed
from io_tui.core.context.stubs import edited_by, points_to_call, written_by
from io_tui.core.contract import Compaction, TaskContract
from io_tui.core.ledger import Observation, ObsKind, Seen, StepRecord, content_digest
from io_tui.core.providers.messages import ToolCall
from io_tui.core.text.numbered import span_lines


class SeenFile(File):
    """a.py, whose re-reads say what they saw (its digest), as the read tool's do."""

    async def refresh(self, obs: Observation) -> Fresh:
        data = self.text().encode()
        return Fresh(
            read_result(self.lines, obs.span), (Seen("a.py", len(data), 0, content_digest(data)),)
        )

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def call(step: int, tool: str, arguments: dict[str, str], text: str) -> StepRecord:
    obs = Observation(step, f"c{step}", tool, ObsKind.WRITE, "a.py", text)
    return StepRecord(step, f"turn {step}", (ToolCall(obs.call_id, tool, arguments),), (obs,))


def engine_for(file: File) -> ContextEngine:
    contract = TaskContract("fix", Path("/ws"), compaction=Compaction(enabled=False))
    return ContextEngine(Frame("S", (), contract), refresh=file.refresh)


def corrections(assembly) -> list[str]:
    return [m.content for m in assembly.messages if m.content.startswith("[correction of step ")]


def stepping(engine: ContextEngine) -> tuple[list[StepRecord], Callable[[StepRecord], Awaitable[None]]]:  # fmt: skip
    """The steps answered so far, and what answers one more: the request for it, as a run
    asks for each step in turn."""
    done: list[StepRecord] = []

    async def step(record: StepRecord) -> None:
        done.append(answered(record, await ask(engine, done, record.step, 24_000)))

    return done, step


def copied_lines(assembly, call_id: str) -> list[str]:
    """The lines a range read's copy shows in ``assembly``, without their numbers."""
    copy = next(m.content for m in assembly.messages if m.tool_call_id == call_id)
    return [line.partition("│")[2] for line in copy.split("\n")[1:-1]]


async def edited_after_read(file: SeenFile, at: slice, new: str) -> tuple[str, str, list, list]:
    """Step 1 reads lines 100-130 of ``file``; step 2's ``edit_file`` replaces its lines ``at``
    by ``new``. The edit's old text, its one correction, and the requests before and after."""
    engine = engine_for(file)
    records = [read(1, file, "lines 100-130")]
    before = await grow(engine, records, 24_000)
    old = "".join(line + "\n" for line in file.lines[at])
    file.lines[at] = new.rstrip("\n").split("\n")
    records.append(call(2, "edit_file", {"path": "a.py", "old": old, "new": new}, "edited a.py"))
    after = await grow(engine, records, 24_000)
    [fix] = corrections(after[-1])
    return old, fix, before, after


async def test_an_edit_inside_a_range_is_corrected_by_pointing_to_the_edit() -> None:
    file = SeenFile()
    new = "def f110(x):  # rewritten\n    return x\n"  # one line becomes two
    old, fix, built, after = await edited_after_read(file, slice(109, 110), new)
    last = after[-1]
    assert fix == (
        "[correction of step 1's read of a.py (lines 100-130): step 2 wrote it after this "
        "read; step 2's edit_file call above made step 1's copy above lines 100-131 of 201: "
        "its old text replaced by its new]"
    )
    assert edited_by(fix) == (2, 100, 131) and points_to_call(fix)
    lines = copied_lines(last, "c1")
    edited = ("\n".join(lines) + "\n").replace(old, new, 1).removesuffix("\n").split("\n")
    assert edited == file.lines[99:131]  # what the pointer says the lines are, they are
    assert entry(last, "c1").state is EntryState.CORRECTED
    assert last.messages[: len(built[-1].messages)] == built[-1].messages  # only appended


async def test_an_edit_that_is_not_the_only_change_sends_the_lines() -> None:
    file = SeenFile()
    engine = engine_for(file)
    records = [read(1, file, "lines 100-130")]
    await grow(engine, records, 24_000)
    old = file.lines[109] + "\n"
    file.lines[109] = "def f110(x):  # rewritten"
    file.lines[120] = "def f121(x):  # changed by something else too"
    edit = {"path": "a.py", "old": old, "new": file.lines[109] + "\n"}
    records.append(call(2, "edit_file", edit, "edited a.py"))
    last = (await grow(engine, records, 24_000))[-1]
    [fix] = corrections(last)
    assert not points_to_call(fix) and "changed by something else too" in fix


async def test_a_whole_write_corrects_every_copy_of_the_file_in_one_line() -> None:
    file = SeenFile()
    engine = engine_for(file)
    records = [read(1, file, "lines 100-130"), read(2, file, "lines 150-170")]
    await grow(engine, records, 24_000)
    file.lines = [f"line {i} of the new module" for i in range(1, 51)]
    records.append(call(3, "write_file", {"path": "a.py", "content": file.text()}, "wrote a.py"))
    last = (await grow(engine, records, 24_000))[-1]
    [fix] = corrections(last)
    assert fix == (
        "[correction of step 1's read of a.py (lines 100-130): step 3 wrote it after this "
        "read; out of date above: step 1's read, step 2's read; step 3's write_file call "
        "above holds a.py whole, as it wrote it]"
    )
    assert written_by(fix) == 3
    assert {entry(last, c).state for c in ("c1", "c2")} == {EntryState.CORRECTED}


async def test_a_write_the_file_no_longer_holds_is_not_pointed_to() -> None:
    file = SeenFile()
    engine = engine_for(file)
    records = [read(1, file, "lines 100-130")]
    await grow(engine, records, 24_000)
    written = "\n".join(f"line {i}" for i in range(1, 200)) + "\n"
    file.lines = [f"line {i}" for i in range(1, 200)]
    file.lines[110] = "changed on disk after the write"
    records.append(call(2, "write_file", {"path": "a.py", "content": written}, "wrote a.py"))
    last = (await grow(engine, records, 24_000))[-1]
    [fix] = corrections(last)
    assert not points_to_call(fix) and "changed on disk after the write" in fix


async def test_a_range_whose_lines_stayed_put_needs_no_correction() -> None:
    file = SeenFile()
    engine = engine_for(file)
    records = [read(1, file, "lines 10-30")]
    await grow(engine, records, 24_000)
    old = file.lines[150] + "\n"
    file.lines[150:151] = ["def f151(x):", "    return x"]  # below the range: a line added
    records.append(
        call(
            2,
            "edit_file",
            {"path": "a.py", "old": old, "new": "def f151(x):\n    return x\n"},
            "edited",
        )
    )
    last = (await grow(engine, records, 24_000))[-1]
    assert corrections(last) == []  # every line it shows is where it was
    assert entry(last, "c1").state is EntryState.FULL


async def test_lines_an_edit_pointer_stands_for_are_corrected_when_they_change_again() -> None:
    file = SeenFile()
    engine = engine_for(file)
    done, step = stepping(engine)
    await step(read(1, file, "lines 100-130"))
    old, new = file.lines[109] + "\n", "def f110(x):  # first edit\n"
    await step(call(2, "edit_file", {"path": "a.py", "old": old, "new": new}, "ok"))
    file.lines[109] = new.rstrip("\n")  # what step 2 did
    await step(call(3, "run_command", {"argv": "sed"}, "ran sed"))
    file.lines[120] = "def f121(x):  # changed on disk later"  # what step 3 did
    last = await ask(engine, done, 4, 24_000)
    pointer, fix = corrections(last)
    assert points_to_call(pointer) and pointer.startswith("[correction of step 1's read")
    assert fix.startswith("[correction of step 3's read of a.py (lines 100-130): step 3 wrote it")
    assert "changed on disk later" in fix and "first edit" in fix  # the lines as they are


async def test_an_edit_of_lines_an_edit_pointer_stands_for_is_pointed_to_in_turn() -> None:
    """The copy a pointer corrects, with its edit applied, is what the pointer shows: a second
    edit of those lines is one line pointing to it too (a real session sent them whole, 3 KB,
    after each of three edits), and the two edits applied to the first copy give the file."""
    file = SeenFile()
    engine = engine_for(file)
    done, step = stepping(engine)
    await step(read(1, file, "lines 100-130"))
    first_old, first_new = file.lines[109] + "\n", "def f110(x):  # first edit\n    return x\n"
    await step(call(2, "edit_file", {"path": "a.py", "old": first_old, "new": first_new}, "ok"))
    file.lines[109:110] = first_new.rstrip("\n").split("\n")
    second_old, second_new = "    return x\n", "    return x + 1  # second edit\n"
    await step(call(3, "edit_file", {"path": "a.py", "old": second_old, "new": second_new}, "ok"))
    file.lines[110] = second_new.rstrip("\n")
    last = await ask(engine, done, 4, 24_000)
    first, second = corrections(last)
    assert edited_by(first) == (2, 100, 131)
    assert second == (
        "[correction of step 3's read of a.py (lines 100-130): step 3 wrote it after this "
        "read; step 3's edit_file call above made step 3's copy above lines 100-131 of 201: "
        "its old text replaced by its new]"
    )
    lines = copied_lines(last, "c1")
    text = "\n".join(lines) + "\n"
    for old, new in ((first_old, first_new), (second_old, second_new)):
        text = text.replace(old, new, 1)
    assert text.removesuffix("\n").split("\n") == file.lines[99:131]
    assert entry(last, "c1").state is EntryState.CORRECTED


async def test_an_edit_pointer_whose_lines_a_change_elsewhere_left_alone_stays_current() -> None:
    """A write below the lines an edit pointer stands for leaves them as the pointer says: it
    is current, and no correction sends those lines again (one did, 3 KB, in a real session)."""
    file = SeenFile()
    engine = engine_for(file)
    done, step = stepping(engine)
    await step(read(1, file, "lines 100-130"))
    old, new = file.lines[109] + "\n", "def f110(x):  # edited\n"
    await step(call(2, "edit_file", {"path": "a.py", "old": old, "new": new}, "ok"))
    file.lines[109] = new.rstrip("\n")
    await step(call(3, "run_command", {"argv": "sed"}, "ran sed"))
    file.lines[180] = "def f181(x):  # changed below the range"  # what step 3 did
    last = await ask(engine, done, 4, 24_000)
    [pointer] = corrections(last)
    assert edited_by(pointer) == (2, 100, 130)
    assert entry(last, "c1").state is EntryState.CORRECTED


async def test_an_edit_whose_old_text_runs_past_the_range_is_pointed_to_from_where_it_begins() -> None:  # fmt: skip
    """The copy ends inside the edit's old text (the agent replaced a function that begins in
    the lines read and ends below them): one line pointing to the edit from the copy's line
    the old text begins at; the copy's lines before it, then the edit's new text, are the
    file's lines now."""
    file = SeenFile()
    new = "def f128(x):  # rewritten\n    return x\n"
    _, fix, _, after = await edited_after_read(file, slice(127, 135), new)  # 128-135: 3 in it
    last = after[-1]
    assert fix == (
        "[correction of step 1's read of a.py (lines 100-130): step 2 wrote it after this "
        "read; step 2's edit_file call above made step 1's copy above lines 100-129 of 194: "
        "its old text, which begins at that copy's line 128, replaced by its new]"
    )
    assert edited_by(fix) == (2, 100, 129) and points_to_call(fix)
    lines = copied_lines(last, "c1")
    assert lines[:28] + new.rstrip("\n").split("\n") == file.lines[99:129]
    assert entry(last, "c1").state is EntryState.CORRECTED


class CappedFile(SeenFile):
    """A file whose reads of more than ``LIMIT`` lines are refused, as the read tool refuses a
    range that would take more than one observation holds."""

    LIMIT = 120

    async def refresh(self, obs: Observation) -> Fresh:
        lines = span_lines(obs.span)
        if lines is None or lines[1] - lines[0] + 1 > self.LIMIT:
            raise RefreshFailed(f"{obs.span} would take more than one observation holds")
        return await super().refresh(obs)


async def test_an_edit_too_long_to_look_around_is_found_where_the_copy_began() -> None:
    """The edit makes the copy's lines longer than a read around them may be: they are found
    where the copy began, and the correction is still the pointer."""
    new = "".join(f"    step_{i}(x)\n" for i in range(80))
    _, fix, _, _ = await edited_after_read(CappedFile(), slice(109, 110), new)
    assert edited_by(fix) == (2, 100, 209), fix
