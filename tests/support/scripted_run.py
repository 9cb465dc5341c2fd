"""One run of a scripted provider's script, every ask approved, to its end: a store with a run
in it for the tests that need one to read, damage or display."""

from __future__ import annotations

from pathlib import Path

from io_tui.core import (
    ApproveAll,
    Harness,
    Policy,
    RunResult,
    ScriptedProvider,
    Store,
    TaskContract,
    start_run,
)


async def run_script(store: Store, workspace: Path, script: Path, goal: str = "fix") -> RunResult:
    harness = Harness(
        store=store, provider=ScriptedProvider.from_file(script), approver=ApproveAll(),
        policy=Policy(),
    )  # fmt: skip
    return await start_run(harness, TaskContract(goal, workspace))
