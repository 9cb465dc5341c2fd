"""A run's checkpoints as it goes: before a step's first call that may change files, and after
its calls, each recorded in the store with what it left out.

The snapshot itself is git work on a thread (``shadow.ShadowStore``); a checkpoint that fails
(no git, a full disk) is said and the run goes on: what cannot be rewound is known, and a
missing checkpoint is never pretended.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from io_tui import paths
from io_tui.core.checkpoints.git import CheckpointError
from io_tui.core.checkpoints.shadow import ShadowStore, Snapshot
from io_tui.core.contract import CheckpointLimits
from io_tui.core.store import Store
from io_tui.core.store.checkpoints import CheckpointRow


@dataclass(frozen=True, slots=True)
class Taken:
    """One checkpoint taken: its row, and how long it took."""

    row: CheckpointRow
    snapshot: Snapshot
    took_ms: float


def shadow_for(root: Path, limits: CheckpointLimits | None = None) -> ShadowStore:
    """The shadow store of the workspace ``root`` (``paths.checkpoints_dir()``)."""
    return ShadowStore.for_workspace(paths.checkpoints_dir(), root, limits)


class RunCheckpoints:
    """The checkpoints of run ``run_id`` in the workspace ``root``."""

    def __init__(
        self, store: Store, run_id: int, root: Path, limits: CheckpointLimits | None = None
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.shadow = shadow_for(root, limits)
        self._last: tuple[str, str] | None = None  # the run's newest (commit, tree)
        self._loaded = False

    async def taken(self) -> bool:
        """Whether the run has a checkpoint (a run that changed nothing needs no last one)."""
        await self._load()
        return self._last is not None

    async def _load(self) -> None:
        if not self._loaded:
            newest = await self.store.checkpoints.latest(self.run_id)
            if newest is not None and newest.pruned_at is None:
                self._last = (newest.git_commit, newest.tree)
            self._loaded = True

    async def take(self, step: int, phase: str) -> Taken:
        """A checkpoint now; raises ``CheckpointError`` with one line when it cannot be taken."""
        await self._load()
        started = time.perf_counter()
        message = f"io-tui run {self.run_id} step {step} {phase}"
        snapshot = await asyncio.to_thread(
            self.shadow.snapshot, message, run_id=self.run_id, parent=self._last
        )
        took_ms = (time.perf_counter() - started) * 1000
        self._last = (snapshot.commit, snapshot.tree)
        row = await self.store.checkpoints.add(
            run_id=self.run_id,
            step=step,
            phase=phase,
            workspace=str(self.shadow.root),
            commit=snapshot.commit,
            tree=snapshot.tree,
            changed=snapshot.changed,
            skipped=[s.to_json() for s in snapshot.skipped],
            took_ms=took_ms,
        )
        return Taken(row, snapshot, took_ms)


__all__ = ["CheckpointError", "RunCheckpoints", "Taken", "shadow_for"]
