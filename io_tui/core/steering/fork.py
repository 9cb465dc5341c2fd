"""Forking a run from any of its steps: a new run whose first request is that step's, exactly as
recorded, on the workspace as it was before that step.

Where the fork works: in the run's own workspace, restored to the step's checkpoint like a
rewind (refused while someone else's changes are there, unless the operator chooses per file),
or beside it, so both runs can go on: a new git worktree of the workspace's repository, or a
plain copy of the files, each made equal to the checkpoint. The fork's row names the run and
step it left from; it inherits the steps before that one (``store/forks.py``) and starts
``interrupted`` with no owner: the caller drives it (``io-tui fork``), or hands it to a process
that does (the TUI starts ``io-tui resume``). The parent's trace records the fork as an event.
"""

from __future__ import annotations

import asyncio
import enum
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from io_tui.core.checkpoints.git import CheckpointError, repository_env, run_git
from io_tui.core.checkpoints.rewind import (
    FileChoice,
    RewindError,
    RewindPlan,
    apply_rewind,
    checkpoint_before,
    plan_rewind,
)
from io_tui.core.checkpoints.shadow import ShadowStore, Snapshot
from io_tui.core.checkpoints.taking import shadow_for
from io_tui.core.contract import contract_from_json
from io_tui.core.events import EventKind, RunEvent
from io_tui.core.store import Store
from io_tui.core.store.checkpoints import FORK, CheckpointRow
from io_tui.core.store.forks import NewFork
from io_tui.core.store.runs import RunRow


class ForkError(Exception):
    """A fork that cannot be made: one line saying why."""


class ForkPlace(enum.StrEnum):
    HERE = "here"  # the run's own workspace, restored to the step
    WORKTREE = "worktree"  # a new git worktree of the workspace's repository
    COPY = "copy"  # a plain copy of the workspace's files as they were


@dataclass(frozen=True, slots=True)
class ForkPlan:
    """What forking ``parent`` at ``step`` would do: the request it repeats, the checkpoint its
    workspace is restored to (None: the run took none, and the workspace is as it is), and
    for a fork in place, the rewind that restores it."""

    parent: RunRow
    step: int
    place: ForkPlace
    directory: Path  # where the fork works
    request_id: int
    messages: int
    est_tokens: int
    checkpoint: CheckpointRow | None
    rewind: RewindPlan | None

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.parent.id,
            "step": self.step,
            "place": self.place.value,
            "directory": str(self.directory),
            "request_id": self.request_id,
            "messages": self.messages,
            "est_tokens": self.est_tokens,
            "checkpoint": self.checkpoint.to_json() if self.checkpoint else None,
            "rewind": self.rewind.to_json() if self.rewind else None,
        }


async def plan_fork(
    store: Store,
    run_id: int,
    step: int,
    place: ForkPlace = ForkPlace.HERE,
    directory: Path | None = None,
) -> ForkPlan:
    """What a fork of run ``run_id`` at ``step`` would do; ``ForkError`` when it cannot."""
    parent = await store.runs.get(run_id)
    if parent is None:
        raise ForkError(f"no run {run_id} in the store")
    if not 1 <= step <= parent.steps:
        raise ForkError(f"run {run_id} has steps 1–{parent.steps}; no step {step}")
    request = await store.trace.answered_request(run_id, step)
    if request is None:
        raise ForkError(f"run {run_id} recorded no request at step {step} to fork from")
    try:
        checkpoint: CheckpointRow | None = await checkpoint_before(store, parent, step)
    except RewindError as exc:
        if "has no checkpoint" not in str(exc):
            raise ForkError(str(exc)) from None
        checkpoint = None  # it changed no files: the workspace is as the step found it
    rewind = None
    if place is ForkPlace.HERE:
        directory = Path(parent.workspace)
        if checkpoint is not None:
            try:
                rewind = await plan_rewind(store, run_id, to_step=step)
            except RewindError as exc:
                raise ForkError(str(exc)) from None
    elif directory is None:
        raise ForkError(f"a fork in a {place.value} needs the directory to make it in")
    else:
        directory = directory.expanduser().resolve()
        await asyncio.to_thread(_check_new_place, place, Path(parent.workspace), directory)
    return ForkPlan(
        parent,
        step,
        place,
        directory,
        request.id,
        len(request.messages),
        request.est_tokens,
        checkpoint,
        rewind,
    )


