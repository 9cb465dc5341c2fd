"""write_file and edit_file write atomically: a temporary file beside the target, synced, the
target's mode kept, renamed into place. On a full disk (a real tmpfs, filled) the old file stays
byte-identical, a new one is not made, no temporary file is left, and the model is told so."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from small_disk import fill, small_disk

from io_tui.core.boundary.workspace import Workspace
from io_tui.core.tools.base import Tool, ToolContext, ToolError, ToolOutcome
from io_tui.core.tools.files import EditFile, WriteFile


def context(root: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root), run_id=1, step=1, cap_chars=10_000)


async def call(tool: Tool, ctx: ToolContext, **raw: Any) -> ToolOutcome:
    return await tool.run(tool.parse(raw), ctx)


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


async def test_a_write_keeps_the_files_mode_and_leaves_nothing_beside_it(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text("echo old\n")
    os.chmod(tmp_path / "run.sh", 0o750)
    ctx = context(tmp_path)
    await call(WriteFile(), ctx, path="run.sh", content="echo new\n")
    await call(EditFile(), ctx, path="run.sh", old="new", new="newer")
    assert (tmp_path / "run.sh").read_text() == "echo newer\n"
    assert stat.S_IMODE((tmp_path / "run.sh").stat().st_mode) == 0o750
    old_mask = os.umask(0o027)
    try:
        await call(WriteFile(), ctx, path="sub/new.txt", content="x")
    finally:
        os.umask(old_mask)
    assert stat.S_IMODE((tmp_path / "sub" / "new.txt").stat().st_mode) == 0o640
    assert listing(tmp_path) == ["run.sh", "sub"] and listing(tmp_path / "sub") == ["new.txt"]


async def test_a_write_through_a_link_replaces_the_file_it_points_at(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to("real.txt")
    await call(WriteFile(), context(tmp_path), path="link.txt", content="new")
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "real.txt").read_text() == "new"


async def test_a_write_on_a_full_disk_leaves_the_old_file_byte_identical(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", "1m") as disk:
        old = os.urandom(100_000)
        (disk / "data.bin").write_bytes(old)
        fill(disk, leave=40_000)
        ctx = context(disk)
        with pytest.raises(ToolError) as refused:
            await call(WriteFile(), ctx, path="data.bin", content="y" * 300_000)
        assert str(refused.value) == (
            "could not write data.bin: No space left on device; its old content is intact"
        )
        assert (disk / "data.bin").read_bytes() == old
        with pytest.raises(ToolError) as refused:
            await call(WriteFile(), ctx, path="new.txt", content="z" * 300_000)
        assert str(refused.value) == (
            "could not write new.txt: No space left on device; it was not created"
        )
        assert not (disk / "new.txt").exists()
        assert listing(disk) == ["data.bin", "filler"]  # no temporary file left behind
        (disk / "small.txt").write_text("a\n" * 10)
        with pytest.raises(ToolError, match="its old content is intact"):
            await call(EditFile(), ctx, path="small.txt", old="a\n" * 10, new="b" * 300_000)
        assert (disk / "small.txt").read_text() == "a\n" * 10
