"""``io-tui rules list|revoke`` and ``io-tui approvals --history`` (rate and median wait)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from io_tui.cli import main
from io_tui.core.authority.approvals import ApprovalRequest, Decision
from io_tui.core.authority.policy import Act
from io_tui.core.store import Store


async def _seed(path: Path) -> None:
    async with await Store.open(path) as store:
        run = await store.runs.create(goal="g", workspace="/w", contract={}, provider={}, policy={})
        await store.rules.add(
            act=Act.WRITE, pattern="src/*", scope="workspace", workspace="/w", run_id=run
        )
        await store.rules.add(
            act=Act.EXEC, pattern="git", scope="global", workspace="/w", run_id=run
        )
        for i in range(3):
            req = ApprovalRequest(
                0,
                run,
                i + 1,
                f"c{i}",
                "write_file",
                {"path": f"src/{i}.py", "content": "x"},
                Act.WRITE,
                f"src/{i}.py",
                "x",
                "default write",
                "defaults",
                "/w",
            )
            made = await store.approvals.create(req)
            if i == 0:
                await store.approvals.record_decision(made.id, Decision.approve())
                await store.approvals.record_performed(
                    made.id, {"performed": True, "arguments": req.arguments}
                )
            if i == 1:
                await store.approvals.record_decision(made.id, Decision.deny("no"))
                await store.approvals.record_performed(made.id, {"performed": False})
        await store.db.conn.execute(
            "UPDATE approvals SET created_at = 1000, decided_at = 1000 + id * 10 WHERE decided_at IS NOT NULL"
        )
        await store.db.conn.commit()


def test_rules_list_and_revoke(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    asyncio.run(_seed(store_path))
    store = ["--store", str(store_path)]
    assert main(["rules", "list", "--json", *store]) == 0
    rules = json.loads(capsys.readouterr().out)
    assert [(r["id"], r["pattern"], r["scope"]) for r in rules] == [
        (1, "src/*", "workspace"),
        (2, "git", "global"),
    ]
    assert main(["rules", "list", *store]) == 0
    assert "allow exec git  (global: everywhere)" in capsys.readouterr().out
    assert main(["rules", "revoke", "1", *store]) == 0
    assert "revoked rule 1" in capsys.readouterr().out
    assert main(["rules", "revoke", "1", *store]) == 1
    capsys.readouterr()
    assert main(["rules", "list", "--json", *store]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [2]
    assert main(["rules", "list", "--all", "--json", *store]) == 0
    assert [r["revoked"] for r in json.loads(capsys.readouterr().out)] == [True, False]


def test_approvals_history(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    asyncio.run(_seed(store_path))
    store = ["--store", str(store_path)]
    assert main(["approvals", "--history", *store]) == 0
    out = capsys.readouterr().out
    assert (
        "[deny: no]" in out and "asked" in out and "by 'default write' in layer 'defaults'" in out
    )
    assert "proposed:  write_file src/0.py (1 line)" in out and "performed: as proposed" in out
    assert (
        "3 requests: 2 decided, 1 pending · approval rate 50% · median time to decide 15.0s" in out
    )
    assert main(["approvals", "--history", "--json", *store]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["stats"]["approval_rate"] == 0.5 and data["stats"]["median_seconds_to_decide"] == 15
    assert [a["status"] for a in data["approvals"]] == ["decided", "decided", "pending"]
    assert [(a["decision"] or {}).get("kind") for a in data["approvals"]] == [
        "approve",
        "deny",
        None,
    ]
    history = data["approvals"]
    # the pending requests alone, in the same shape
    assert main(["approvals", "--json", *store]) == 0
    pending = json.loads(capsys.readouterr().out)
    assert pending["approvals"] == history[2:]
    assert set(pending["stats"]) == set(data["stats"])
