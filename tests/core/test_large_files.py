"""Large files stay reachable: a byte range of a very long line, a cut line marked with where
to read on, and grep streaming a file too large to read whole, saying what it did."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from io_tui.core.boundary.workspace import Workspace
from io_tui.core.tools.base import Tool, ToolContext, ToolError, ToolOutcome
from io_tui.core.tools.files import ReadFile
from io_tui.core.tools.search import MAX_GREP_FILE_BYTES, Grep

TEN_MB = 10 * 1024 * 1024


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    root = tmp_path / "ws"
    root.mkdir()
    line = bytearray(b"a" * TEN_MB)
    line[7_000_000:7_000_006] = b"NEEDLE"
    (root / "one-line.json").write_bytes(bytes(line))
    many = b"".join(b"row %d\n" % i for i in range(900_000)) + b"the NEEDLE at the end\n"
    (root / "big.log").write_bytes(many)
    return ToolContext(workspace=Workspace(root), run_id=1, step=1, cap_chars=20_000)


async def call(tool: Tool, ctx: ToolContext, **raw: Any) -> ToolOutcome:
    return await tool.run(tool.parse(raw), ctx)


async def test_one_long_line_is_shown_cut_and_says_where_to_read_on(ctx: ToolContext) -> None:
    out = await call(ReadFile(), ctx, path="one-line.json", offset=1, limit=1)
    assert len(out.text) <= ctx.cap_chars
    mark = re.search(r"read on with byte_offset=(\d+), byte_limit=(\d+)", out.text)
    assert mark is not None and "line 1 cut" in out.text
    rest = await call(
        ReadFile(), ctx, path="one-line.json", byte_offset=int(mark[1]), byte_limit=int(mark[2])
    )
    assert rest.text.startswith(f"[bytes {int(mark[1]):,}-")
    assert "bytes follow: byte_offset=" in rest.text.splitlines()[0]


async def test_a_byte_range_reads_the_middle_of_a_huge_line(ctx: ToolContext) -> None:
    out = await call(ReadFile(), ctx, path="one-line.json", byte_offset=6_999_990, byte_limit=30)
    head, body = out.text.split("\n", 1)
    assert head.startswith("[bytes 6,999,990-7,000,020 of one-line.json (10,485,760 bytes)")
    assert body == "a" * 10 + "NEEDLE" + "a" * 14
    assert out.span == "bytes 6999990-7000020"


async def test_a_byte_range_is_cut_to_what_one_observation_holds(ctx: ToolContext) -> None:
    out = await call(ReadFile(), ctx, path="one-line.json", byte_offset=0, byte_limit=TEN_MB)
    assert len(out.text) <= ctx.cap_chars and "cut to" in out.text.splitlines()[0]


async def test_lines_and_bytes_are_not_mixed(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="not both"):
        ReadFile().parse({"path": "big.log", "offset": 1, "byte_offset": 0})
    with pytest.raises(ToolError, match="past the end"):
        await call(ReadFile(), ctx, path="big.log", byte_offset=10**9)


async def test_grep_streams_large_files_and_says_so(ctx: ToolContext) -> None:
    assert (Path(ctx.workspace.root) / "big.log").stat().st_size > MAX_GREP_FILE_BYTES
    out = await call(Grep(), ctx, pattern="NEEDLE")
    lines = out.text.splitlines()
    assert "big.log:900001:the NEEDLE at the end" in lines
    long_hit = next(line for line in lines if line.startswith("one-line.json:1:"))
    assert "byte 6,999,900" in long_hit and "NEEDLE" in long_hit and len(long_hit) < 400
    assert any("searched by streaming" in line for line in lines)
    assert any("searched in 1 MiB pieces" in line for line in lines)
    assert {s.path for s in out.seen} == {"big.log", "one-line.json"}
