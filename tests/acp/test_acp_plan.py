"""The run's progress ledger as ACP plans, end to end: the protocol package's own client over a
real ``io-tui acp`` subprocess sees a plan after each step whose ledger changed (what waits for
approval, what failed, what was done), matching the ledger ``io-tui trace`` reads from the
store, and never the same plan twice."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest
from acp import text_block
from acp_client import EditorClient, io_tui_acp
from cli_process import io_tui

from io_tui.core import Store

TEST_APP = """import unittest

from src.app import parse


class ParseTest(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(parse(2), 2)
"""
# -B: no bytecode cache. The edit below keeps src/app.py's size, and the fixture wrote the file
# moments before, so a cached .pyc from the first test run would match its mtime (whole seconds)
# and size, and the second run would test the code before the edit.
RUN_TESTS = {
    "name": "run_command",
    "arguments": {"argv": [sys.executable, "-B", "-m", "unittest", "test_app"]},
}
EDIT = {
    "name": "edit_file",
    "arguments": {"path": "src/app.py", "old": "return a", "new": "return x"},
}
READ = {"name": "read_file", "arguments": {"path": "README.md"}}


async def test_the_ledger_is_sent_as_plans(workspace, write_script, store_path):
    (workspace / "test_app.py").write_text(TEST_APP)
    script = write_script(
        [
            {"text": "Running the tests.", "tool_calls": [RUN_TESTS]},
            {"tool_calls": [READ]},  # no words, nothing done: the ledger is unchanged
            {"text": "They fail: parse returns a.", "tool_calls": [EDIT]},
            {"text": "Again.", "tool_calls": [RUN_TESTS]},
            {"text": "Fixed: the tests pass."},
        ]
    )
    client = EditorClient(answers=["approve", "approve", "approve"])
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    async with io_tui_acp(client, *args) as conn:
        session = await conn.new_session(cwd=str(workspace))
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("fix it")])
    assert answer.stop_reason == "end_turn"
    run_id = answer.field_meta["io-tui"]["run_id"]
    trace = json.loads(io_tui("trace", str(run_id), "--json", "--store", str(store_path)).stdout)
    plans = [[(e.content, e.priority, e.status) for e in u.entries] for u in client.of_kind("plan")]

    # never the same plan twice: a step that changed nothing, or only the model's words (which
    # a plan does not show), sends none
    assert all(a != b for a, b in itertools.pairwise(plans))
    assert len(plans) < len(trace["progress_revisions"])
    ledger = trace["progress"]
    (change,), (evidence,) = ledger["changes"], ledger["evidence"]
    # the run finished by the model's word, with no verification: its objective is not shown
    # completed (only a passing verification, ``success``, meets it), and the plan says so
    assert trace["run"]["outcome"] == "finished"
    assert plans[-1] == [
        ("Objective: fix it", "high", "pending"),  # finished unverified: not shown met
        (f"modified src/app.py (edit_file, step {change['step']})", "low", "completed"),
        (f"{evidence['what']} passed (step {evidence['step']})", "low", "completed"),
        (
            "Next: review the modified resources: no verification checked the objective",
            "high",
            "in_progress",
        ),
        (
            f"unverified: run {run_id} finished: the model says it is done; nothing verified it",
            "low",
            "pending",
        ),
    ]
    # while the first command waited for the client: the ask, blocking, and what to do about it
    first_ask = trace["approvals"][0]["id"]
    asked = f"approval {first_ask} (exec "
    waiting = next(p for p in plans if any(c.startswith(asked) for c, _, _ in p))
    assert waiting[0] == ("Objective: fix it", "high", "in_progress")
    (next_action,) = [e for e in waiting if e[2] == "in_progress" and e[0].startswith("Next: ")]
    assert next_action[0].startswith(f"Next: the operator decides approval {first_ask} ")
    assert next(p for _, p, s in waiting if s == "pending") == "high"
    # after the command failed: fixing it is the work left, as the ledger said then
    failed = next(p for p in plans if any(c.startswith("fix: ") for c, _, _ in p))
    (fix,) = [e for e in failed if e[0].startswith("fix: ")]
    assert fix[1:] == ("medium", "pending") and "unittest test_app" in fix[0]
    assert any(c.startswith("Next: read why ") for c, _, s in failed if s == "in_progress")
    # the session loaded in another process: its history, then the plan as the ledger stands
    loaded = EditorClient()
    async with io_tui_acp(loaded, *args) as conn:
        await conn.load_session(cwd=str(workspace), session_id=session.session_id)
    (replayed,) = loaded.of_kind("plan")
    assert [(e.content, e.priority, e.status) for e in replayed.entries] == plans[-1]
    # each plan is one of the ledger's revisions: its remaining work and next action
    async with await Store.open(store_path) as store:
        revisions = [r.ledger for r in await store.progress.revisions(run_id)]
    for plan in plans:
        pending = [c for c, _, s in plan[1:] if s == "pending"]
        nexts = [c.removeprefix("Next: ") for c, _, s in plan[1:] if s == "in_progress"]
        assert any(
            r["remaining"] == pending and nexts == ([r["next_action"]] if pending else [])
            for r in revisions
        ), plan


@pytest.fixture(autouse=True)
def _no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IO_TUI_CONFIG_DIR", str(tmp_path / "config"))
