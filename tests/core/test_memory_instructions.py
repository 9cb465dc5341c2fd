"""Project instruction files: which are loaded, in what order, and the oversized warning."""

from __future__ import annotations

from pathlib import Path

import pytest

from io_tui.core.context.frame import InstructionFile
from io_tui.core.contract import estimate_tokens
from io_tui.core.derived.instructions import load_instructions, oversized


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    ws, config = tmp_path / "ws", tmp_path / "config"
    ws.mkdir()
    config.mkdir()
    monkeypatch.setenv("IO_TUI_CONFIG_DIR", str(config))
    return ws, config


async def test_user_then_agents_then_claude(dirs: tuple[Path, Path]) -> None:
    ws, config = dirs
    (config / "AGENTS.md").write_text("Prefer small commits.\n")
    (ws / "AGENTS.md").write_text("Run `make test`.\n")
    (ws / "CLAUDE.md").write_text("Never touch vendor/.\n")
    found = await load_instructions(ws)
    assert [(f.name, f.text) for f in found] == [
        ("AGENTS.md (user)", "Prefer small commits."),
        ("AGENTS.md", "Run `make test`."),
        ("CLAUDE.md", "Never touch vendor/."),
    ]
    assert found[1].source == str(ws / "AGENTS.md")
    assert all(isinstance(f, InstructionFile) for f in found)


async def test_none_blank_or_directories_are_skipped(dirs: tuple[Path, Path]) -> None:
    ws, _ = dirs
    assert await load_instructions(ws) == ()
    (ws / "AGENTS.md").write_text("  \n")
    (ws / "CLAUDE.md").mkdir()
    assert await load_instructions(ws) == ()


async def test_a_symlinked_or_identical_claude_md_is_loaded_once(dirs: tuple[Path, Path]) -> None:
    ws, _ = dirs
    (ws / "AGENTS.md").write_text("Same rules.")
    (ws / "CLAUDE.md").symlink_to("AGENTS.md")
    assert [f.name for f in await load_instructions(ws)] == ["AGENTS.md"]
    (ws / "CLAUDE.md").unlink()
    (ws / "CLAUDE.md").write_text("Same rules.\n")
    assert [f.name for f in await load_instructions(ws)] == ["AGENTS.md"]


async def test_undecodable_bytes_do_not_fail_loading(dirs: tuple[Path, Path]) -> None:
    ws, _ = dirs
    (ws / "AGENTS.md").write_bytes(b"ok \xff\xfe done")
    (found,) = await load_instructions(ws)
    assert found.text.startswith("ok ") and found.text.endswith(" done")


def test_oversized_warns_past_a_quarter_of_the_ceiling() -> None:
    small = InstructionFile("AGENTS.md", "/ws/AGENTS.md", "x" * 2_358)
    big = InstructionFile("CLAUDE.md", "/ws/CLAUDE.md", "x" * 2_359)
    assert (estimate_tokens(small.text), estimate_tokens(big.text)) == (500, 501)
    warnings = oversized((small, big), ceiling_tokens=2_000)
    assert len(warnings) == 1
    assert warnings[0].startswith("CLAUDE.md (/ws/CLAUDE.md) is ~501 tokens")
    assert "quarter" in warnings[0]
    assert oversized((small, big), ceiling_tokens=24_000) == []
