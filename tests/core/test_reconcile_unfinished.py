"""A write killed between its temporary file and the rename (``replace_atomically``) leaves
that file beside its target; resuming the run removes it, whatever the operator then decides,
and says so in what is known of the call (``run/reconcile.py``)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from io_tui.core.boundary.workspace import Workspace
from io_tui.core.run.reconcile import what_is_known
from io_tui.core.store.intents import IntentRow


def intent(target: str, started_at: float) -> IntentRow:
    args = {"path": target, "content": "file 5\n"}
    return IntentRow(
        1, 1, 5, "c5", "write_file", args, "write", target, None,
        {"exists": False, "text": ""}, "started", started_at, None,
    )  # fmt: skip


def test_a_killed_writes_temporary_file_goes_when_the_run_is_resumed(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    older = src / ".f5.txt.old00000.io-tui"  # made before this call started: not its own
    older.write_text("an earlier writer's")
    os.utime(older, (time.time() - 60, time.time() - 60))
    started = time.time()
    leftover = src / ".f5.txt.qj4j3bqs.io-tui"
    leftover.write_text("file 5\n")
    (src / "f5.txt").write_text("file 5\n")  # the rename that did land in another trial
    (src / ".g.txt.abcdefgh.io-tui").write_text("another file's")

    known = what_is_known(1, intent("src/f5.txt", started), Workspace(tmp_path))

    assert not leftover.exists()
    assert older.exists() and (src / ".g.txt.abcdefgh.io-tui").exists()
    assert (src / "f5.txt").read_text() == "file 5\n"
    assert "Its unfinished temporary file was removed: .f5.txt.qj4j3bqs.io-tui." in known.known


def test_nothing_is_said_when_no_temporary_file_was_left(tmp_path: Path) -> None:
    known = what_is_known(1, intent("f5.txt", time.time()), Workspace(tmp_path))
    assert "temporary" not in known.known
