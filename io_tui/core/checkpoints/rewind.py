"""Rewinding a run's workspace to its state before a step, from the run's checkpoints: first a
plan (what will change, and what someone else changed since the run's last checkpoint), then,
on the operator's word, the restore.

A rewind covers every file the checkpoints hold, whatever changed it (a write, a shell
command, a sub-agent): files the run created go, files it changed or deleted come back, byte
for byte with their mode. It refuses while the workspace holds changes made after the run's
last checkpoint by someone else (an editor, another run), unless the operator says per file
whether to keep them or overwrite them. It is itself checkpointed on both sides, so it can be
undone (``undo``: back to what the last rewind found), and the run's history is never
touched: the rewind is an event on the run.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from io_tui.core.checkpoints.git import CheckpointError
from io_tui.core.checkpoints.shadow import FileChange, ShadowStore, Snapshot
from io_tui.core.checkpoints.taking import shadow_for
from io_tui.core.contract import contract_from_json
from io_tui.core.events import EventKind, RunEvent
from io_tui.core.store import Store
from io_tui.core.store.checkpoints import (
    BEFORE,
    END,
    FORK,
    RESUMED,
    REWIND_FROM,
    REWOUND,
    CheckpointRow,
)
from io_tui.core.store.runs import RunRow

LIVE = ("running", "asking", "queued")
STEP_PHASES = (BEFORE, RESUMED, END, FORK)  # the checkpoints a step's state is read from
EVENT_FILES = 200  # files an event lists by name (the rest counted)


class RewindError(Exception):
    """A rewind that cannot be planned or done: one line saying why."""


class FileChoice(enum.StrEnum):
    """What to do with a file someone else changed after the run's last checkpoint."""

    KEEP = "keep"  # leave it as it is now
    OVERWRITE = "overwrite"  # restore it like every other file


@dataclass(frozen=True, slots=True)
class RewindPlan:
    """What a rewind of run ``run_id`` would do, as found now.

    ``target``: the checkpoint it restores (the state before ``to_step``, or what the last
    rewind found, for an undo); ``changes``: every path that differs between the workspace now
    and the target (A: it comes back, D: it goes, M/T: its content or type is restored);
    ``foreign``: the paths someone else changed after the run's last checkpoint (``last``);
    ``left_alone``: paths the target's checkpoint left out (over the size cap, a large ignored
    directory): a rewind does not touch them."""

    run_id: int
    to_step: int | None
    undo: bool
    target: CheckpointRow
    last: CheckpointRow
    current_tree: str
    changes: tuple[FileChange, ...]
    foreign: tuple[FileChange, ...]
    left_alone: tuple[dict[str, str], ...] = ()

    @property
    def needs_choices(self) -> tuple[str, ...]:
        return tuple(c.path for c in self.foreign)

    def summary(self) -> str:
        """One line: what changes."""
        return change_summary(self.changes)

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "to_step": self.to_step,
            "undo": self.undo,
            "target": self.target.to_json(),
            "last": self.last.to_json(),
            "changes": [c.to_json() for c in self.changes],
            "foreign": [c.to_json() for c in self.foreign],
            "left_alone": list(self.left_alone),
            "summary": self.summary(),
        }


@dataclass(frozen=True, slots=True)
class RewindResult:
    plan: RewindPlan
    written: tuple[str, ...]
    deleted: tuple[str, ...]
    kept: tuple[str, ...]
    from_checkpoint: CheckpointRow
    rewound: CheckpointRow
    # paths where the workspace after the rewind differs from the target, beyond those kept
    # and left alone: empty when the rewind restored exactly what it planned
    mismatched: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            **self.plan.to_json(),
            "written": list(self.written),
            "deleted": list(self.deleted),
            "kept": list(self.kept),
            "from_checkpoint": self.from_checkpoint.id,
            "rewound_checkpoint": self.rewound.id,
            "mismatched": list(self.mismatched),
        }


def change_summary(changes: Sequence[FileChange]) -> str:
    """``3 files restored, 1 removed, 2 recreated (+12 −4 lines)``, or ``no file changes``."""
    if not changes:
        return "no file changes"
    counts = {"M": 0, "D": 0, "A": 0}
    added = removed = 0
    for change in changes:
        counts["M" if change.status in ("M", "T") else change.status] += 1
        added += change.added or 0
        removed += change.removed or 0
    parts = []
    if counts["M"]:
        parts.append(f"{counts['M']} {_files(counts['M'])} restored")
    if counts["D"]:
        parts.append(f"{counts['D']} {_files(counts['D'])} removed")
    if counts["A"]:
        parts.append(f"{counts['A']} {_files(counts['A'])} recreated")
    return ", ".join(parts) + f" (+{added} −{removed} lines)"


