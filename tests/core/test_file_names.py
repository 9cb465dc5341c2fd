"""Every byte of a file name: names that are not UTF-8 (or hold controls) are listed, found and
grepped, shown escaped, and taken back as they were shown."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from io_tui.core.boundary.workspace import Workspace
from io_tui.core.tools.base import Tool, ToolContext, ToolOutcome
from io_tui.core.tools.files import ListDir, ReadFile, WriteFile
from io_tui.core.tools.search import Find, Grep

BAD = b"bad\xff\xfe.txt"
SHOWN = "bad\\xff\\xfe.txt"


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    with open(os.path.join(os.fsencode(root), BAD), "wb") as f:
        f.write(b"hello needle\n")
    with open(os.path.join(os.fsencode(root / "sub"), b"line\nbreak\x1b[2J.txt"), "wb") as f:
        f.write(b"needle too\n")
    return ToolContext(workspace=Workspace(root), run_id=1, step=1, cap_chars=10_000)


def _bytes(path: bytes) -> bytes:
    with open(path, "rb") as f:
        return f.read()


async def call(tool: Tool, ctx: ToolContext, **raw: Any) -> ToolOutcome:
    out = await tool.run(tool.parse(raw), ctx)
    (out.text + out.target).encode("utf-8")  # storable: no surrogate reaches the store
    return out


async def test_listed_found_and_grepped_escaped(ctx: ToolContext) -> None:
    assert SHOWN in (await call(ListDir(), ctx)).text.splitlines()
    assert (await call(Find(), ctx, pattern="*.txt")).text.splitlines() == [
        SHOWN,
        "sub/line\\x0abreak\\x1b[2J.txt",
    ]
    hits = (await call(Grep(), ctx, pattern="needle")).text.splitlines()
    assert hits == [f"{SHOWN}:1:hello needle", "sub/line\\x0abreak\\x1b[2J.txt:1:needle too"]


async def test_a_shown_name_is_taken_back_as_it_is_on_disk(ctx: ToolContext) -> None:
    read = await call(ReadFile(), ctx, path=SHOWN)
    assert "hello needle" in read.text and read.target == SHOWN
    inner = await call(ReadFile(), ctx, path="sub/line\\x0abreak\\x1b[2J.txt")
    assert "needle too" in inner.text
    await call(WriteFile(), ctx, path=SHOWN, content="rewritten\n")
    root = os.fsencode(ctx.workspace.root)
    assert _bytes(os.path.join(root, BAD)) == b"rewritten\n"
    assert sorted(os.listdir(root)) == [BAD, b"sub"]  # no second file under the shown name
    grep = await call(Grep(), ctx, pattern="rewritten", path=SHOWN)
    assert grep.text == f"{SHOWN}:1:rewritten"


async def test_a_literal_backslash_name_still_wins(tmp_path: Path) -> None:
    root = tmp_path / "lit"
    root.mkdir()
    (root / "a\\xff.txt").write_text("literal\n")
    ctx = ToolContext(workspace=Workspace(root), run_id=1, step=1, cap_chars=10_000)
    assert "literal" in (await call(ReadFile(), ctx, path="a\\xff.txt")).text
