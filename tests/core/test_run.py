"""The run loop through its public API: start_run / resume_run / decide, on a real store."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import weakref
from pathlib import Path
from typing import Any

import pytest
from waits import until

from io_tui.core.authority.approvals import (
    ApprovalRequest,
    ApproveAll,
    Decision,
    DecisionKind,
    DeferAll,
    DenyAll,
    RememberRule,
)
from io_tui.core.authority.policy import Act, Effect, Policy
from io_tui.core.contract import TaskContract
from io_tui.core.events import EventKind, RunEvent
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import Outcome, resume_run, start_run
from io_tui.core.run.server_asks import ENDED_WITH_PROCESS
from io_tui.core.steering.decisions import DecideError, decide
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store
from io_tui.core.store.encoded import ListEncoder

EDIT = {
    "name": "edit_file",
    "arguments": {"path": "src/app.py", "old": "return a", "new": "return x"},
}
READ = {"name": "read_file", "arguments": {"path": "src/app.py"}}


@pytest.fixture
def store_path(store_on_both: Path | str) -> Path | str:
    """Every test here runs on a SQLite file and on a PostgreSQL database (``pg_cluster``)."""
    return store_on_both


class Recorder:
    def __init__(self) -> None:
        self.events: list[RunEvent] = []

    def emit(self, event: RunEvent) -> None:
        self.events.append(event)

    def kinds(self) -> list[EventKind]:
        return [e.kind for e in self.events]


def harness(store: Store, script: Path, approver=None, sink=None, policy=None) -> Harness:
    return Harness(
        store=store,
        provider=ScriptedProvider.from_file(script),
        approver=approver or ApproveAll(),
        sink=sink or Recorder(),
        policy=policy or Policy(),
    )


async def test_a_renewal_racing_the_runs_end_does_not_turn_it_into_a_lost_lease(
    store, workspace, write_script, monkeypatch
):
    """The heartbeat renews without pause, so a renewal is always waiting on the store's
    write lock when the run's end gives its lease up: that renewal finds no lease, and the run
    that ended (finished, or paused at a deferred ask) is told so, not stopped as taken over."""
    monkeypatch.setattr("io_tui.core.run.loop.HEARTBEAT_S", 0.0)
    script = write_script([{"tool_calls": [READ]}, {"text": "done"}])
    for _ in range(5):
        result = await start_run(harness(store, script), TaskContract("t", workspace))
        assert result.status == "finished"
    deferred = await start_run(
        harness(store, write_script([{"tool_calls": [EDIT]}]), approver=DeferAll()),
        TaskContract("t", workspace),
    )
    assert deferred.status == "paused"


async def test_a_run_reads_edits_and_finishes(store, workspace, write_script):
    script = write_script([{"tool_calls": [READ]}, {"tool_calls": [EDIT]}, {"text": "done"}])
    sink = Recorder()
    result = await start_run(harness(store, script, sink=sink), TaskContract("fix", workspace))
    assert result.outcome is Outcome.FINISHED
    assert result.steps == 3
    assert (workspace / "src/app.py").read_text() == "def parse(x):\n    return x\n"
    kinds = sink.kinds()
    assert kinds[0] is EventKind.RUN_STARTED and kinds[-1] is EventKind.RUN_FINISHED
    # streamed text reaches the sink before its step is committed
    assert kinds.index(EventKind.TEXT_DELTA) < len(kinds) - 1 - kinds[::-1].index(
        EventKind.STEP_COMMITTED
    )


async def test_verification_decides_success(store, workspace, write_script):
    script = write_script([{"tool_calls": [EDIT]}, {"text": "fixed"}])
    contract = TaskContract(
        "fix",
        workspace,
        verify=(
            "python3",
            "-c",
            "import sys; sys.exit('return x' not in open('src/app.py').read())",
        ),
    )
    result = await start_run(harness(store, script), contract)
    assert result.outcome is Outcome.SUCCESS


async def test_failed_verification_is_fed_back_then_fails(store, workspace, write_script):
    script = write_script([{"text": "all good"}, {"text": "still good"}])
    contract = TaskContract("fix", workspace, verify=("python3", "-c", "raise SystemExit(1)"))
    result = await start_run(harness(store, script), contract)
    assert result.outcome is Outcome.FAILED
    trace = await build_trace(store, result.run_id)
    assert "Verification" in trace["steps"][1]["operator_messages"][0]


async def test_step_cap(store, workspace, write_script):
    script = write_script([{"tool_calls": [READ]}] * 5)
    result = await start_run(harness(store, script), TaskContract("loop", workspace, max_steps=3))
    assert result.outcome is Outcome.STEP_CAP and result.steps == 3


async def test_policy_deny_never_reaches_the_approver(store, workspace, write_script):
    class Exploding:
        async def decide(self, request):
            raise AssertionError("a denied act must not reach a human")

    script = write_script([{"tool_calls": [{"name": "read_file", "arguments": {"path": ".env"}}]}])
    result = await start_run(
        harness(store, script, approver=Exploding()), TaskContract("x", workspace)
    )
    trace = await build_trace(store, result.run_id)
    obs = trace["steps"][0]["observations"][0]
    assert obs["is_error"] and "builtin-secrets" in obs["text"]
    assert trace["approvals"] == []


async def test_deny_reason_reaches_the_model_and_outcome_is_denied(store, workspace, write_script):
    script = write_script([{"tool_calls": [EDIT]}, {"text": "giving up"}])
    result = await start_run(
        harness(store, script, approver=DenyAll("not today")), TaskContract("x", workspace)
    )
    assert result.outcome is Outcome.DENIED
    assert (workspace / "src/app.py").read_text().endswith("return a\n")
    trace = await build_trace(store, result.run_id)
    assert "not today" in trace["steps"][0]["observations"][0]["text"]
    sent = trace["requests"][1]["messages"]
    assert any(m["role"] == "tool" and "not today" in m["content"] for m in sent)


async def test_rewrite_is_rechecked_and_recorded(store, workspace, write_script):
    class Rewriter:
        async def decide(self, request):
            args = {**request.arguments, "new": "return x  # reviewed"}
            return Decision(DecisionKind.REWRITE, arguments=args)

    script = write_script([{"tool_calls": [EDIT]}])
    result = await start_run(
        harness(store, script, approver=Rewriter()), TaskContract("x", workspace)
    )
    assert "return x  # reviewed" in (workspace / "src/app.py").read_text()
    trace = await build_trace(store, result.run_id)
    approval = trace["approvals"][0]
    assert approval["decision"]["arguments"]["new"] == "return x  # reviewed"
    assert approval["performed"]["arguments"]["new"] == "return x  # reviewed"
    assert "rewrote" in trace["steps"][0]["observations"][0]["text"]


async def test_rewrite_cannot_cross_a_deny(store, workspace, write_script):
    class SneakyRewriter:
        async def decide(self, request):
            return Decision(DecisionKind.REWRITE, arguments={"path": ".env", "content": "X=1"})

    write = {"name": "write_file", "arguments": {"path": "src/new.py", "content": "x = 1\n"}}
    script = write_script([{"tool_calls": [write]}])
    result = await start_run(
        harness(store, script, approver=SneakyRewriter()), TaskContract("x", workspace)
    )
    assert (workspace / ".env").read_text() == "SECRET=1\n"
    assert not (workspace / "src/new.py").exists()
    trace = await build_trace(store, result.run_id)
    assert "Refused by policy" in trace["steps"][0]["observations"][0]["text"]
    assert trace["approvals"][0]["performed"]["performed"] is False


async def test_remember_persists_a_rule_that_stops_later_asks(store, workspace, write_script):
    class RememberOnce:
        calls = 0

        async def decide(self, request):
            self.calls += 1
            return Decision(
                DecisionKind.REMEMBER, rule=RememberRule("src/*", Act.WRITE, "workspace")
            )

    approver = RememberOnce()
    w1 = {"name": "write_file", "arguments": {"path": "src/a.py", "content": "a"}}
    w2 = {"name": "write_file", "arguments": {"path": "src/b.py", "content": "b"}}
    script = write_script([{"tool_calls": [w1]}, {"tool_calls": [w2]}])
    await start_run(harness(store, script, approver=approver), TaskContract("x", workspace))
    assert approver.calls == 1
    assert (workspace / "src/b.py").read_text() == "b"
    rules = await store.rules.list()
    assert [(r.pattern, r.act, r.effect, r.scope) for r in rules] == [
        ("src/*", Act.WRITE, Effect.ALLOW, "workspace")
    ]


async def test_always_reject_persists_a_deny_rule_the_run_applies_at_once(
    store, workspace, write_script
):
    class RejectAlways:
        calls = 0

        async def decide(self, request):
            self.calls += 1
            return Decision.deny("not here", rule=RememberRule("src/*", Act.WRITE, "workspace"))

    approver = RejectAlways()
    w1 = {"name": "write_file", "arguments": {"path": "src/a.py", "content": "a"}}
    w2 = {"name": "write_file", "arguments": {"path": "src/b.py", "content": "b"}}
    script = write_script([{"tool_calls": [w1]}, {"tool_calls": [w2]}])
    result = await start_run(
        harness(store, script, approver=approver), TaskContract("x", workspace)
    )
    assert approver.calls == 1
    assert not (workspace / "src/a.py").exists() and not (workspace / "src/b.py").exists()
    trace = await build_trace(store, result.run_id)
    assert (
        "The operator denied write src/a.py: not here"
        in trace["steps"][0]["observations"][0]["text"]
    )
    assert "Refused by policy" in trace["steps"][1]["observations"][0]["text"]
    # each refusal is of the path it names (its stub and the inspector say what was refused)
    assert [s["observations"][0]["target"] for s in trace["steps"][:2]] == ["src/a.py", "src/b.py"]
    rules = await store.rules.list()
    assert [(r.pattern, r.act, r.effect, r.scope) for r in rules] == [
        ("src/*", Act.WRITE, Effect.DENY, "workspace")
    ]


async def test_remembered_allow_never_beats_a_deny(store, workspace, write_script):
    await store.rules.add(act=Act.READ, pattern="*", scope="global", workspace=None, run_id=None)
    script = write_script([{"tool_calls": [{"name": "read_file", "arguments": {"path": ".env"}}]}])
    result = await start_run(harness(store, script), TaskContract("x", workspace))
    trace = await build_trace(store, result.run_id)
    assert "Refused by policy" in trace["steps"][0]["observations"][0]["text"]


async def test_defer_pauses_then_decide_resumes_the_same_run(store, workspace, write_script):
    script = write_script([{"tool_calls": [EDIT, READ]}, {"text": "done"}])
    first = await start_run(
        harness(store, script, approver=DeferAll()), TaskContract("x", workspace)
    )
    assert first.outcome is Outcome.AWAITING_APPROVAL and first.status == "paused"
    pending = await store.approvals.pending()
    assert len(pending) == 1 and pending[0].request.content.endswith("return x\n")
    assert (workspace / "src/app.py").read_text().endswith("return a\n")

    decided = await decide(store, pending[0].request.id, Decision.approve())
    assert decided.result is not None
    assert decided.result.run_id == first.run_id
    assert decided.result.outcome is Outcome.FINISHED
    assert (workspace / "src/app.py").read_text().endswith("return x\n")
    trace = await build_trace(store, first.run_id)
    # the deferred step got both observations: the approved edit, then the read after it
    assert [o["tool"] for o in trace["steps"][0]["observations"]] == ["edit_file", "read_file"]
    assert "return x" in trace["steps"][0]["observations"][1]["text"]


async def test_decided_write_performs_the_persisted_bytes(store, workspace, write_script):
    script = write_script([{"tool_calls": [EDIT]}])
    run = await start_run(harness(store, script, approver=DeferAll()), TaskContract("x", workspace))
    (workspace / "src/app.py").write_text("def parse(x):\n    return a\n# changed meanwhile\n")
    pending = await store.approvals.pending()
    await decide(store, pending[0].request.id, Decision.approve())
    assert (workspace / "src/app.py").read_text() == pending[0].request.content
    assert run.run_id == pending[0].request.run_id


async def test_deny_while_paused_leaves_the_file_untouched(store, workspace, write_script):
    script = write_script([{"tool_calls": [EDIT]}, {"text": "ok"}])
    await start_run(harness(store, script, approver=DeferAll()), TaskContract("x", workspace))
    pending = await store.approvals.pending()
    decided = await decide(store, pending[0].request.id, Decision.deny("no"))
    assert (workspace / "src/app.py").read_text().endswith("return a\n")
    assert decided.result is not None and decided.result.outcome is Outcome.DENIED


async def test_a_deny_added_while_paused_still_wins(store, workspace, write_script):
    script = write_script([{"tool_calls": [EDIT]}, {"text": "ok"}])
    await start_run(harness(store, script, approver=DeferAll()), TaskContract("x", workspace))
    await store.rules.add(
        act=Act.WRITE,
        pattern="src/*",
        scope="global",
        workspace=None,
        run_id=None,
        effect=Effect.DENY,
    )
    pending = await store.approvals.pending()
    await decide(store, pending[0].request.id, Decision.approve())
    assert (workspace / "src/app.py").read_text().endswith("return a\n")
    record = await store.approvals.get(pending[0].request.id)
    assert record is not None and record.performed == {
        "performed": False,
        "refused_by": record.performed["refused_by"],
    }


async def test_resume_of_an_undecided_run_stays_paused(store, workspace, write_script):
    script = write_script([{"tool_calls": [EDIT]}])
    run = await start_run(harness(store, script, approver=DeferAll()), TaskContract("x", workspace))
    again = await resume_run(harness(store, script, approver=DeferAll()), run.run_id)
    assert again.outcome is Outcome.AWAITING_APPROVAL
    assert len(await store.approvals.pending()) == 1


async def test_bad_tool_calls_become_observations_the_model_reads(store, workspace, write_script):
    script = write_script(
        [
            {"tool_calls": [{"name": "no_such_tool", "arguments": {}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"paht": "x"}}]},
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "../outside"}}]},
        ]
    )
    result = await start_run(harness(store, script), TaskContract("x", workspace))
    assert result.outcome is Outcome.FINISHED
    trace = await build_trace(store, result.run_id)
    texts = [s["observations"][0]["text"] for s in trace["steps"][:3]]
    assert "no_such_tool" in texts[0] and "read_file" in texts[0]
    assert "paht" in texts[1]
    assert "outside" in texts[2] or "escape" in texts[2].lower()


async def test_cancelling_a_run_leaves_the_store_consistent(store, workspace, write_script):
    argv = [sys.executable, "-c", "open('running', 'w').close(); import time; time.sleep(30)"]
    script = write_script([{"tool_calls": [{"name": "run_command", "arguments": {"argv": argv}}]}])
    policy = Policy.from_json(
        {
            "layers": [
                {"name": "t", "rules": [{"act": "exec", "effect": "allow", "pattern": "python*"}]}
            ]
        }
    )
    task = asyncio.create_task(
        start_run(harness(store, script, policy=policy), TaskContract("x", workspace))
    )
    await until((workspace / "running").exists, "the run's command to start")
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    run = (await store.runs.all())[0]
    assert (run.status, run.outcome) == ("cancelled", "cancelled")


async def test_memory_written_in_one_run_is_recalled_in_the_next(
    store, workspace, write_script, tmp_path
):
    remember = {"name": "remember", "arguments": {"key": "tests", "value": "run pytest -q"}}
    first = await start_run(
        harness(store, write_script([{"tool_calls": [remember]}])), TaskContract("a", workspace)
    )
    second = await start_run(
        harness(store, write_script([{"text": "ok"}])), TaskContract("b", workspace)
    )
    trace = await build_trace(store, second.run_id)
    assert trace["requests"][0]["memory_keys"] == ["tests"]
    sent = json.dumps(trace["requests"][0]["messages"])
    assert "run pytest -q" in sent and f"run {first.run_id}" in sent
    other = tmp_path / "other"
    other.mkdir()
    third = await start_run(
        harness(store, write_script([{"text": "ok"}])), TaskContract("c", other)
    )
    assert (await build_trace(store, third.run_id))["requests"][0]["memory_keys"] == []


async def test_a_sub_agent_runs_as_a_child_sharing_the_token_ledger(store, workspace, write_script):
    spawn = {
        "name": "spawn_agent",
        "arguments": {
            "goal": "report what parse returns",
            "max_steps": 3,
            "rules": [{"act": "write", "effect": "deny", "pattern": "*"}],
        },
    }
    script = write_script(
        [
            {"tool_calls": [spawn], "usage": {"prompt_tokens": 100, "completion_tokens": 10}},
            # the child consumes the next turns of the same provider
            {"tool_calls": [EDIT], "usage": {"prompt_tokens": 50, "completion_tokens": 5}},
            {"text": "parse returns a", "usage": {"prompt_tokens": 60, "completion_tokens": 6}},
            {
                "text": "the child says: parse returns a",
                "usage": {"prompt_tokens": 200, "completion_tokens": 20},
            },
        ]
    )
    sink = Recorder()
    parent = await start_run(
        harness(store, script, sink=sink), TaskContract("x", workspace, token_budget=5_000)
    )
    runs = await store.runs.all()
    child = next(r for r in runs if r.parent_run_id == parent.run_id)
    assert (child.goal, child.status, child.tokens) == (
        "report what parse returns",
        "finished",
        121,
    )
    # the narrowing deny held inside the child, though the parent's approver approves everything
    assert (workspace / "src/app.py").read_text().endswith("return a\n")
    assert parent.tokens == 110 + 121 + 220
    trace = await build_trace(store, parent.run_id)
    assert "parse returns a" in trace["steps"][0]["observations"][0]["text"]
    started = [e for e in sink.events if e.kind is EventKind.RUN_STARTED]
    assert [e.detail["parent_run_id"] for e in started] == [None, parent.run_id]


async def test_sub_agents_cannot_nest_without_limit(store, workspace, write_script):
    spawn = {"name": "spawn_agent", "arguments": {"goal": "go deeper"}}
    script = write_script([{"tool_calls": [spawn]}] * 4)
    await start_run(harness(store, script), TaskContract("x", workspace, max_steps=2))
    runs = await store.runs.all()
    depth = {r.id: 0 for r in runs}
    for r in runs:
        if r.parent_run_id:
            depth[r.id] = depth[r.parent_run_id] + 1
    assert max(depth.values()) == 2


async def test_a_long_run_keeps_only_its_latest_request_texts(
    store, workspace, write_script, monkeypatch
):
    """Memory grows with the steps, not with steps × request size: the request texts a run
    encoded earlier are freed once later ones are stored."""
    made: list[weakref.ref[str]] = []
    alive: list[int] = []  # request texts alive as each new one is encoded
    encode = ListEncoder.encode

    def tracked(self: ListEncoder, items: Any) -> Any:
        text = encode(self, items)
        made.append(weakref.ref(text))
        alive.append(sum(t() is not None for t in made))
        return text

    monkeypatch.setattr(ListEncoder, "encode", tracked)
    listing = {"tool_calls": [{"name": "list_dir", "arguments": {"path": "."}}]}
    script = write_script([listing] * 40 + [{"text": "done"}])
    result = await start_run(harness(store, script), TaskContract("look", workspace, max_steps=50))
    assert result.outcome is Outcome.FINISHED and len(made) >= 80
    assert max(alive) <= 6  # this request's two lists, the last stored (and encoded) ones


async def test_a_final_answer_cut_by_the_output_limit_is_not_finished_silently(
    store, workspace, write_script
):
    script = write_script([{"tool_calls": [READ]}, {"text": "It is", "finish_reason": "length"}])
    result = await start_run(harness(store, script), TaskContract("fix", workspace))
    assert (result.status, result.outcome) == ("finished", Outcome.TRUNCATED)
    assert result.outcome.value == "finished_truncated"
    assert result.error and "cut at the output limit" in result.error and "'length'" in result.error
    trace = await build_trace(store, result.run_id)
    assert [r["stop_reason"] for r in trace["requests"]] == ["tool_calls", "length"]
    assert trace["run"]["outcome"] == "finished_truncated" and trace["run"]["error"] == result.error


async def test_each_run_end_appends_its_entry_to_the_workspace_daily_log(
    store, workspace, write_script
):
    tests = {"name": "run_command", "arguments": {"argv": ["python3", "-m", "unittest", "-q"]}}
    script = write_script([{"tool_calls": [EDIT]}, {"tool_calls": [tests]}, {"text": "fixed"}])
    check = ("python3", "-c", "import sys; sys.exit('return x' not in open('src/app.py').read())")
    policy = Policy(defaults={Act.WRITE: Effect.ASK, Act.EXEC: Effect.ALLOW})
    result = await start_run(
        harness(store, script, policy=policy),
        TaskContract("fix the parser", workspace, verify=check),
    )
    assert result.outcome is Outcome.SUCCESS
    lines = await store.daily_log.lines(str(workspace.resolve()))
    assert {line.run_id for line in lines} == {result.run_id}
    by_field = {line.field: line.text for line in lines}
    assert by_field["goal"] == "fix the parser"
    assert by_field["outcome"].startswith("success after 3 steps")
    assert by_field["files"] == "src/app.py"
    assert "`python3 -m unittest -q` → exit 0, passed" in by_field["tests"]
    assert "verification `python3 -c 'import sys" in by_field["tests"]
    assert by_field["tests"].endswith("→ exit 0, passed")
    assert by_field["decision"] == "approve approval 1: write src/app.py"
    # the log is never recalled into a request: a later run in the workspace is not shown it
    again = await start_run(
        harness(store, write_script([{"text": "ok"}])), TaskContract("look", workspace)
    )
    trace = await build_trace(store, again.run_id)
    assert "success after 3 steps" not in json.dumps(trace["requests"])


async def test_a_run_whose_end_cannot_be_written_says_it_ended_once(
    tmp_path, workspace, write_script
):
    """The ``run_finished`` event and the status change are one transaction: when the status
    cannot be written (here a trigger aborts it, as a full disk would), the ``finished`` that
    was not stored leaves no event behind; the run fails, and its trace says so once."""
    import sqlite3

    path = tmp_path / "s.db"
    async with await Store.open(path):
        pass
    with contextlib.closing(sqlite3.connect(path)) as raw, raw:
        raw.execute(
            "CREATE TRIGGER disk_died BEFORE UPDATE OF status ON runs"
            " WHEN NEW.status = 'finished' BEGIN SELECT RAISE(ABORT, 'disk died'); END"
        )
    script = write_script([{"text": "done"}])
    async with await Store.open(path) as store:
        result = await start_run(harness(store, script), TaskContract("x", workspace))
        ended = await store.trace.events(result.run_id, kinds=["run_finished"])
        row = await store.runs.get(result.run_id)
    assert (result.status, result.error) == ("failed", "IntegrityError: disk died")
    assert row is not None and row.status == "failed"
    assert [e.detail["outcome"] for e in ended] == ["failed"]


async def orphaned_form(store: Store, run_id: int) -> int:
    """A server's form request of ``run_id`` left pending, as ``server_asks`` persists it, by
    a process that died while the call that asked waited for it."""
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    request = await store.approvals.create(
        ApprovalRequest(
            id=0, run_id=run_id, step=1, call_id="c9:elicitation",
            tool="mcp__everything__elicitation", act=Act.EXEC,
            arguments={"message": "Who?", "requested_schema": schema},
            target="mcp__everything__elicitation", content="MCP server 'everything' asks…",
            rule="", layer="", workspace="/ws",
        )
    )  # fmt: skip
    return request.id


async def test_a_server_request_orphaned_by_its_process_leaves_the_inbox(
    store, workspace, write_script
):
    """Deciding it is refused in one line (no call is left to hear the answer); resuming its
    run decides every such request, so none waits in an inbox for ever."""
    script = write_script([{"tool_calls": [EDIT]}, {"text": "done"}])
    paused = await start_run(harness(store, script, approver=DeferAll()), TaskContract("x", workspace))  # fmt: skip
    (edit,) = await store.approvals.pending()
    form = await orphaned_form(store, paused.run_id)
    with pytest.raises(DecideError, match="can no longer be answered"):
        await decide(store, form, Decision.approve())
    record = await store.approvals.get(form)
    assert record.status == "decided" and record.decision.decided_by == ENDED_WITH_PROCESS

    another = await orphaned_form(store, paused.run_id)
    decided = await decide(store, edit.request.id, Decision.approve())  # resumes the run
    assert decided.result is not None and decided.result.outcome is Outcome.FINISHED
    record = await store.approvals.get(another)
    assert record.status == "decided" and record.decision.kind is DecisionKind.DEFER
    assert await store.approvals.pending() == []


async def test_a_run_that_meets_a_damaged_store_stops_and_writes_nothing_more(
    tmp_path, workspace, write_script
):
    """A damaged page met mid-run (the open did not check the file) ends the run with
    ``StoreDamaged`` as it is: no ``failed`` end, no daily-log line, nothing written after."""
    import sqlite3
    from contextlib import closing

    from damaged_store import damage_table

    from io_tui.core.store import StoreDamaged

    path = tmp_path / "store.db"
    async with await Store.open(path) as store:
        await store.notes.set("k", "v", "global", None)
    damage_table(path, "events")
    script = write_script([{"text": "done"}])
    store = await Store.open(path)
    try:
        with pytest.raises(StoreDamaged, match="is damaged"):
            await start_run(harness(store, script), TaskContract("fix", workspace))
    finally:
        await store.close()
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT status, outcome FROM runs").fetchall() == [("running", None)]
        assert conn.execute("SELECT COUNT(*) FROM memory_log").fetchone() == (0,)


async def test_an_operator_message_sent_during_a_step_s_call_reaches_the_next_request(
    store, workspace, write_script
):
    """What a step reads first (whether an operator message waits, the notes) is read in the
    transaction that commits the last call of the step before: a message sent while that call
    waited for its approval is delivered with the next step, in its request."""

    class Steering:
        async def decide(self, request: ApprovalRequest) -> Decision:
            await store.runs.add_operator_message(request.run_id, "keep the public API")
            return Decision(DecisionKind.APPROVE, reason="go on")

    script = write_script([{"tool_calls": [EDIT]}, {"tool_calls": [READ]}, {"text": "done"}])
    result = await start_run(
        harness(store, script, approver=Steering()), TaskContract("fix", workspace)
    )
    assert result.outcome is Outcome.FINISHED
    trace = await build_trace(store, result.run_id)
    assert [s["operator_messages"] for s in trace["steps"]] == [[], ["keep the public API"], []]
