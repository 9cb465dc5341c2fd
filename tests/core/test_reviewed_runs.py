"""Runs whose policy names a reviewer model: the ask goes to it before any human, its verdict is
recorded with the request (model, reasons, tokens), an approve or deny is the decision, and
everything else (an escalation, garbage, a timeout, a reviewer that cannot be built) leaves the
request to the human, here the inbox: the run pauses on it as a deferred ask."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from io_tui.core.authority.approvals import ApproveAll, Approver, Decision, DeferAll
from io_tui.core.authority.policy import Policy
from io_tui.core.authority.review import ReviewCause, ReviewerSpec, ReviewVerdict
from io_tui.core.contract import TaskContract
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import RunResult, start_run
from io_tui.core.run.reconcile import FixedReconciler, ReconcileChoice
from io_tui.core.steering.decisions import decide, resume
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store

EDIT = {
    "name": "edit_file",
    "arguments": {"path": "src/app.py", "old": "return a", "new": "return x"},
}
TURNS = [{"text": "fixing parse", "tool_calls": [EDIT]}, {"text": "done"}]
FIXED = "def parse(x):\n    return x\n"


def reviewer_script(tmp_path: Path, *answers: str) -> ReviewerSpec:
    path = tmp_path / "judge.json"
    turns = [{"text": a, "usage": {"prompt_tokens": 300, "completion_tokens": 12}} for a in answers]
    path.write_text(json.dumps({"model": "judge", "turns": turns}))
    return ReviewerSpec(f"scripted:{path}")


async def run_with(
    store: Store,
    workspace: Path,
    write_script,
    spec: ReviewerSpec,
    approver: Approver | None = None,
) -> RunResult:
    harness = Harness(
        store=store,
        provider=ScriptedProvider.from_file(write_script(TURNS)),
        approver=approver or DeferAll(),
        policy=Policy().with_reviewer(spec),
    )
    return await start_run(harness, TaskContract("fix parse", workspace, max_steps=4))


async def test_an_approve_is_the_decision_and_is_recorded(
    store: Store, workspace: Path, write_script, tmp_path: Path
) -> None:
    spec = reviewer_script(tmp_path, "VERDICT: approve\nREASON: the one-line fix the goal asks for")
    result = await run_with(store, workspace, write_script, spec)
    assert result.outcome.value == "finished"
    assert (workspace / "src/app.py").read_text() == FIXED
    (record,) = await store.approvals.history()
    assert record.decision is not None and record.decision.decided_by == "reviewer scripted:judge"
    assert record.decision.reason == "the one-line fix the goal asks for"
    assert record.decision.rule is None  # a reviewer never remembers a rule
    assert not await store.rules.list()
    (review,) = record.reviews
    assert (review.verdict, review.cause, review.reviewer) == (
        ReviewVerdict.APPROVE, ReviewCause.MODEL, "scripted:judge",
    )  # fmt: skip
    assert (review.prompt_tokens, review.completion_tokens) == (300, 12)
    trace = await build_trace(store, result.run_id)
    kinds = [e["kind"] for e in trace["events"]]
    assert kinds.index("approval_requested") < kinds.index("approval_reviewed")
    assert kinds.index("approval_reviewed") < kinds.index("approval_decided")


async def test_a_deny_is_read_by_the_model(
    store: Store, workspace: Path, write_script, tmp_path: Path
) -> None:
    spec = reviewer_script(tmp_path, "VERDICT: deny\nREASON: the goal asks for a test first")
    result = await run_with(store, workspace, write_script, spec)
    assert result.outcome.value == "denied"  # its last call denied, as a human's deny ends it
    assert (workspace / "src/app.py").read_text().endswith("return a\n")  # not performed
    (record,) = await store.approvals.history()
    assert record.decision is not None and record.decision.kind.value == "deny"
    assert record.decision.rule is None
    trace = await build_trace(store, result.run_id)
    (step,) = [s for s in trace["steps"] if s["tool_calls"]]
    assert (
        "denied by the reviewer (scripted:judge): the goal asks for a test first" in step["result"]
    )


@pytest.mark.parametrize(
    ("answer", "cause"),
    [
        ("VERDICT: escalate\nREASON: cannot tell from the diff", ReviewCause.MODEL),
        ("Looks good to me! Approve.", ReviewCause.FORMAT),
    ],
)
async def test_an_escalation_waits_in_the_inbox(
    store: Store, workspace: Path, write_script, tmp_path: Path, answer: str, cause: ReviewCause
) -> None:
    spec = reviewer_script(tmp_path, answer, "VERDICT: approve\nREASON: a second opinion")
    result = await run_with(store, workspace, write_script, spec)
    assert (result.status, result.outcome.value) == ("paused", "awaiting_approval")
    (pending,) = await store.approvals.pending()
    (review,) = pending.reviews  # the inbox can say why
    assert (review.verdict, review.cause) == (ReviewVerdict.ESCALATE, cause)
    # resumed with a pending request: the human's now, never the reviewer's again
    again = await resume(
        store, result.run_id, reconciler=FixedReconciler(ReconcileChoice.SKIP), approver=DeferAll()
    )
    assert again.outcome.value == "awaiting_approval"
    assert len(await store.approvals.reviews_of(pending.request.id)) == 1
    # a human decides it; the run goes on with it
    decided = await decide(
        store, pending.request.id, Decision.approve(decided_by="alice@laptop (cli)")
    )
    assert decided.result is not None and decided.result.outcome.value == "finished"
    (record,) = await store.approvals.history()
    assert record.decision is not None and record.decision.decided_by == "alice@laptop (cli)"
    assert [r.verdict for r in record.reviews] == [ReviewVerdict.ESCALATE]


async def test_approve_all_never_answers_an_escalation(
    store: Store, workspace: Path, write_script, tmp_path: Path
) -> None:
    spec = reviewer_script(tmp_path, "VERDICT: escalate\nREASON: unsure")
    result = await run_with(store, workspace, write_script, spec, ApproveAll())
    assert result.outcome.value == "awaiting_approval"
    assert (workspace / "src/app.py").read_text().endswith("return a\n")


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts and never answers: a reviewer that hangs."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        listener.close()


async def test_a_reviewer_that_times_out_escalates(
    store: Store, workspace: Path, write_script, silent_server: int
) -> None:
    spec = ReviewerSpec(
        "llamacpp:smollm2", base_url=f"http://127.0.0.1:{silent_server}/v1", timeout_s=0.5
    )
    result = await run_with(store, workspace, write_script, spec)
    assert result.outcome.value == "awaiting_approval"
    (pending,) = await store.approvals.pending()
    (review,) = pending.reviews
    assert (review.verdict, review.cause) == (ReviewVerdict.ESCALATE, ReviewCause.TIMEOUT)
    assert review.reviewer == "llamacpp:smollm2"


async def test_a_reviewer_that_cannot_be_built_escalates(
    store: Store, workspace: Path, write_script, tmp_path: Path
) -> None:
    spec = ReviewerSpec(f"scripted:{tmp_path / 'missing.json'}")
    result = await run_with(store, workspace, write_script, spec)
    assert result.outcome.value == "awaiting_approval"
    (pending,) = await store.approvals.pending()
    (review,) = pending.reviews
    assert review.cause is ReviewCause.ERROR and "could not be built" in review.reason


async def test_a_guard_holds_before_the_model_is_asked(
    store: Store, workspace: Path, write_script, tmp_path: Path
) -> None:
    spec = reviewer_script(tmp_path, "VERDICT: approve\nREASON: fine")
    turns = [
        {"tool_calls": [{"name": "run_command", "arguments": {"argv": ["rm", "-rf", "src"]}}]},
        {"text": "done"},
    ]
    harness = Harness(
        store=store,
        provider=ScriptedProvider.from_file(write_script(turns)),
        approver=DeferAll(),
        policy=Policy().with_reviewer(spec),
    )
    result = await start_run(harness, TaskContract("tidy up", workspace, max_steps=4))
    assert result.outcome.value == "awaiting_approval" and (workspace / "src").is_dir()
    (pending,) = await store.approvals.pending()
    (review,) = pending.reviews
    assert review.cause is ReviewCause.GUARD and "rm" in review.reason
    assert review.tokens is None


async def test_a_sub_agent_is_reviewed_under_its_parents_policy(
    store: Store, workspace: Path, write_script, tmp_path: Path
) -> None:
    """A child run inherits the policy, and with it the reviewer."""
    spec = reviewer_script(tmp_path, "VERDICT: approve\nREASON: the fix")
    turns = [
        {"tool_calls": [{"name": "spawn_agent", "arguments": {"goal": "fix parse"}}]},
        {"text": "fixing", "tool_calls": [EDIT]},
        {"text": "child done"},
        {"text": "parent done"},
    ]
    harness = Harness(
        store=store,
        provider=ScriptedProvider.from_file(write_script(turns)),
        approver=DeferAll(),
        policy=Policy().with_reviewer(spec),
    )
    result = await start_run(harness, TaskContract("fix parse", workspace, max_steps=4))
    assert result.outcome.value == "finished", result.error
    (record,) = await store.approvals.history()
    assert record.request.run_id != result.run_id
    assert record.decision is not None and record.decision.decided_by == "reviewer scripted:judge"
    assert (workspace / "src/app.py").read_text() == FIXED
