"""A write killed between its temporary file and the rename (``replace_atomically``) leaves
that file beside its target; the driver that resumes the run removes it before it reconciles
the call, whatever the operator then decides (``run/reconcile.py``, ``run/loop.py``), and the
``reconciled`` event names it. Describing the call (``what_is_known``) changes nothing."""

from __future__ import annotations

import os
import time
from pathlib import Path

from io_tui.core.boundary.workspace import Workspace
from io_tui.core.run.reconcile import discard_unfinished, what_is_known
from io_tui.core.store.intents import IntentRow


def intent(target: str, started_at: float, before: dict | None) -> IntentRow:
    args = {"path": target, "content": "file 5\n"}
    return IntentRow(
        1, 1, 5, "c5", "write_file", args, "write", target, None,
        before, "started", started_at, None,
    )  # fmt: skip


def test_a_killed_writes_temporary_file_goes_before_the_call_is_reconciled(
    tmp_path: Path,
) -> None:
    src = tmp_path / "src"
    src.mkdir()
    older = src / ".f5.txt.old00000.io-tui"  # made before this call started: not its own
    older.write_text("an earlier writer's")
    os.utime(older, (time.time() - 60, time.time() - 60))
    started = time.time()
    leftover = src / ".f5.txt.qj4j3bqs.io-tui"
    leftover.write_text("file 5\n")
    (src / "f5.txt").write_text("file 5\n")
    (src / ".g.txt.abcdefgh.io-tui").write_text("another file's")
    workspace = Workspace(tmp_path)
    write = intent("src/f5.txt", started, {"exists": False, "text": ""})

    what_is_known(1, write, workspace)
    assert leftover.exists()  # describing the call removes nothing

    assert discard_unfinished(write, workspace) == [leftover.name]
    assert not leftover.exists()
    assert older.exists() and (src / ".g.txt.abcdefgh.io-tui").exists()
    assert (src / "f5.txt").read_text() == "file 5\n"
    # not a file write (a command with that target), or nothing left: nothing removed
    leftover.write_text("again")
    assert discard_unfinished(intent("src/f5.txt", started, None), workspace) == []
    assert discard_unfinished(intent("src/none.txt", started, {}), workspace) == []
