"""The audit of past requests: approval rate, median time to decide, proposed vs performed."""

from __future__ import annotations

from pathlib import Path

import pytest
from approval_requests import approval_request, new_run

from io_tui.core.authority.approvals import Decision, DecisionKind
from io_tui.core.authority.policy import Act
from io_tui.core.steering.audit import audit_row, audit_stats
from io_tui.core.store import Store


@pytest.fixture
def store_path(store_on_both: Path | str) -> Path | str:
    """Every test here runs on a SQLite file and on a PostgreSQL database (``pg_cluster``)."""
    return store_on_both


async def test_audit_stats_and_rows(store: Store) -> None:
    run = await new_run(store, "/ws/a")
    reqs = [
        await store.approvals.create(approval_request(Act.WRITE, f"src/{i}.py", run_id=run))
        for i in range(4)
    ]
    await store.approvals.record_decision(reqs[0].id, Decision.approve())
    await store.approvals.record_decision(reqs[1].id, Decision.deny("no"))
    await store.approvals.record_decision(
        reqs[2].id, Decision(DecisionKind.REWRITE, arguments={"path": "src/z.py", "content": ""})
    )
    await store.approvals.record_performed(
        reqs[2].id, {"performed": True, "arguments": {"path": "src/z.py", "content": ""}}
    )
    await store.db.write(
        lambda conn: conn.executemany(
            "UPDATE approvals SET created_at = 1000, decided_at = ? WHERE id = ?",
            [(1000 + secs, reqs[i].id) for i, secs in enumerate((10, 20, 60))],
        )
    )
    records = await store.approvals.history()
    stats = audit_stats(records)
    assert (stats.total, stats.pending, stats.decided) == (4, 1, 3)
    assert stats.approval_rate == 2 / 3 and stats.median_seconds == 20
    assert "approval rate 67%" in stats.summary()
    rows = [audit_row(r) for r in records]
    assert rows[1].decision == "deny" and rows[1].reason == "no"
    assert rows[2].performed.startswith("rewritten: ") and "src/z.py" in rows[2].performed
    assert rows[3].performed == "pending"
