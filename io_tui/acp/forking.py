"""``session/fork`` and the ``_io-tui/rewind`` extension method: a session forked from any step
of one of its runs, and a run's files rewound (or the last rewind undone) from the client.

A forked session's one run is a fork of the parent session's run (``create_fork``): its first
request is the forked step's, as recorded. By default the fork leaves from the last step of
the session's last run; ``_meta: {"io-tui": {"runId": R, "step": N}}`` picks another. The
request's ``cwd`` says where the fork works: the run's own workspace (restored to the step,
refused while someone else changed files there), or another directory, empty or not yet
made, which becomes a git worktree of the workspace's repository (a copy when the workspace
is no repository). The fork waits, ``interrupted``, for the new session's first prompt, which
resumes it with the prompt as the operator's message.

``_io-tui/rewind`` takes ``{"sessionId", "step"}`` (or ``"undo": true``; ``"runId"`` picks a run
of the session other than its last) and answers the plan first when ``"dryRun"`` is true: the
files a rewind would change, and those someone else changed, each of which needs ``"keep"``
or ``"overwrite"`` (lists of paths) before it goes on.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp import RequestError

from io_tui.core import (
    FileChoice,
    ForkError,
    ForkPlace,
    RewindError,
    apply_rewind,
    create_fork,
    plan_fork,
    plan_rewind,
)

if TYPE_CHECKING:
    from io_tui.core import Store

RunRow = Any  # a run's row in the store (``store.runs.get``)

REWIND_METHOD = "io-tui/rewind"


def invalid(details: str, **data: Any) -> RequestError:
    return RequestError.invalid_params({"details": details, **data})


def io_tui_meta(meta: dict[str, Any] | None) -> dict[str, Any]:
    """The ``io-tui`` part of a request's ``_meta`` (empty when there is none)."""
    value = (meta or {}).get("io-tui")
    return value if isinstance(value, dict) else {}


def pick_run(runs: list[RunRow], session_id: str, run_id: Any) -> RunRow:
    """The session's run ``run_id`` (None: its last); ``invalid`` when it has no such run."""
    if not runs:
        raise RequestError.resource_not_found(session_id)
    if run_id is None:
        return runs[-1]
    chosen = next((r for r in runs if r.id == run_id), None)
    if chosen is None:
        have = ", ".join(str(r.id) for r in runs)
        raise invalid(f"session {session_id} has runs {have}; no run {run_id!r}")
    return chosen


def _step(value: Any, run: RunRow) -> int:
    if value is None:
        return max(run.steps, 1)
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(f"step must be a step number of run {run.id}, not {value!r}")
    return value


def fork_place(workspace: Path, cwd: str) -> tuple[ForkPlace, Path | None]:
    """Where a fork asked for in ``cwd`` works: in place, or in a new worktree or copy."""
    path = Path(cwd)
    if not path.is_absolute():
        raise invalid(f"cwd must be an absolute path, not {cwd!r}", cwd=cwd)
    path = path.resolve()
    if path == workspace:
        return ForkPlace.HERE, None
    repository = (workspace / ".git").exists()
    return (ForkPlace.WORKTREE if repository else ForkPlace.COPY), path


async def fork_run(
    store: Store,
    runs: list[RunRow],
    session_id: str,
    new_session_id: str,
    cwd: str,
    meta: dict[str, Any] | None,
) -> tuple[int, RunRow, int, Path]:
    """Fork the session's run (the last, or ``meta``'s) at a step into a run of the new
    session: its id, the parent, the step and the directory it works in."""
    wanted = io_tui_meta(meta)
    parent = pick_run(runs, session_id, wanted.get("runId"))
    step = _step(wanted.get("step"), parent)
    place, directory = await asyncio.to_thread(fork_place, Path(parent.workspace), cwd)
    try:
        plan = await plan_fork(store, parent.id, step, place, directory)
        if plan.rewind is not None and plan.rewind.foreign:
            files = ", ".join(c.path for c in plan.rewind.foreign[:5])
            raise invalid(
                f"refused: {len(plan.rewind.foreign)} file(s) changed after run {parent.id}'s last"
                f" checkpoint by someone else ({files}): fork into another cwd, or rewind first"
                f" (_{REWIND_METHOD}), which asks per file",
                files=[c.path for c in plan.rewind.foreign],
            )
        origin = {**(parent.origin or {}), "session": new_session_id}
        task = str(wanted.get("task") or "")
        fork_id = await create_fork(store, plan, task=task, origin=origin)
    except ForkError as exc:
        raise invalid(str(exc)) from None
    return fork_id, parent, step, plan.directory


async def rewind_run(
    store: Store, runs: list[RunRow], session_id: str, params: dict[str, Any]
) -> dict[str, Any]:
    """``_io-tui/rewind``: the plan (``dryRun``), or the rewind done; ``invalid`` when refused."""
    run = pick_run(runs, session_id, params.get("runId"))
    undo = bool(params.get("undo"))
    step = None if undo else params.get("step")
    if not undo and (isinstance(step, bool) or not isinstance(step, int)):
        raise invalid('say the step to rewind to before ("step": N), or "undo": true')
    choices = _choices(params)
    try:
        plan = await plan_rewind(store, run.id, to_step=step, undo=undo)
        if params.get("dryRun"):
            return {"runId": run.id, "plan": plan.to_json(), "summary": plan.summary()}
        missing = [p for p in plan.needs_choices if p not in choices]
        if missing:
            raise invalid(
                f"refused: {len(missing)} file(s) changed after run {run.id}'s last checkpoint by"
                f' someone else: {", ".join(missing[:5])}; name each in "keep" or "overwrite"',
                files=missing,
            )
        result = await apply_rewind(store, plan, choices)
    except RewindError as exc:
        raise invalid(str(exc)) from None
    return {"runId": run.id, "result": result.to_json(), "summary": plan.summary()}


def _choices(params: dict[str, Any]) -> dict[str, FileChoice]:
    choices: dict[str, FileChoice] = {}
    for key, choice in (("keep", FileChoice.KEEP), ("overwrite", FileChoice.OVERWRITE)):
        paths = params.get(key) or []
        if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
            raise invalid(f"{key} must be a list of paths")
        for path in paths:
            choices[path] = choice
    return choices
