"""One working request read alone (``step_request``: what the inspector shows) is the request the
run's whole trace gives for that step: its last attempt, its prompt-cache annotation, the request
a diff compares it with, and the recorded results its entries name."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.contract import TaskContract
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import start_run
from io_tui.core.steering.trace import TraceNotFound, build_trace, step_request
from io_tui.core.store.requests import RequestRecord


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def test_each_step_s_request_read_alone_is_the_one_the_trace_gives(
    store, workspace, write_script
) -> None:
    script = write_script(
        [
            call("read_file", path="src/app.py"),
            call("read_file", path="README.md"),
            call("write_file", path="src/app.py", content="x = 1\n"),  # step 1's read is stale
            call("list_dir", path="src"),
            {"text": "done"},
        ]
    )
    harness = Harness(store, ScriptedProvider.from_file(script), ApproveAll())
    run_id = (await start_run(harness, TaskContract("look", workspace))).run_id
    # step 3's request asked again (a second attempt, as a provider's error leaves one), and a
    # summary request beside it: neither is a working request of another step
    third = next(r for r in await store.trace.requests(run_id) if r.step == 3)
    fields = {f.name for f in dataclasses.fields(RequestRecord)}
    again = {k: v for k, v in dataclasses.asdict(third).items() if k in fields}
    await store.runs.add_request(run_id, RequestRecord(**{**again, "attempt": 2}))
    await store.runs.add_request(run_id, RequestRecord(**{**again, "purpose": "summary"}))

    trace = await build_trace(store, run_id)
    work = [r for r in trace["requests"] if r["purpose"] == "work"]
    steps = sorted({r["step"] for r in work})
    assert len(steps) == 5

    def last_of(step: int) -> dict[str, Any]:
        return [r for r in work if r["step"] == step][-1]

    for step in steps:
        view = await step_request(store, run_id, step)
        assert (view.step, view.request_steps) == (step, tuple(steps))
        assert view.request == last_of(step)  # the cache annotation included
        earlier = [s for s in steps if s < step]
        if earlier:  # the previous step's, as the diff compares it (without its own cache)
            previous = {k: v for k, v in last_of(earlier[-1]).items() if k != "cache"}
            assert view.previous == previous
        else:
            assert view.previous is None
        named = {e["step"] for e in last_of(step)["entries"]}
        by_step = {s["step"]: s for s in trace["steps"]}
        assert [s["step"] for s in view.steps] == sorted(named)
        for shown in view.steps:
            whole = by_step[shown["step"]]
            assert (shown["result"], shown["observations"]) == (
                whole["result"],
                whole["observations"],
            )
    retried = await step_request(store, run_id, 3)
    assert retried.request is not None and retried.request["attempt"] == 2
    assert retried.request["cache"]["broke_at"] is None  # against its own first attempt
    assert (await step_request(store, run_id, 99)).step == steps[-1]  # the nearest step
    with pytest.raises(TraceNotFound):
        await step_request(store, run_id + 1, 1)
