"""The checkpoint pruning policy: which runs' checkpoints a workspace's shadow store keeps.

Kept: the checkpoints of the workspace's newest ``keep_runs`` runs (by their newest
checkpoint), of every run whose newest checkpoint is younger than ``keep_days``, and of every
run that has not ended (it may go on, or be rewound). The others are pruned: their git refs
are deleted and their rows marked ``pruned_at`` (a rewind to them says so), and git frees
their objects: at a run's end with ``git gc --auto`` (past git's thresholds, after its grace
period), or at once with ``io-tui checkpoints --prune``. Trees share every unchanged file, so
a kept run costs only what it changed.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from io_tui.core.checkpoints.taking import shadow_for
from io_tui.core.contract import CheckpointLimits
from io_tui.core.store import Store

DAY_S = 86_400


@dataclass(frozen=True, slots=True)
class Pruned:
    """What a prune did: the runs whose checkpoints went, those kept, the store's size after."""

    workspace: str
    dropped: tuple[int, ...]
    kept: tuple[int, ...]
    size_bytes: int | None = None


async def prune_checkpoints(
    store: Store,
    workspace: str,
    limits: CheckpointLimits | None = None,
    *,
    collect_now: bool = False,
    now: float | None = None,
) -> Pruned:
    """Apply the policy to ``workspace``'s checkpoints (``collect_now``: free the objects at
    once, ``git gc --prune=now``; else ``git gc --auto``, and only when something went)."""
    limits = limits or CheckpointLimits()
    runs = await store.checkpoints.runs_of(workspace)
    cutoff = (now if now is not None else time.time()) - limits.keep_days * DAY_S
    dropped = tuple(
        run_id
        for run_id, newest, finished in runs[limits.keep_runs :]
        if finished is not None and newest < cutoff
    )
    kept = tuple(r for r, _, _ in runs if r not in dropped)
    shadow = shadow_for(Path(workspace), limits)
    if dropped:
        await asyncio.to_thread(shadow.drop_runs, dropped)
        await store.checkpoints.mark_pruned(dropped)
    if collect_now:
        await asyncio.to_thread(shadow.collect, now=True)
        return Pruned(workspace, dropped, kept, await asyncio.to_thread(shadow.size_bytes))
    if dropped:
        await asyncio.to_thread(shadow.collect, now=False)
    return Pruned(workspace, dropped, kept)
