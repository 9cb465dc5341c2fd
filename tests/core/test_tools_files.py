"""read_file, write_file, edit_file, list_dir: outputs, gates, and the errors the model reads."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from io_tui.core.authority.policy import Act
from io_tui.core.boundary.workspace import Workspace
from io_tui.core.ledger import ObsKind
from io_tui.core.tools.base import Gate, Tool, ToolContext, ToolError, ToolOutcome
from io_tui.core.tools.files import MAX_LIST_ENTRIES, EditFile, ListDir, ReadFile, WriteFile


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "ws"
    (r / "src").mkdir(parents=True)
    (r / "src" / "app.py").write_text("def parse(x):\n    return x\n\n\nprint(parse(1))\n")
    return r


@pytest.fixture
def ctx(root: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root), run_id=1, step=1, cap_chars=10_000)


async def call(tool: Tool, ctx: ToolContext, **raw: Any) -> ToolOutcome:
    return await tool.run(tool.parse(raw), ctx)


async def gate(tool: Tool, ctx: ToolContext, **raw: Any) -> Gate | None:
    return await tool.gate(tool.parse(raw), ctx)


# -- read_file --------------------------------------------------------------------------------


async def test_read_whole_file_with_line_numbers(ctx: ToolContext) -> None:
    out = await call(ReadFile(), ctx, path="src/app.py")
    assert out.text.splitlines() == [
        "   1│def parse(x):",
        "   2│    return x",
        "   3│",
        "   4│",
        "   5│print(parse(1))",
    ]
    assert (out.kind, out.target, out.span) == (ObsKind.READ, "src/app.py", "")


async def test_read_range_sets_span_and_says_where_it_is(ctx: ToolContext) -> None:
    out = await call(ReadFile(), ctx, path="./src/app.py", offset=2, limit=2)
    assert out.text.splitlines()[:2] == ["   2│    return x", "   3│"]
    assert "lines 2-3 of 5" in out.text
    assert out.span == "lines 2-3"
    assert out.target == "src/app.py"


async def test_range_past_the_end_is_clipped_and_offset_past_end_refused(ctx: ToolContext) -> None:
    out = await call(ReadFile(), ctx, path="src/app.py", offset=4, limit=100)
    assert out.span == "lines 4-5"
    with pytest.raises(ToolError, match="has 5 lines; offset 9 is past the end"):
        await call(ReadFile(), ctx, path="src/app.py", offset=9)


async def test_range_covering_the_whole_file_is_a_whole_read(ctx: ToolContext) -> None:
    out = await call(ReadFile(), ctx, path="src/app.py", offset=1, limit=50)
    assert out.span == ""


async def test_offset_and_limit_must_be_positive(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="offset"):
        ReadFile().parse({"path": "a", "offset": 0})
    with pytest.raises(ToolError, match="limit"):
        ReadFile().parse({"path": "a", "limit": 0})


async def test_unknown_argument_is_refused(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="file_path"):
        ReadFile().parse({"file_path": "a"})


async def test_oversized_file_is_refused_with_its_size(root: Path) -> None:
    (root / "big.txt").write_text("".join(f"line {i} " + "x" * 40 + "\n" for i in range(500)))
    ctx = ToolContext(workspace=Workspace(root), run_id=1, step=1, cap_chars=2_000)
    with pytest.raises(ToolError) as info:
        await call(ReadFile(), ctx, path="big.txt")
    message = str(info.value)
    assert "500 lines" in message
    assert f"{len((root / 'big.txt').read_text()):,} chars" in message
    assert "offset=1, limit=" in message
    # The suggested range really fits.
    limit = int(message.split("limit=")[1].split(",")[0])
    fits = await call(ReadFile(), ctx, path="big.txt", offset=1, limit=limit)
    assert len(fits.text) <= 2_000
    # An oversized range is refused as well, naming the range.
    with pytest.raises(ToolError, match="lines 100-400 would take"):
        await call(ReadFile(), ctx, path="big.txt", offset=100, limit=301)


async def test_read_empty_file(ctx: ToolContext, root: Path) -> None:
    (root / "empty.txt").write_text("")
    out = await call(ReadFile(), ctx, path="empty.txt")
    assert out.text == "(empty.txt is empty)"


@pytest.mark.parametrize(
    ("setup", "path", "message"),
    [
        (lambda r: None, "missing.py", "no such file"),
        (lambda r: None, "src", "is a directory"),
        (lambda r: (r / "b.bin").write_bytes(b"\0\1\2"), "b.bin", "binary file"),
        (lambda r: (r / "l.txt").write_bytes(b"caf\xe9"), "l.txt", "not UTF-8"),
        (lambda r: None, "../etc/passwd", "outside the workspace"),
    ],
)
async def test_read_errors_are_clear_tool_errors(
    ctx: ToolContext, root: Path, setup: Any, path: str, message: str
) -> None:
    setup(root)
    with pytest.raises(ToolError, match=message):
        await call(ReadFile(), ctx, path=path)


async def test_read_permission_denied(
    ctx: ToolContext, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Faked, because the suite may run as root, which ignores file modes."""
    (root / "locked.txt").write_text("x")

    import io_tui.core.boundary.workspace as workspace

    def refuse(path: Path, display: str) -> int:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(workspace, "open_regular", refuse)
    with pytest.raises(ToolError, match=r"locked\.txt: permission denied"):
        await call(ReadFile(), ctx, path="locked.txt")