def _check_new_place(place: ForkPlace, workspace: Path, directory: Path) -> None:
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise ForkError(f"{directory} exists and is not an empty directory")
    if place is ForkPlace.WORKTREE and not (workspace / ".git").exists():
        raise ForkError(
            f"{workspace} is not a git repository: fork into a copy (--copy DIR) instead"
        )


async def create_fork(
    store: Store,
    plan: ForkPlan,
    *,
    task: str = "",
    choices: Mapping[str, FileChoice] | None = None,
    provider: dict[str, Any] | None = None,
    origin: dict[str, Any] | None = None,
    max_steps: int | None = None,
) -> int:
    """Make the fork ``plan`` describes: its workspace restored (or made), its row with the
    parent's history before the step, its first checkpoint, ``task`` as the operator's message
    its first request carries; the parent's ``forked`` event. Its id; it is not driven."""
    parent = plan.parent
    if plan.rewind is not None and plan.rewind.changes:
        try:
            await apply_rewind(store, plan.rewind, choices)
        except RewindError as exc:
            raise ForkError(str(exc)) from None
    elif plan.rewind is not None and plan.rewind.foreign:
        missing = [c.path for c in plan.rewind.foreign if c.path not in (choices or {})]
        if missing:
            raise ForkError(
                f"refused: {len(missing)} files changed after run {parent.id}'s last checkpoint:"
                f" {', '.join(missing[:5])}; say per file whether to keep or overwrite it"
            )
    if plan.place is not ForkPlace.HERE:
        try:
            await asyncio.to_thread(_make_place, plan)
        except CheckpointError as exc:
            raise ForkError(str(exc)) from None
    contract = dict(parent.contract)
    contract["workspace"] = str(plan.directory)
    if max_steps is not None:
        contract["max_steps"] = max_steps
    fork_id = await store.forks.create(
        NewFork(
            parent_id=parent.id,
            step=plan.step,
            goal=parent.goal,
            workspace=str(plan.directory),
            contract=contract,
            provider=provider or parent.provider,
            policy=parent.policy,
            origin=origin if origin is not None else parent.origin,
        )
    )
    if task.strip():
        await store.runs.add_operator_message(fork_id, task.strip())
    await _first_checkpoint(store, plan, fork_id, contract)
    detail = {
        "run_id": fork_id,
        "step": plan.step,
        "place": plan.place.value,
        "directory": str(plan.directory),
        "task": task.strip(),
    }
    await store.runs.add_events([RunEvent(parent.id, parent.steps, EventKind.FORKED, detail)])
    return fork_id


def _make_place(plan: ForkPlan) -> None:
    """The fork's own directory: a git worktree of the workspace's repository (at its HEAD) or
    an empty one, then made equal to the checkpoint."""
    workspace = Path(plan.parent.workspace)
    source = shadow_for(workspace)
    tree = plan.checkpoint.tree if plan.checkpoint is not None else _now(source, plan).tree
    if plan.place is ForkPlace.WORKTREE:
        add = ["worktree", "add", "--detach", "--quiet", str(plan.directory)]
        run_git(repository_env(), add, cwd=workspace)
    else:
        plan.directory.mkdir(parents=True, exist_ok=True)
    source.materialize(tree, plan.directory, clean=plan.place is ForkPlace.WORKTREE)
    if plan.checkpoint is not None:
        shadow_for(plan.directory).adopt(source, plan.checkpoint.run_id)


def _now(source: ShadowStore, plan: ForkPlan) -> Snapshot:
    return source.snapshot(f"io-tui fork of run {plan.parent.id}", run_id=None)


async def _first_checkpoint(
    store: Store, plan: ForkPlan, fork_id: int, contract: dict[str, Any]
) -> None:
    """The fork's workspace as it starts: its first checkpoint, before its first step."""
    limits = contract_from_json(contract).checkpoints
    if not limits.enabled:
        return
    shadow = shadow_for(plan.directory, limits)
    try:
        snap = await asyncio.to_thread(
            shadow.snapshot,
            f"io-tui run {fork_id}: forked from run {plan.parent.id}",
            run_id=fork_id,
        )
    except CheckpointError:
        return  # the fork's own first step takes one, or says why it cannot
    await store.checkpoints.add(
        run_id=fork_id,
        step=plan.step,
        phase=FORK,
        workspace=str(shadow.root),
        commit=snap.commit,
        tree=snap.tree,
        changed=snap.changed,
        skipped=[s.to_json() for s in snap.skipped],
        took_ms=0.0,
    )
