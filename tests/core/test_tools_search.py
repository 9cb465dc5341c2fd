"""find and grep: glob semantics, capped hits with markers, skipped dirs, and staying inside."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from io_tui.core.authority.policy import Act, Effect, Layer, Policy, Rule
from io_tui.core.boundary.workspace import Workspace
from io_tui.core.ledger import ObsKind
from io_tui.core.tools.base import Tool, ToolContext, ToolError, ToolOutcome
from io_tui.core.tools.search import MAX_FIND_HITS, MAX_GREP_HITS, Find, Grep, PathGlob


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "leak.py").write_text("NEEDLE outside\n")
    return out


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "ws"
    files = {
        "README.md": "# NEEDLE project\n",
        "src/app.py": "import os\n\ndef main():\n    return 'NEEDLE'\n",
        "src/util/helpers.py": "def helper():\n    pass  # NEEDLE\n",
        "src/web/index.ts": "const needle = 'NEEDLE';\n",
        ".git/config": "NEEDLE in git\n",
        ".venv/lib/site.py": "NEEDLE in venv\n",
        "node_modules/pkg/index.py": "NEEDLE in node_modules\n",
        "src/__pycache__/app.cpython-311.py": "NEEDLE in pycache\n",
    }
    for rel, text in files.items():
        (r / rel).parent.mkdir(parents=True, exist_ok=True)
        (r / rel).write_text(text)
    (r / "logo.bin").write_bytes(b"NEEDLE\0\x01\x02")
    return r


@pytest.fixture
def ctx(root: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(root), run_id=1, step=1, cap_chars=10_000)


async def call(tool: Tool, ctx: ToolContext, **raw: Any) -> ToolOutcome:
    return await tool.run(tool.parse(raw), ctx)


# -- glob semantics ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "src/util/helpers.py", True),  # slash-free: basename at any depth
        ("*.py", "src/web/index.ts", False),
        ("src/*.py", "src/app.py", True),
        ("src/*.py", "src/util/helpers.py", False),  # * stays within one segment
        ("src/**/*.py", "src/app.py", True),  # **/ matches zero directories
        ("src/**/*.py", "src/util/helpers.py", True),
        ("**/index.*", "src/web/index.ts", True),
        ("src/?pp.py", "src/app.py", True),
        ("src/[ab]pp.py", "src/app.py", True),
        ("src/[!ab]pp.py", "src/app.py", False),
        ("./src/app.py", "src/app.py", True),
        ("a.b", "axb", False),  # dots are literal
    ],
)
def test_glob_semantics(pattern: str, path: str, expected: bool) -> None:
    assert PathGlob(pattern).matches(path) is expected


@pytest.mark.parametrize("pattern", ["/etc/*", "../*", "src/../../x", ""])
def test_glob_refuses_escapes_and_empty(pattern: str) -> None:
    with pytest.raises(ToolError):
        PathGlob(pattern)


# -- find -------------------------------------------------------------------------------------


async def test_find_matches_sorted_and_skips_tool_dirs(ctx: ToolContext) -> None:
    out = await call(Find(), ctx, pattern="*.py")
    assert out.text.splitlines() == ["src/app.py", "src/util/helpers.py"]
    assert (out.kind, out.target, out.span) == (ObsKind.FIND, "*.py", "")
    assert out.data["hits"] == 2


async def test_find_reports_directories_with_a_slash(ctx: ToolContext) -> None:
    out = await call(Find(), ctx, pattern="src/*")
    assert "src/util/" in out.text.splitlines()
    assert "src/__pycache__/" not in out.text


async def test_find_has_no_gate(ctx: ToolContext) -> None:
    tool = Find()
    assert await tool.gate(tool.parse({"pattern": "*"}), ctx) is None


async def test_find_no_match_says_so(ctx: ToolContext) -> None:
    out = await call(Find(), ctx, pattern="*.rs")
    assert out.text == "no paths match '*.rs'"


async def test_find_caps_hits_with_a_count_of_the_rest(ctx: ToolContext, root: Path) -> None:
    (root / "gen").mkdir()
    for i in range(MAX_FIND_HITS + 25):
        (root / "gen" / f"m{i:04}.txt").write_text("")
    out = await call(Find(), ctx, pattern="gen/*.txt")
    lines = out.text.splitlines()
    assert len(lines) == MAX_FIND_HITS + 1
    assert lines[-1] == "… 25 more matches; narrow the pattern"
    assert out.data["hits"] == MAX_FIND_HITS + 25


async def test_find_never_lists_symlinks_leading_out(
    ctx: ToolContext, root: Path, outside: Path
) -> None:
    (root / "out_dir").symlink_to(outside, target_is_directory=True)
    (root / "out_file.py").symlink_to(outside / "leak.py")
    (root / "in_link.py").symlink_to(root / "src" / "app.py")
    out = await call(Find(), ctx, pattern="**")
    listed = out.text.splitlines()
    assert "in_link.py" in listed
    assert not any(p.startswith(("out_dir", "out_file")) for p in listed)
    assert "leak.py" not in out.text


async def test_find_refuses_patterns_that_leave(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"without '\.\.'"):
        await call(Find(), ctx, pattern="../outside/*")


# -- grep -------------------------------------------------------------------------------------


async def test_grep_hits_as_path_line_text(ctx: ToolContext) -> None:
    out = await call(Grep(), ctx, pattern=r"NEEDLE")
    assert out.text.splitlines() == [
        "README.md:1:# NEEDLE project",
        "src/app.py:4:    return 'NEEDLE'",
        "src/util/helpers.py:2:    pass  # NEEDLE",
        "src/web/index.ts:1:const needle = 'NEEDLE';",
    ]
    assert (out.kind, out.target, out.span) == (ObsKind.GREP, "NEEDLE", "")
    assert out.data == {"hits": 4, "files": 4}


async def test_grep_scope_narrows_and_lands_in_span(ctx: ToolContext) -> None:
    by_path = await call(Grep(), ctx, pattern="NEEDLE", path="src/util")
    assert by_path.text == "src/util/helpers.py:2:    pass  # NEEDLE"
    by_glob = await call(Grep(), ctx, pattern="NEEDLE", glob="*.ts")
    assert by_glob.text == "src/web/index.ts:1:const needle = 'NEEDLE';"
    one_file = await call(Grep(), ctx, pattern="def", path="./src/app.py")
    assert one_file.text == "src/app.py:3:def main():"
    spans = {by_path.span, by_glob.span, one_file.span, ""}
    assert len(spans) == 4  # different scopes never supersede each other
    assert by_path.span == "in src/util" and by_glob.span == "glob *.ts"


async def test_grep_has_no_gate(ctx: ToolContext) -> None:
    tool = Grep()
    assert await tool.gate(tool.parse({"pattern": "x"}), ctx) is None


async def test_grep_invalid_regex_is_a_clear_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"invalid regex '\(unclosed'"):
        await call(Grep(), ctx, pattern="(unclosed")


async def test_grep_no_match(ctx: ToolContext) -> None:
    out = await call(Grep(), ctx, pattern="zzz_nothing", path="src")
    assert out.text == "no matches for /zzz_nothing/ in src"
    assert out.data["hits"] == 0


async def test_grep_caps_hits_with_marker(ctx: ToolContext, root: Path) -> None:
    (root / "many.txt").write_text("hit\n" * (MAX_GREP_HITS + 40))
    out = await call(Grep(), ctx, pattern="^hit$")
    lines = out.text.splitlines()
    assert len(lines) == MAX_GREP_HITS + 1
    assert lines[-1] == "… 40 more hits; narrow the pattern or path"
    assert out.data["hits"] == MAX_GREP_HITS + 40


async def test_grep_records_every_file_it_searched_even_those_past_the_cap(
    ctx: ToolContext, root: Path
) -> None:
    """What a grep saw includes the files counted in '… N more hits' and those without hits: a
    change to any of them can change the result, so the context engine must be able to tell."""
    (root / "many.txt").write_text("hit\n" * MAX_GREP_HITS)
    (root / "z_hidden.txt").write_text("hit\n")
    out = await call(Grep(), ctx, pattern="^hit$")
    assert "z_hidden.txt" not in out.text and out.text.endswith(
        "… 1 more hits; narrow the pattern or path"
    )
    seen = {s.path: s for s in out.seen}
    assert {"many.txt", "z_hidden.txt", "README.md", "src/app.py"} <= set(seen)
    assert seen["z_hidden.txt"].size == 4 and seen["z_hidden.txt"].digest
    assert ".git/config" not in seen and "logo.bin" not in seen  # never searched


async def test_grep_cuts_very_long_lines(ctx: ToolContext, root: Path) -> None:
    (root / "min.js").write_text("x" * 5_000 + "NEEDLE2\n")
    out = await call(Grep(), ctx, pattern="x+NEEDLE2")
    assert len(out.text) < 400 and out.text.endswith("…")


async def test_grep_skips_symlinks_leading_out(ctx: ToolContext, root: Path, outside: Path) -> None:
    (root / "out_dir").symlink_to(outside, target_is_directory=True)
    (root / "out_file.py").symlink_to(outside / "leak.py")
    out = await call(Grep(), ctx, pattern="outside")
    assert "outside" not in out.text.replace("/outside/", "")
    assert out.data["hits"] == 0
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(Grep(), ctx, pattern="x", path="out_dir")


async def test_grep_path_errors(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="no such file"):
        await call(Grep(), ctx, pattern="x", path="ghost")
    with pytest.raises(ToolError, match="outside the workspace"):
        await call(Grep(), ctx, pattern="x", path="../")


async def test_grep_never_reads_secrets(ctx: ToolContext, root: Path) -> None:
    """grep has no gate, so it must not become a way around the read policy."""
    (root / ".env").write_text("API_KEY=sk-live-123\n")
    (root / "deploy.pem").write_text("API_KEY pem\n")
    (root / "innocent.txt").symlink_to(".env")
    out = await call(Grep(), ctx, pattern="API_KEY")
    assert "sk-live" not in out.text and "pem" not in out.text.split("(")[0]
    assert "3 file(s) skipped: the policy does not allow reading them" in out.text
    with pytest.raises(ToolError, match="builtin-secrets"):
        await call(Grep(), ctx, pattern="API_KEY", path=".env")


async def test_grep_uses_the_runs_policy_from_its_context(root: Path) -> None:
    policy = Policy().with_layer(Layer("project", (Rule(Act.READ, Effect.DENY, "src/util/*"),)))
    ctx = ToolContext(Workspace(root), 1, 1, 10_000, policy=policy)
    out = await call(Grep(), ctx, pattern="NEEDLE", path="src")
    assert "helpers.py" not in out.text.split("(")[0]
    assert "1 file(s) skipped" in out.text


# -- grep never hangs --------------------------------------------------------------------------


async def test_grep_passes_over_a_fifo_and_refuses_one_named(ctx: ToolContext, root: Path) -> None:
    import os

    os.mkfifo(root / "src" / "pipe")
    out = await call(Grep(), ctx, pattern="NEEDLE", path="src")
    assert "src/app.py:4:" in out.text
    assert "1 file(s) skipped: not regular files" in out.text
    with pytest.raises(ToolError, match=r"src/pipe is a named pipe \(FIFO\)"):
        await call(Grep(), ctx, pattern="NEEDLE", path="src/pipe")


async def test_a_catastrophic_pattern_is_cut_off_and_said(
    ctx: ToolContext, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io_tui.core.tools.search as search

    monkeypatch.setattr(search, "GREP_FILE_TIMEOUT_S", 0.2)
    (root / "src" / "slow.txt").write_text("a" * 60 + "b\n")
    (root / "src" / "redos.txt").write_text("a" * 40 + "b\n")
    for pattern in (r"^(a+)+$", r"(a|aa)+$"):  # the issue's; one the regex engine backtracks on
        out = await call(Grep(), ctx, pattern=pattern, path="src")
        assert out.data["hits"] == 0
    assert "file(s) skipped: the pattern took over 0.2s" in out.text
    assert not any(s.path == "src/slow.txt" for s in out.seen)  # not searched to the end


async def test_the_call_stops_searching_when_its_time_runs_out(
    ctx: ToolContext, root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io_tui.core.tools.search as search

    monkeypatch.setattr(search, "GREP_CALL_TIMEOUT_S", 0.0)
    out = await call(Grep(), ctx, pattern="NEEDLE")
    assert out.data["hits"] == 0
    assert "not searched: the call's 0s ran out" in out.text


async def test_an_oversized_pattern_is_refused(ctx: ToolContext) -> None:
    from io_tui.core.tools.search import MAX_GREP_PATTERN_CHARS

    with pytest.raises(ToolError, match="at most 1000 characters"):
        await call(Grep(), ctx, pattern="a" * (MAX_GREP_PATTERN_CHARS + 1))
