"""Before each model request: every derived part of the context (``core/derived/parts.py``) checked
against what it was built from, rebuilt where that moved, each with an ``invalidated`` event.

- the instruction files (AGENTS.md, CLAUDE.md, the user's; the read policy's verdicts on them):
  the frame carries them again, a file the policy denies named as withheld, never sent;
- the skill catalogue (its folders, SKILL.md files, the read policy's verdicts): the system
  prompt and ``read_skill``;
- the tool catalogue (every schema sent): MCP servers ready since, ``read_skill`` come or gone;
- the memory block (every active note as it shows it): rendered again at once when a note was
  changed, removed, or written by anyone but this run; a new note of this run's own is in its
  tool result already, and joins the block at the next rewrite (``deferred``).

A rebuilt frame changes the request from its first message on: correctness never waits for the
cache (DESIGN §3.2).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from io_tui.core.authority.policy import Effect
from io_tui.core.context.engine import ContextEngine
from io_tui.core.context.frame import InstructionFile, Withheld
from io_tui.core.derived.instructions import (
    instruction_paths,
    instructions_version,
    load_instructions,
    oversized,
)
from io_tui.core.derived.parts import (
    ABSENT,
    Built,
    Invalidation,
    digest,
    file_cause,
    note_cause,
    note_ref,
    note_versions,
    tool_versions,
    version_of,
)
from io_tui.core.derived.skills import (
    SKILL_FILE,
    Skill,
    catalogue,
    discover_async,
    readable,
    skill_folders,
)
from io_tui.core.events import EventKind
from io_tui.core.ledger import ObsKind, StepRecord
from io_tui.core.memory.notes import MemoryNote
from io_tui.core.run.state import RunState
from io_tui.paths import bundled_dir, user_skills

Instructions = tuple[tuple[InstructionFile, ...], tuple[Withheld, ...]]  # sent, withheld


async def first_build(state: RunState) -> Instructions:
    """The run's skills and instructions as its first request carries them, recorded with what
    they depend on; returns the instruction files sent, and those the read policy withholds."""
    state.derived.carried = await state.store.trace.latest_derived(state.run_id)  # resumed
    say(state, await load_skills(state, None))
    found, withheld, invalidated = await load_instruction_files(state, None)
    say(state, invalidated)
    return found, withheld  # the tools are recorded as the first request sends them


async def refresh_derived(
    state: RunState, engine: ContextEngine, notes: Sequence[MemoryNote]
) -> None:
    """Before a request: check every derived part, rebuild what moved and say so."""
    derived, root = state.derived, state.workspace.root
    last = state.history[-1] if state.history else None
    if last is not None:  # the run's own write may leave the stat as it was (the clock's grain)
        for obs in last.observations:
            if obs.kind is ObsKind.WRITE:
                derived.files.forget(root / obs.target)
    # a few stats (a file is read only when its stat moved) and a glob of the skill folders:
    # cheaper on the loop than a hand-off to a thread and back, twice a request
    if instructions_depends(state) != derived.built["instructions"].depends:
        found, withheld, invalidated = await load_instruction_files(state, last)
        say(state, invalidated)
        engine.reframe(replace(engine.frame, instructions=found, withheld=withheld))
    if skills_depends(state, derived.skills_found) != derived.built["skills"].depends:
        say(state, await load_skills(state, last))
        engine.reframe(replace(engine.frame, system_prompt=state.system_prompt))
    say(state, record_tools(state))
    engine.offer_tools(state.specs())
    say(state, check_memory(state, engine, notes))


def say(state: RunState, invalidated: Invalidation | None) -> None:
    if invalidated is not None:
        state.publish(EventKind.INVALIDATED, invalidated.to_json())


# -- the parts --


async def load_instruction_files(
    state: RunState, last: StepRecord | None
) -> tuple[tuple[InstructionFile, ...], tuple[Withheld, ...], Invalidation | None]:
    """AGENTS.md / CLAUDE.md, carried whole (a warning event when one is oversized) unless the
    read policy denies the file (then withheld: named in the manifest, never sent), recorded
    with the digest of every file they are loaded from, present or not, and the policy's
    verdict on each."""
    derived, root = state.derived, state.workspace.root
    depends = await asyncio.to_thread(instructions_depends, state)
    found: list[InstructionFile] = []
    withheld: list[Withheld] = []
    for inst in await load_instructions(root):
        said = state.policy.read_verdict(policy_target(state, Path(inst.source)))
        if said is not None and said.effect is Effect.DENY:
            why = f"the read policy denies it (rule '{said.rule_text}', layer {said.layer})"
            withheld.append(Withheld(inst.name, inst.source, digest(inst.text), why))
        else:
            found.append(inst)
    ceiling = state.contract.context.ceiling(state.remaining_tokens())
    for warning in oversized(found, ceiling):
        state.publish(EventKind.WARNING, {"message": warning})
    built = Built("instructions", instructions_version(tuple(found)), depends)
    before = derived.built.get("instructions")
    cause = derived_cause(before.moved(depends), last, state) if before else ""
    return tuple(found), tuple(withheld), derived.update(built, cause)


def policy_target(state: RunState, path: Path) -> str:
    """What the read policy is checked against for an instruction file: its workspace-relative
    path (``AGENTS.md``), else its absolute one (the user's file)."""
    return state.derived.files.ref(path).removeprefix("file:")


def sources(state: RunState) -> tuple[tuple[Path, ...], tuple[tuple[Path, str], ...]]:
    """Where the run's instruction files and skill folders are, asked once a run: the user's
    folder comes from the environment, which no one but the process itself changes."""
    derived = state.derived
    if derived.sources is None:
        root = state.workspace.root
        folders = skill_folders(root, bundled=bundled_dir("skills"), user=user_skills())
        derived.sources = instruction_paths(root), tuple(folders)
    return derived.sources


def instructions_depends(state: RunState) -> dict[str, str]:
    """Every instruction file's digest (``absent`` when there is none) and the read policy's
    verdict on it."""
    paths = sources(state)[0]
    depends = state.derived.files.versions(paths)
    for path in paths:
        target = policy_target(state, path)
        depends[f"policy:{target}"] = state.derived.read_effect(state.policy, target)
    return depends


async def load_skills(state: RunState, last: StepRecord | None) -> Invalidation | None:
    """The skills of every folder, those the read policy lets the model read offered (the
    catalogue in the system prompt, ``read_skill``), recorded with what they depend on."""
    found = await discover_async(
        state.workspace.root, bundled=bundled_dir("skills"), user=user_skills()
    )
    usable = readable(found, state.policy)
    state.use_skills(found, usable)
    derived = state.derived
    derived.skills_found = found
    depends = await asyncio.to_thread(skills_depends, state, found)
    before = derived.built.get("skills")
    cause = derived_cause(before.moved(depends), last, state) if before else ""
    return derived.update(Built("skills", digest(catalogue(usable)), depends), cause)


def skills_depends(state: RunState, found: dict[str, Skill]) -> dict[str, str]:
    """Each skill folder's listing and every SKILL.md's digest (one stat each while nothing
    moved), and the read policy's verdict on each skill found. The bundled folder is io-tui's
    own, installed with it: read at the run's first check only."""
    derived = state.derived
    files = derived.files
    depends: dict[str, str] = {}
    for folder, origin in sources(state)[1]:
        if origin == "bundled" and derived.bundled is not None:
            depends |= derived.bundled
            continue
        listing, paths = files.listed(folder, f"*/{SKILL_FILE}")
        folder_depends = listing | files.versions(paths)
        if origin == "bundled":
            derived.bundled = folder_depends
        depends |= folder_depends
    for skill in found.values():
        depends[f"policy:{skill.target}"] = state.derived.read_effect(state.policy, skill.target)
    return depends


def derived_cause(changed: list[dict[str, str]], last: StepRecord | None, state: RunState) -> str:
    """Why the files and policy verdicts a part depends on moved."""
    verdicts = [c for c in changed if c["ref"].startswith("policy:")]
    files = [c for c in changed if not c["ref"].startswith("policy:")]
    parts = [file_cause(files, last, state.derived.files)] if files else []
    parts += [
        f"the policy's read verdict on {c['ref'].removeprefix('policy:')} is {c['after']}"
        f" (was {c['before']})"
        for c in verdicts
    ]
    return "; ".join(parts)


def record_tools(state: RunState) -> Invalidation | None:
    """The tool catalogue as sent, recorded with each schema's digest when the schemas were
    built again (a tool joined, left or changed)."""
    derived, specs = state.derived, state.specs()
    if specs is derived.specs:
        return None
    derived.specs = specs
    depends = tool_versions(specs)
    before = derived.built.get("tools")
    return derived.update(
        Built("tools", version_of(depends), depends),
        tools_cause(before.moved(depends)) if before else "",
    )


def tools_cause(changed: list[dict[str, str]]) -> str:
    names = {
        "offered from this request on": [c for c in changed if c["before"] == ABSENT],
        "withdrawn": [c for c in changed if c["after"] == ABSENT],
        "schema changed": [c for c in changed if ABSENT not in (c["before"], c["after"])],
    }
    return "; ".join(
        f"{what}: {', '.join(c['ref'].removeprefix('tool:') for c in refs)}"
        for what, refs in names.items()
        if refs
    )


def check_memory(
    state: RunState, engine: ContextEngine, notes: Sequence[MemoryNote]
) -> Invalidation | None:
    """The memory block, against the active notes it is rendered from (the memory
    generation): any change but a new note of this run's own drops the block the last rewrite
    rendered, so this request renders it again and the old text is gone."""
    depends = note_versions(notes)
    before = state.derived.built.get("memory")
    if before is not None and before.depends == depends:
        return None  # the same notes as the block was built from: its version is the same
    built = Built("memory", version_of(depends), depends)
    if before is None:  # the first request in this process (a resumed run's: compared)
        return state.derived.update(built, "")
    changed = before.moved(depends)
    if not changed:
        return None
    by_ref = {note_ref(note): note for note in notes}
    own = all(c["before"] == ABSENT and by_ref[c["ref"]].run_id == state.run_id for c in changed)
    if not own:
        engine.drop_memory()
    return state.derived.update(built, note_cause(changed, notes), "deferred" if own else "rebuilt")