def _files(n: int) -> str:
    return "file" if n == 1 else "files"


def describe_change(change: FileChange) -> str:
    """What a rewind does to one path, in words."""
    if change.status == "D":
        return "removed (created after)"
    if change.status == "A":
        return "recreated (deleted after)"
    if change.status == "T":
        return "restored (its type changed)"
    if change.old_mode != change.new_mode and not change.added and not change.removed:
        return "mode restored"
    lines = "binary" if change.added is None else f"+{change.added} −{change.removed}"
    return f"restored ({lines})"


# -- finding the checkpoint a step's state is in --


async def checkpoint_before(store: Store, run: RunRow, step: int) -> CheckpointRow:
    """The checkpoint holding run ``run``'s workspace as it was before ``step``: the first one
    taken once ``step`` began (a step that may change files takes one before its first call,
    and the run's end one more, so no file changed between ``step``'s start and it); a fork's
    steps before the one it left from are its parent's."""
    if run.forked_from is not None and run.fork_step is not None and step < run.fork_step:
        parent = await store.runs.get(run.forked_from)
        if parent is None:
            raise RewindError(f"run {run.id} forked from run {run.forked_from}, not in the store")
        return await checkpoint_before(store, parent, step)
    rows = [r for r in await store.checkpoints.for_run(run.id) if r.phase in STEP_PHASES]
    if not rows:
        raise RewindError(
            f"run {run.id} has no checkpoint: it changed no files, or checkpoints were off"
        )
    found = next((r for r in rows if r.step >= step), None)
    if found is None:
        raise RewindError(
            f"run {run.id} took no checkpoint from step {step} on (it stopped without its last"
            " one): its state before that step is not known"
        )
    if found.pruned_at is not None:
        raise RewindError(
            f"the checkpoint before step {step} of run {run.id} was pruned (see the checkpoint"
            " pruning policy in the README)"
        )
    return found


# -- planning --


async def plan_rewind(
    store: Store, run_id: int, *, to_step: int | None = None, undo: bool = False
) -> RewindPlan:
    """What rewinding run ``run_id`` to before ``to_step`` (or undoing its last rewind) would
    do, with the workspace as it is now; ``RewindError`` when it cannot."""
    run = await _rewindable(store, run_id)
    if undo:
        target = await _undo_target(store, run_id)
    else:
        if to_step is None or not 1 <= to_step <= max(run.steps, 1):
            raise RewindError(f"run {run_id} has steps 1–{run.steps}; no step {to_step}")
        target = await checkpoint_before(store, run, to_step)
    last = await store.checkpoints.latest(run_id)
    assert last is not None  # a run with a target has a checkpoint of its own, or a fork's
    shadow = _shadow(run)
    try:
        return await asyncio.to_thread(_plan, shadow, run, to_step, undo, target, last)
    except CheckpointError as exc:
        raise RewindError(str(exc)) from None


def _plan(
    shadow: ShadowStore,
    run: RunRow,
    to_step: int | None,
    undo: bool,
    target: CheckpointRow,
    last: CheckpointRow,
) -> RewindPlan:
    for row in (target, last):
        if not shadow.has(row.git_commit):
            raise RewindError(
                f"checkpoint {row.id} of run {row.run_id} is not in {shadow.directory}"
                " (its store was removed)"
            )
    now = shadow.snapshot(f"io-tui run {run.id}: the workspace before a rewind", run_id=None)
    changes = shadow.diff(now.tree, target.tree)
    foreign = shadow.diff(last.tree, now.tree)
    skipped = {s["path"]: s for s in target.skipped}
    left_alone = tuple(
        skipped[c.path] for c in changes if c.status == "D" and _skipped(c.path, skipped)
    )
    kept_out = {s["path"] for s in left_alone}
    return RewindPlan(
        run.id,
        to_step,
        undo,
        target,
        last,
        now.tree,
        tuple(c for c in changes if c.path not in kept_out),
        tuple(foreign),
        left_alone,
    )


def _skipped(path: str, skipped: Mapping[str, dict[str, str]]) -> bool:
    """Whether the target's checkpoint left ``path`` out (itself, or a directory above it)."""
    if path in skipped:
        return True
    parts = path.split("/")
    return any("/".join(parts[:i]) + "/" in skipped for i in range(1, len(parts)))


async def _rewindable(store: Store, run_id: int) -> RunRow:
    run = await store.runs.get(run_id)
    if run is None:
        raise RewindError(f"no run {run_id} in the store")
    if run.status in LIVE:
        raise RewindError(
            f"run {run_id} is {run.status}: interrupt it first (x in the TUI), then rewind"
        )
    return run


