"""A fork from any step, through real HTTP, real files and real git: its first request is the
parent's recorded request at that step, the same bytes on the wire (prompt-cache key included),
on the workspace as it was before that step, in place, in a git worktree or in a copy; the
parent's history and the steps before the fork are the fork's too."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from replay_server import ReplayServer, sse_reply
from wire_streams import openai_stream
from workspace_state import Copier, tree_state

from io_tui.core import ApproveAll, Harness, Policy, Store, TaskContract, start_run
from io_tui.core.providers.presets import make_provider
from io_tui.core.run.reconcile import RefuseReconcile
from io_tui.core.steering.decisions import resume
from io_tui.core.steering.fork import ForkError, ForkPlace, create_fork, plan_fork
from io_tui.core.steering.trace import build_trace

MODEL = "gpt-4o-mini"


@pytest.fixture
async def server() -> AsyncIterator[ReplayServer]:
    srv = ReplayServer()
    await srv.start()
    yield srv
    await srv.stop()


def parent_replies() -> list[bytes]:
    return [
        openai_stream(call=("write_file", {"path": "a.txt", "content": "one\n"}), call_id="c1"),
        openai_stream(
            call=("run_command", {"argv": ["sed", "-i", "s/one/ONE/", "a.txt"]}), call_id="c2"
        ),
        openai_stream(call=("write_file", {"path": "b.txt", "content": "two\n"}), call_id="c3"),
        openai_stream(text="all done"),
    ]


@pytest.fixture
def workspace_repo(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# project\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin"}  # fmt: skip
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)
    return root


async def parent_run(
    store: Store, server: ReplayServer, root: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, Copier]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-fork")
    server.add(*(sse_reply(body) for body in parent_replies()))
    provider = make_provider("openai", model=MODEL, base_url=server.base_url + "/v1")
    copier = Copier(root, root.parent / "copies")
    harness = Harness(store, provider, ApproveAll(), sink=copier, policy=Policy())
    try:
        result = await start_run(harness, TaskContract("make two files", root, max_steps=10))
    finally:
        await provider.aclose()
    assert result.status == "finished", result
    return result.run_id, copier


async def drive(store: Store, run_id: int) -> Any:
    return await resume(store, run_id, reconciler=RefuseReconcile(), approver=ApproveAll())


async def test_the_forks_first_request_is_the_recorded_one_byte_for_byte(
    store: Store, server: ReplayServer, workspace_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent, copier = await parent_run(store, server, workspace_repo, monkeypatch)
    sent_at_step_3 = server.requests[2].raw
    plan = await plan_fork(store, parent, 3)
    assert plan.rewind is not None and {c.path for c in plan.rewind.changes} == {"b.txt"}
    fork = await create_fork(store, plan)
    assert tree_state(workspace_repo) == copier.copies[3]  # restored in place

    server.add(sse_reply(openai_stream(text="the fork is done")))
    result = await drive(store, fork)
    assert result.status == "finished" and result.run_id == fork
    assert server.requests[4].raw == sent_at_step_3  # the same bytes on the wire
    assert json.loads(sent_at_step_3)["prompt_cache_key"].startswith("io-tui-")

    parent_request = await store.trace.answered_request(parent, 3)
    fork_request = await store.trace.answered_request(fork, 3)
    assert parent_request is not None and fork_request is not None
    assert json.dumps(fork_request.messages) == json.dumps(parent_request.messages)
    assert fork_request.manifest["fork"]["request_id"] == parent_request.id

    trace = await build_trace(store, fork)
    assert trace["run"]["forked_from"] == {"run_id": parent, "step": 3}
    assert [s["step"] for s in trace["steps"]] == [1, 2, 3]  # 1 and 2 are the parent's
    assert trace["steps"][2]["text"].strip() == "the fork is done"
    parent_trace = await build_trace(store, parent)
    assert parent_trace["forks"] == [{"run_id": fork, "step": 3}]
    assert [e["kind"] for e in parent_trace["events"]][-2:] == ["rewound", "forked"]


async def test_a_new_instruction_follows_the_recorded_request(
    store: Store, server: ReplayServer, workspace_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    parent, _ = await parent_run(store, server, workspace_repo, monkeypatch)
    plan = await plan_fork(store, parent, 2)
    fork = await create_fork(store, plan, task="use awk instead of sed")
    server.add(sse_reply(openai_stream(text="ok")))
    await drive(store, fork)
    recorded = json.loads(server.requests[1].raw)["messages"]
    sent = json.loads(server.requests[4].raw)["messages"]
    assert sent[: len(recorded)] == recorded
    assert sent[len(recorded) :] == [
        {"role": "user", "content": "[operator] use awk instead of sed"}
    ]


@pytest.mark.parametrize("place", [ForkPlace.WORKTREE, ForkPlace.COPY])
async def test_a_fork_beside_the_run_leaves_its_workspace_alone(
    store: Store,
    server: ReplayServer,
    workspace_repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    place: ForkPlace,
) -> None:
    parent, copier = await parent_run(store, server, workspace_repo, monkeypatch)
    after_run = tree_state(workspace_repo)
    target = tmp_path / f"fork-{place.value}"
    plan = await plan_fork(store, parent, 3, place, target)
    fork = await create_fork(store, plan)
    assert tree_state(workspace_repo) == after_run
    made = tree_state(target)
    if place is ForkPlace.WORKTREE:
        assert made.pop(".git")[0] == "file"  # a worktree's link to the repository
    assert made == copier.copies[3]
    row = await store.runs.get(fork)
    assert row is not None and row.workspace == str(target.resolve())
    # the fork's steps before the one it left from rewind from its parent's checkpoints
    from io_tui.core.checkpoints.rewind import apply_rewind, plan_rewind

    server.add(sse_reply(openai_stream(text="ok")))
    await drive(store, fork)
    await apply_rewind(store, await plan_rewind(store, fork, to_step=2))
    made = tree_state(target)
    made.pop(".git", None)
    assert made == copier.copies[2]


async def test_bad_forks_say_why(
    store: Store, server: ReplayServer, workspace_repo: Path, monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:  # fmt: skip
    parent, _ = await parent_run(store, server, workspace_repo, monkeypatch)
    with pytest.raises(ForkError, match="no step 9"):
        await plan_fork(store, parent, 9)
    with pytest.raises(ForkError, match="no run 99"):
        await plan_fork(store, 99, 1)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(ForkError, match="not an empty directory"):
        await plan_fork(store, parent, 2, ForkPlace.COPY, tmp_path / "full")
    (workspace_repo / "a.txt").write_text("edited by hand\n")
    plan = await plan_fork(store, parent, 2)
    with pytest.raises(ForkError, match="refused: 1 file changed"):
        await create_fork(store, plan)