async def test_read_gate_is_a_read_of_the_relative_path(ctx: ToolContext, root: Path) -> None:
    g = await gate(ReadFile(), ctx, path=str(root / "src" / "app.py"))
    assert g == Gate(Act.READ, "src/app.py")


async def test_read_gate_checks_what_a_symlink_really_is(ctx: ToolContext, root: Path) -> None:
    (root / ".env").write_text("TOKEN=1\n")
    (root / "notes.txt").symlink_to(".env")
    g = await gate(ReadFile(), ctx, path="notes.txt")
    assert g is not None and g.target == ".env"


# -- write_file -------------------------------------------------------------------------------


async def test_write_creates_parents_and_reports(ctx: ToolContext, root: Path) -> None:
    out = await call(WriteFile(), ctx, path="pkg/sub/mod.py", content="x = 1\ny = 2\n")
    assert (root / "pkg" / "sub" / "mod.py").read_text() == "x = 1\ny = 2\n"
    assert out.text.startswith("created pkg/sub/mod.py (2 lines")
    assert (out.kind, out.target) == (ObsKind.WRITE, "pkg/sub/mod.py")
    again = await call(WriteFile(), ctx, path="pkg/sub/mod.py", content="z")
    assert again.text.startswith("overwrote")


async def test_write_gate_carries_the_exact_content(ctx: ToolContext) -> None:
    g = await gate(WriteFile(), ctx, path="a/b.txt", content="hello\r\n")
    assert g == Gate(Act.WRITE, "a/b.txt", "hello\r\n")


async def test_write_outside_is_refused_by_gate_and_run(ctx: ToolContext, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        await gate(WriteFile(), ctx, path="../evil.txt", content="x")
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(WriteFile(), ctx, path=str(tmp_path / "evil.txt"), content="x")
    assert not (tmp_path / "evil.txt").exists()


async def test_write_onto_a_directory_is_a_clear_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="is a directory"):
        await call(WriteFile(), ctx, path="src", content="x")


# -- edit_file --------------------------------------------------------------------------------


async def test_edit_replaces_the_unique_match(ctx: ToolContext, root: Path) -> None:
    out = await call(EditFile(), ctx, path="src/app.py", old="return x", new="return x + 1")
    assert (root / "src" / "app.py").read_text().splitlines()[1] == "    return x + 1"
    assert out.text == "edited src/app.py: replaced 1 occurrence at line 2"
    assert (out.kind, out.target) == (ObsKind.WRITE, "src/app.py")


async def test_edit_gate_is_the_whole_new_file(ctx: ToolContext, root: Path) -> None:
    before = (root / "src" / "app.py").read_text()
    g = await gate(EditFile(), ctx, path="src/app.py", old="parse(1)", new="parse(2)")
    assert g == Gate(Act.WRITE, "src/app.py", before.replace("parse(1)", "parse(2)"))
    assert (root / "src" / "app.py").read_text() == before  # the gate changes nothing