async def _undo_target(store: Store, run_id: int) -> CheckpointRow:
    rows = await store.checkpoints.for_run(run_id)
    if not rows or rows[-1].phase != REWOUND:
        raise RewindError(f"nothing to undo: run {run_id}'s last checkpoint is not a rewind")
    found = next((r for r in reversed(rows) if r.phase == REWIND_FROM), None)
    if found is None:
        raise RewindError(f"run {run_id}'s last rewind has no checkpoint of what it found")
    return found


def _shadow(run: RunRow) -> ShadowStore:
    return shadow_for(Path(run.workspace), contract_from_json(run.contract).checkpoints)


# -- doing it --


async def apply_rewind(
    store: Store, plan: RewindPlan, choices: Mapping[str, FileChoice] | None = None
) -> RewindResult:
    """Do ``plan``: refuse (``RewindError``) if a file someone else changed has no choice, or
    the workspace moved since the plan; checkpoint the workspace as found, restore, checkpoint
    the result, and record the rewind as an event of the run."""
    choices = dict(choices or {})
    missing = [p for p in plan.needs_choices if p not in choices]
    if missing:
        raise RewindError(
            f"refused: {len(missing)} {_files(len(missing))} changed after run {plan.run_id}'s"
            f" last checkpoint (by someone else, or by the run in a step it did not finish):"
            f" {', '.join(missing[:5])}{' …' if len(missing) > 5 else ''}; say per file whether"
            " to keep or overwrite it"
        )
    run = await _rewindable(store, plan.run_id)
    shadow = _shadow(run)
    kept = tuple(p for p, c in choices.items() if c is FileChoice.KEEP)
    try:
        found, result = await asyncio.to_thread(_restore, shadow, run, plan, set(kept))
    except CheckpointError as exc:
        raise RewindError(str(exc)) from None
    found_row = await _record(store, run, shadow, REWIND_FROM, found)
    written, deleted, after, mismatched = result
    rewound_row = await _record(store, run, shadow, REWOUND, after)
    outcome = RewindResult(plan, written, deleted, kept, found_row, rewound_row, mismatched)
    await store.runs.add_events([RunEvent(run.id, run.steps, EventKind.REWOUND, _event(outcome))])
    return outcome


Restored = tuple[tuple[str, ...], tuple[str, ...], Snapshot, tuple[str, ...]]


def _restore(
    shadow: ShadowStore, run: RunRow, plan: RewindPlan, kept: set[str]
) -> tuple[Snapshot, Restored]:
    last = (plan.last.git_commit, plan.last.tree)
    found = shadow.snapshot(
        f"io-tui run {run.id}: the workspace a rewind found", run_id=run.id, parent=last
    )
    if found.tree != plan.current_tree:
        raise RewindError(
            "the workspace changed since the rewind was planned; look at the plan again"
        )
    write = [c.path for c in plan.changes if c.status != "D" and c.path not in kept]
    delete = [c.path for c in plan.changes if c.status == "D" and c.path not in kept]
    shadow.restore(plan.target.tree, write, delete)
    after = shadow.snapshot(
        f"io-tui run {run.id}: rewound to checkpoint {plan.target.id}",
        run_id=run.id,
        parent=(found.commit, found.tree),
    )
    alone = {s["path"] for s in plan.left_alone}
    mismatched = tuple(
        c.path
        for c in shadow.diff(after.tree, plan.target.tree)
        if c.path not in kept and not _skipped(c.path, {p: {} for p in alone})
    )
    return found, (tuple(write), tuple(delete), after, mismatched)


async def _record(
    store: Store, run: RunRow, shadow: ShadowStore, phase: str, snapshot: Snapshot
) -> CheckpointRow:
    return await store.checkpoints.add(
        run_id=run.id,
        step=run.steps,
        phase=phase,
        workspace=str(shadow.root),
        commit=snapshot.commit,
        tree=snapshot.tree,
        changed=snapshot.changed,
        skipped=[s.to_json() for s in snapshot.skipped],
        took_ms=0.0,
    )


def _event(result: RewindResult) -> dict[str, Any]:
    plan = result.plan
    files = [{"path": c.path, "status": c.status} for c in plan.changes]
    return {
        "to_step": plan.to_step,
        "undo": plan.undo,
        "target_checkpoint": plan.target.id,
        "from_checkpoint": result.from_checkpoint.id,
        "rewound_checkpoint": result.rewound.id,
        "summary": plan.summary(),
        "files": files[:EVENT_FILES],
        "more_files": max(0, len(files) - EVENT_FILES),
        "kept": list(result.kept),
        "left_alone": [s["path"] for s in plan.left_alone],
        "mismatched": list(result.mismatched),
    }
