"""A ledger's plan for the states the end-to-end test's run does not reach: a paused run with an
ask, a call in flight at a crash, an open failure and a verification not yet passed, each at its
priority, and a run that ended without meeting its objective."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from io_tui.acp.plan import plan_entries
from io_tui.core.contract import TaskContract
from io_tui.core.progress.fold import Fold, plan
from io_tui.core.progress.model import Failure, Operation, PendingApproval, ProgressLedger


def planned(ledger: ProgressLedger) -> list[tuple[str, str, str]]:
    remaining, action = plan(ledger)
    ledger = replace(ledger, remaining=remaining, next_action=action)
    return [(e.content, e.priority, e.status) for e in plan_entries(ledger)]


def test_what_blocks_the_run_comes_first_then_what_failed_then_the_check() -> None:
    ledger = ProgressLedger(
        run_id=4,
        objective="fix\nthe parser",
        status="paused",
        outcome="awaiting_approval",
        approvals=(PendingApproval(7, 3, "write", "src/app.py"),),
        operations=(Operation("call", "r4.s2.c1", "run_command with no result", 2),),
        failures=(Failure("`pytest -q`", 2, "r4.s2.c0"),),
        verify=("make", "check"),
    )
    entries = planned(ledger)
    assert entries[0] == ("Objective: fix the parser", "high", "pending")  # paused: not going
    assert entries[1][0].startswith("Next: the operator decides approval 7")
    assert entries[1][1:] == ("high", "in_progress")
    assert [(p, s) for _, p, s in entries[2:]] == [
        ("high", "pending"),  # the ask
        ("high", "pending"),  # the call in flight
        ("medium", "pending"),  # the failure
        ("low", "pending"),  # the verification
    ]
    assert entries[2][0] == "approval 7 (write src/app.py) waits for the operator"


def test_a_run_that_ended_short_of_its_objective() -> None:
    ledger = ProgressLedger(run_id=2, objective="go", status="failed", outcome="error")
    assert planned(ledger) == [
        ("Objective: go", "high", "pending"),
        (
            "Next: go on with the objective from the modified resources and the evidence above",
            "high",
            "in_progress",
        ),
        ("the objective is not met: run 2 ended failed (error)", "low", "pending"),
    ]


def test_only_a_verified_run_meets_its_objective() -> None:
    """One mark and wording per outcome (``core.endings``): ``success`` completes the
    objective; ``finished`` (the model's word), a cut answer or a step cap do not."""
    done = ProgressLedger(run_id=3, objective="go", status="finished", outcome="success")
    assert planned(done) == [("Objective: go", "high", "completed")]
    for outcome, says in (
        ("finished", "unverified: run 3 finished: the model says it is done"),
        (
            "finished_truncated",
            "the objective is not met: run 3 finished with its final answer cut",
        ),
        ("step_cap_reached", "the objective is not met: run 3 stopped at its step cap"),
    ):
        entries = planned(replace(done, outcome=outcome))
        assert entries[0] == ("Objective: go", "high", "pending"), outcome
        assert entries[-1][0].startswith(says), entries


def test_an_operators_cancel_is_not_a_failure_to_fix() -> None:
    """A run the operator cancelled is said to be cancelled by them, never "fix: … failed"."""
    fold = Fold(9, TaskContract("go", Path("/tmp")))
    fold.apply("run_started", 0, {})
    fold.apply(
        "run_finished",
        2,
        {"status": "cancelled", "outcome": "cancelled", "error": "cancelled by the operator"},
    )
    ledger = fold.ledger()
    assert ledger.failures == ()
    assert ledger.remaining == ("the objective is not met: run 9 was cancelled by the operator",)
    assert not any("fix:" in line for line in ledger.remaining)