async def test_edit_not_found(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"not found in src/app\.py"):
        await call(EditFile(), ctx, path="src/app.py", old="return y", new="z")


async def test_edit_ambiguous_says_how_many(ctx: ToolContext, root: Path) -> None:
    with pytest.raises(ToolError, match="occurs 2 times"):
        await gate(EditFile(), ctx, path="src/app.py", old="parse(", new="p(")
    assert "parse(1)" in (root / "src" / "app.py").read_text()


async def test_edit_rejects_empty_old_and_no_op(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="old"):
        EditFile().parse({"path": "src/app.py", "old": "", "new": "x"})
    with pytest.raises(ToolError, match="identical"):
        await call(EditFile(), ctx, path="src/app.py", old="x", new="x")


async def test_edit_missing_file(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="no such file"):
        await call(EditFile(), ctx, path="nope.py", old="a", new="b")


async def test_edit_multiline_reports_the_range(ctx: ToolContext, root: Path) -> None:
    out = await call(EditFile(), ctx, path="src/app.py", old="\n\n\nprint", new="\n# a\n# b\nprint")
    assert out.text.endswith("at lines 2-5")
    assert (root / "src" / "app.py").read_text().count("# ") == 2


# -- list_dir ---------------------------------------------------------------------------------


async def test_list_dir_sorted_with_dir_slashes(ctx: ToolContext, root: Path) -> None:
    (root / "b.txt").write_text("")
    (root / "a").mkdir()
    out = await call(ListDir(), ctx)
    assert out.text.splitlines() == ["a/", "b.txt", "src/"]
    assert (out.kind, out.target) == (ObsKind.LIST, ".")
    assert await gate(ListDir(), ctx) == Gate(Act.READ, ".")
    assert await gate(ListDir(), ctx, path="src/") == Gate(Act.READ, "src")


async def test_list_dir_is_bounded_with_a_marker(ctx: ToolContext, root: Path) -> None:
    many = root / "many"
    many.mkdir()
    for i in range(MAX_LIST_ENTRIES + 7):
        (many / f"f{i:04}").write_text("")
    out = await call(ListDir(), ctx, path="many")
    lines = out.text.splitlines()
    assert len(lines) == MAX_LIST_ENTRIES + 1
    assert lines[-1].startswith("… 7 more entries")


async def test_list_dir_errors(ctx: ToolContext, root: Path, tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="no such file"):
        await call(ListDir(), ctx, path="ghost")
    with pytest.raises(ToolError, match="not a directory"):
        await call(ListDir(), ctx, path="src/app.py")
    (root / "out").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(ListDir(), ctx, path="out")


async def test_list_empty_dir(ctx: ToolContext, root: Path) -> None:
    (root / "empty").mkdir()
    out = await call(ListDir(), ctx, path="empty")
    assert out.text == "(empty is empty)"


# -- nothing but regular files (a FIFO would block the run until someone wrote to it) ----------


@pytest.fixture
def specials(root: Path) -> Iterator[dict[str, str]]:
    """A FIFO, a listening socket and an in-workspace link to a device, by name."""
    import socket

    os.mkfifo(root / "pipe")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(root / "sock"))
    (root / "zero").symlink_to("/dev/zero")
    yield {"pipe": "a named pipe (FIFO)", "sock": "a socket", "zero": "outside the workspace"}
    sock.close()


@pytest.mark.parametrize("name", ["pipe", "sock", "zero"])
async def test_reading_anything_but_a_regular_file_is_refused(
    ctx: ToolContext, specials: dict[str, str], name: str
) -> None:
    with pytest.raises(ToolError, match=re.escape(specials[name])):
        await call(ReadFile(), ctx, path=name)


@pytest.mark.parametrize("name", ["pipe", "sock"])
async def test_writing_or_editing_a_special_file_is_refused(
    ctx: ToolContext, specials: dict[str, str], name: str
) -> None:
    with pytest.raises(ToolError, match="not a regular file"):
        await call(WriteFile(), ctx, path=name, content="x")
    with pytest.raises(ToolError, match="not a regular file"):
        await call(EditFile(), ctx, path=name, old="a", new="b")
