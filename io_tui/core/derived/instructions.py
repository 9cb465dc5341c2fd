"""Project instruction files: AGENTS.md / CLAUDE.md at the workspace root, and the user's own.

They join the fixed frame of every request (DESIGN §3.2), so they are carried whole and never
elided; ``oversized`` warns when one grows past a quarter of the ceiling, because then it crowds
out what the run observes on every single request.

Order: the user's file (``config_dir()/AGENTS.md``) first, then the workspace's ``AGENTS.md``,
then ``CLAUDE.md``, so the more specific text comes later. A ``CLAUDE.md`` that is the same file
as ``AGENTS.md`` (a symlink, a common setup) or says exactly the same is loaded once.

They are derived context (``core/derived/parts.py``): the frame records the digest of every candidate
file, present or not, and a run loads them again when one moves (written, renamed, deleted,
checked out), with an ``invalidated`` event.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

from io_tui.core.context.frame import InstructionFile
from io_tui.core.contract import estimate_tokens
from io_tui.core.derived.parts import digest
from io_tui.paths import config_dir

PROJECT_FILES = ("AGENTS.md", "CLAUDE.md")
USER_FILE = "AGENTS.md"
# A guard against a runaway file, far above anything sensible; the oversized warning fires first.
MAX_INSTRUCTION_BYTES = 512 * 1024


async def load_instructions(workspace: Path) -> tuple[InstructionFile, ...]:
    """The instruction files that apply to ``workspace``, read off the event loop."""
    return await asyncio.to_thread(_load, workspace, config_dir())


def instruction_paths(workspace: Path) -> tuple[Path, ...]:
    """Every file the instructions are loaded from, present or not: what they depend on."""
    return _paths(workspace, config_dir())


@functools.lru_cache(maxsize=64)
def _paths(workspace: Path, user_dir: Path) -> tuple[Path, ...]:
    """``instruction_paths``, kept per workspace and user folder (asked every request)."""
    return tuple(path for _, path in _candidates(workspace, user_dir))


def instructions_version(found: tuple[InstructionFile, ...]) -> str:
    """The version of the instructions as the frame carries them."""
    return digest("\0".join(f"{inst.name}\0{inst.source}\0{inst.text}" for inst in found))


def _candidates(workspace: Path, user_dir: Path) -> list[tuple[str, Path]]:
    candidates = [(f"{USER_FILE} (user)", user_dir / USER_FILE)]
    return candidates + [(name, workspace / name) for name in PROJECT_FILES]


def _load(workspace: Path, user_dir: Path) -> tuple[InstructionFile, ...]:
    candidates = _candidates(workspace, user_dir)
    found: list[InstructionFile] = []
    seen_paths: set[Path] = set()
    seen_texts: set[str] = set()
    for name, path in candidates:
        text = _read(path)
        if text is None:
            continue
        real = path.resolve()
        if real in seen_paths or text in seen_texts:
            continue
        seen_paths.add(real)
        seen_texts.add(text)
        found.append(InstructionFile(name=name, source=str(path), text=text))
    return tuple(found)


def _read(path: Path) -> str | None:
    """The file's text, or None when it is absent, unreadable, not a file, or blank."""
    try:
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            raw = handle.read(MAX_INSTRUCTION_BYTES + 1)
    except OSError:
        return None
    text = raw[:MAX_INSTRUCTION_BYTES].decode("utf-8", errors="replace").strip()
    if len(raw) > MAX_INSTRUCTION_BYTES:
        text += f"\n[… {path.name} continues past {MAX_INSTRUCTION_BYTES:,} bytes; cut here]"
    return text or None


def oversized(
    instructions: tuple[InstructionFile, ...] | list[InstructionFile], ceiling_tokens: int
) -> list[str]:
    """One warning per file larger than a quarter of ``ceiling_tokens`` (estimated tokens)."""
    limit = ceiling_tokens // 4
    warnings = []
    for inst in instructions:
        tokens = estimate_tokens(inst.text)
        if tokens > limit:
            warnings.append(
                f"{inst.name} ({inst.source}) is ~{tokens:,} tokens, more than a quarter of the "
                f"{ceiling_tokens:,}-token request ceiling; it is carried whole on every request, "
                "so trim it or move detail into files the agent can read when needed."
            )
    return warnings
