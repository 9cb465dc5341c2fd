"""Rewind through real files, real git and real processes: a scripted run that writes, edits and
deletes files, and changes them through ``run_command`` (``sed -i``, ``rm``, ``mv``, ``chmod``,
a generated file in an ignored directory), rewound to before each of its steps in turn. Each
time the workspace equals, byte for byte and mode for mode, a copy taken before that step; a
file changed by hand after the run makes the rewind refuse; undoing the rewind gives back the
state after the run; the workspace's own ``.git`` (an index, a stash, a hook) never changes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from workspace_state import Copier, dot_git, git, make_repo, tree_state

from io_tui.core import (
    ApproveAll,
    Harness,
    Policy,
    ScriptedProvider,
    Store,
    TaskContract,
    start_run,
)
from io_tui.core.checkpoints.rewind import FileChoice, RewindError, apply_rewind, plan_rewind
from io_tui.core.contract import CheckpointLimits
from io_tui.core.events import NullSink


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def cmd(*argv: str) -> dict[str, Any]:
    return call("run_command", argv=list(argv))


SCRIPT = [
    call("read_file", path="src/app.py"),  # 1: reads only: no checkpoint of its own
    call("write_file", path="new.txt", content="made by the run\n"),  # 2
    call("edit_file", path="src/app.py", old="return x", new="return x + 1"),  # 3
    cmd("sed", "-i", "s/beta/BETA/", "notes.txt"),  # 4
    cmd("rm", "README.md"),  # 5
    cmd("mv", "notes.txt", "moved.txt"),  # 6
    cmd("sh", "-c", "mkdir -p build/gen && echo generated > build/gen/out.txt"),  # 7
    cmd("chmod", "+x", "new.txt"),  # 8
    cmd("sh", "-c", "rm link.py && ln -s run.sh link.py && rm scratch.txt"),  # 9
    {"text": "done"},  # 10
]


async def scripted_run(store: Store, root: Path, script_path: Path, sink: Any = None) -> int:
    harness = Harness(
        store=store,
        provider=ScriptedProvider.from_file(script_path),
        approver=ApproveAll(),
        sink=sink or NullSink(),
        policy=Policy(),
    )
    result = await start_run(harness, TaskContract("change files", root, max_steps=20))
    assert result.status == "finished", result
    return result.run_id


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    make_repo(root)
    return root


async def test_rewind_to_each_step_restores_the_copy_taken_before_it(
    store: Store, repo: Path, tmp_path: Path, write_script: Any
) -> None:
    git_before = dot_git(repo)
    copier = Copier(repo, tmp_path / "copies")
    run_id = await scripted_run(store, repo, write_script(SCRIPT), copier)
    after_run = tree_state(repo)
    assert after_run["build/gen/out.txt"][0] == "file"  # the run did change what it was told
    assert "README.md" not in after_run and after_run["new.txt"][1] == 0o755
    checkpoints = await store.checkpoints.for_run(run_id)
    assert {c.step for c in checkpoints if c.phase == "before"} == set(range(2, 10))

    for step in range(1, 11):
        plan = await plan_rewind(store, run_id, to_step=step)
        assert not plan.foreign, (step, plan.foreign)
        result = await apply_rewind(store, plan)
        assert result.mismatched == ()
        assert tree_state(repo) == copier.copies[step], f"before step {step}"
        assert dot_git(repo) == git_before

    # undoing the last rewind (to before step 10) goes back to what it found: before step 9
    undo = await apply_rewind(store, await plan_rewind(store, run_id, undo=True))
    assert tree_state(repo) == copier.copies[9]
    assert undo.plan.undo
    assert dot_git(repo) == git_before
    assert git(repo, "stash", "list").count("\n") == 1


async def test_undo_restores_the_state_after_the_run(
    store: Store, repo: Path, tmp_path: Path, write_script: Any
) -> None:
    run_id = await scripted_run(store, repo, write_script(SCRIPT), Copier(repo, tmp_path))
    after_run = tree_state(repo)
    result = await apply_rewind(store, await plan_rewind(store, run_id, to_step=2))
    assert tree_state(repo) != after_run
    assert "new.txt" in result.deleted
    await apply_rewind(store, await plan_rewind(store, run_id, undo=True))
    assert tree_state(repo) == after_run
    # an undo is a rewind too: undoing it goes back to before step 2 again
    await apply_rewind(store, await plan_rewind(store, run_id, undo=True))
    assert "new.txt" not in tree_state(repo)
    events = [e for e in await store.trace.events(run_id) if e.kind == "rewound"]
    assert [e.detail["undo"] for e in events] == [False, True, True]
    steps = await store.trace.steps(run_id)
    assert len(steps) == 10  # the history is never rewound


async def test_a_hand_edit_after_the_run_makes_the_rewind_refuse(
    store: Store, repo: Path, tmp_path: Path, write_script: Any
) -> None:
    run_id = await scripted_run(store, repo, write_script(SCRIPT), Copier(repo, tmp_path))
    (repo / "src" / "app.py").write_text("edited by hand after the run\n")
    (repo / "editor.txt").write_text("a new file from an editor\n")
    plan = await plan_rewind(store, run_id, to_step=3)
    assert {c.path for c in plan.foreign} == {"src/app.py", "editor.txt"}
    with pytest.raises(RewindError, match="refused: 2 files changed after run"):
        await apply_rewind(store, plan)
    assert (repo / "src" / "app.py").read_text() == "edited by hand after the run\n"
    # the operator keeps the hand edit and lets the new file go
    choices = {"src/app.py": FileChoice.KEEP, "editor.txt": FileChoice.OVERWRITE}
    result = await apply_rewind(store, plan, choices)
    assert (repo / "src" / "app.py").read_text() == "edited by hand after the run\n"
    assert not (repo / "editor.txt").exists()
    assert (repo / "new.txt").read_text() == "made by the run\n"  # step 2 wrote it
    assert not os.access(repo / "new.txt", os.X_OK)  # step 8 made it executable
    assert result.kept == ("src/app.py",)


async def test_a_change_after_the_plan_is_refused(
    store: Store, repo: Path, tmp_path: Path, write_script: Any
) -> None:
    run_id = await scripted_run(store, repo, write_script(SCRIPT), Copier(repo, tmp_path))
    plan = await plan_rewind(store, run_id, to_step=2)
    (repo / "late.txt").write_text("after the plan\n")
    with pytest.raises(RewindError, match="changed since the rewind was planned"):
        await apply_rewind(store, plan)
    assert (repo / "late.txt").exists() and (repo / "new.txt").exists()


async def test_large_files_and_ignored_directories_are_left_out_and_said(
    store: Store, repo: Path, tmp_path: Path, write_script: Any
) -> None:
    (repo / "node_modules" / "pkg").mkdir(parents=True)
    for i in range(30):
        (repo / "node_modules" / "pkg" / f"{i}.js").write_text(str(i))
    (repo / ".gitignore").write_text("build/\n*.log\nnode_modules/\n")
    (repo / "big.bin").write_bytes(b"x" * 4096)
    harness = Harness(
        store=store,
        provider=ScriptedProvider.from_file(write_script([cmd("rm", "big.bin"), {"text": "ok"}])),
        approver=ApproveAll(),
        policy=Policy(),
    )
    limits = CheckpointLimits(max_file_bytes=1000, ignored_dir_files=10)
    contract = TaskContract("go", repo, checkpoints=limits)
    result = await start_run(harness, contract)
    [before, _after] = await store.checkpoints.for_run(result.run_id)
    reasons = {s["path"]: s["reason"] for s in before.skipped}
    assert "over the 1,000-byte cap" in reasons["big.bin"]
    assert "over 10 files" in reasons["node_modules/"]
    trace_events = [e for e in await store.trace.events(result.run_id) if e.kind == "checkpoint"]
    assert trace_events[0].detail["skipped"] == 2
    plan = await plan_rewind(store, result.run_id, to_step=1)
    assert plan.changes == ()  # the big file is not in the checkpoint: it cannot come back
    assert (repo / "node_modules" / "pkg" / "3.js").exists()


async def test_pruning_keeps_the_newest_runs_and_frees_the_rest(
    store: Store, repo: Path, write_script: Any
) -> None:
    import time

    from io_tui.core.checkpoints.pruning import prune_checkpoints

    runs = []
    for i in range(4):
        script = write_script(
            [call("write_file", path=f"f{i}.txt", content=f"{i}\n"), {"text": "ok"}]
        )
        runs.append(await scripted_run(store, repo, script))
    limits = CheckpointLimits(keep_runs=2, keep_days=0)
    workspace = (await store.checkpoints.for_run(runs[0]))[0].workspace
    pruned = await prune_checkpoints(
        store, workspace, limits, collect_now=True, now=time.time() + 1
    )
    assert pruned.dropped == (runs[1], runs[0]) and set(pruned.kept) == set(runs[2:])
    with pytest.raises(RewindError, match="was pruned"):
        await plan_rewind(store, runs[0], to_step=1)
    await apply_rewind(store, await plan_rewind(store, runs[3], to_step=1))
    assert not (repo / "f3.txt").exists() and (repo / "f2.txt").exists()


async def test_a_sub_agents_changes_are_rewound_with_its_parent(
    store: Store, repo: Path, tmp_path: Path, write_script: Any
) -> None:
    """Step 2 hands the work to a sub-agent that writes a file and runs a command in the same
    workspace: rewinding the parent to before step 2 takes back what the sub-agent did."""
    spawn = {"name": "spawn_agent", "arguments": {"goal": "write and clean up"}}
    script = [
        call("write_file", path="parent.txt", content="the parent's\n"),  # parent step 1
        {"tool_calls": [spawn]},  # parent step 2: the sub-agent's run
        call("write_file", path="child.txt", content="the sub-agent's\n"),  # child step 1
        cmd("sed", "-i", "s/beta/BETA/", "notes.txt"),  # child step 2
        {"text": "child: done"},
        {"text": "parent: done"},
    ]
    copier = Copier(repo, tmp_path)
    run_id = await scripted_run(store, repo, write_script(script), copier)
    assert (repo / "child.txt").exists() and "BETA" in (repo / "notes.txt").read_text()
    rows = await store.runs.all()
    assert [r.parent_run_id for r in rows] == [None, run_id]  # a sub-agent did step 2's work
    plan = await plan_rewind(store, run_id, to_step=2)
    assert plan.foreign == ()  # the sub-agent is the run's own, not someone else
    await apply_rewind(store, plan)
    assert tree_state(repo) == copier.copies[2]  # as the parent's step 2 found it
    assert not (repo / "child.txt").exists() and "beta" in (repo / "notes.txt").read_text()
    assert (repo / "parent.txt").exists()
