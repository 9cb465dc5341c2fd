"""The reviewer model through the CLI, as a user runs it: `io-tui run --approver model:…` (and a
policy file's [reviewer]), its verdicts on the terminal and in `io-tui approvals` and
`approvals --history` beside the human decisions, an escalation waiting in the inbox for
`io-tui decide`, a queued run reviewed by the worker that drives it, and bad options refused in
one line. Real processes on a real store; the reviewer is a scripted model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import io_tui, user_env

EDIT = {
    "name": "edit_file",
    "arguments": {"path": "src/app.py", "old": "return a", "new": "return x"},
}
FIXED = "def parse(x):\n    return x\n"


@pytest.fixture
def judge(tmp_path: Path):
    """A reviewer script answering ``answers`` in turn; its path."""

    def write(*answers: str) -> Path:
        path = tmp_path / "judge.json"
        turns = [
            {"text": a, "usage": {"prompt_tokens": 410, "completion_tokens": 11}} for a in answers
        ]
        path.write_text(json.dumps({"model": "judge", "turns": turns}))
        return path

    return write


def run(
    workspace: Path, script: Path, store: Path, *extra: str
) -> subprocess.CompletedProcess[str]:
    return io_tui("run", "fix parse", "-w", str(workspace), "--provider", f"scripted:{script}",
                  "--store", str(store), *extra)  # fmt: skip


def test_the_reviewer_approves_and_the_audit_says_so(
    workspace: Path, write_script, store_path: Path, judge
) -> None:
    script = write_script([{"text": "fixing", "tool_calls": [EDIT]}, {"text": "done"}])
    reviewer = judge("VERDICT: approve\nREASON: the one-line fix the goal asks for")
    done = run(workspace, script, store_path, "--approver", f"model:scripted:{reviewer}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "⚖ reviewer scripted:judge: approve request 1 — the one-line fix" in done.stderr
    assert (workspace / "src/app.py").read_text() == FIXED

    history = io_tui("approvals", "--history", "--store", str(store_path))
    assert history.returncode == 0, history.stderr
    assert (
        "reviewer scripted:judge: approve — the one-line fix the goal asks for"
        " (421 tokens," in history.stdout
    )
    assert "by reviewer scripted:judge" in history.stdout
    assert "reviewer: 1 reviewed, 1 decided, 0 escalated" in history.stdout
    data = json.loads(io_tui("approvals", "--history", "--json", "--store", str(store_path)).stdout)
    (row,) = data["approvals"]
    assert row["decision"]["decided_by"] == "reviewer scripted:judge"
    assert row["decision"]["kind"] == "approve"
    (review,) = row["reviews"]
    assert review | {"latency_s": 0, "at": 0} == {
        "approval_id": 1, "reviewer": "scripted:judge", "verdict": "approve",
        "reason": "the one-line fix the goal asks for", "cause": "model",
        "answer": "VERDICT: approve\nREASON: the one-line fix the goal asks for",
        "prompt_tokens": 410, "completion_tokens": 11, "latency_s": 0, "at": 0,
    }  # fmt: skip
    assert data["stats"]["decided_by_reviewer"] == 1


def test_an_escalation_waits_in_the_inbox_for_a_human(
    workspace: Path, write_script, store_path: Path, judge
) -> None:
    script = write_script([{"text": "fixing", "tool_calls": [EDIT]}, {"text": "done"}])
    reviewer = judge("Sure, looks fine to me.")  # out of format
    paused = run(workspace, script, store_path, "--approver", f"model:scripted:{reviewer}")
    assert paused.returncode == 3, paused.stdout + paused.stderr  # --approver: defer by default
    assert "escalate request 1 — answered out of format" in paused.stderr
    listed = io_tui("approvals", "--store", str(store_path))
    assert "#1  run 1 step 1  write src/app.py  [pending]" in listed.stdout
    assert "reviewer scripted:judge: escalate — answered out of format" in listed.stdout
    pending = json.loads(io_tui("approvals", "--json", "--store", str(store_path)).stdout)
    assert pending["approvals"][0]["reviews"][0]["cause"] == "format"

    decided = io_tui("decide", "1", "approve", "--store", str(store_path))
    assert decided.returncode == 0, decided.stdout + decided.stderr
    assert (workspace / "src/app.py").read_text() == FIXED
    history = io_tui("approvals", "--history", "--store", str(store_path)).stdout
    assert "reviewer scripted:judge: escalate" in history and " (cli)" in history
    assert "reviewer: 1 reviewed, 0 decided, 1 escalated" in history


def test_a_policy_files_reviewer_denies(
    tmp_path: Path, workspace: Path, write_script, store_path: Path, judge
) -> None:
    script = write_script([{"text": "fixing", "tool_calls": [EDIT]}, {"text": "giving up"}])
    reviewer = judge("VERDICT: deny\nREASON: no test covers parse yet")
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[reviewer]\nmodel = "scripted:{reviewer}"\ntimeout_s = 30\n')
    done = run(workspace, script, store_path, "--policy", str(policy), "--approve", "defer")
    assert done.returncode == 0, done.stdout + done.stderr  # finished: denied
    assert "deny request 1 — no test covers parse yet" in done.stderr
    assert (workspace / "src/app.py").read_text().endswith("return a\n")
    trace = json.loads(io_tui("trace", "1", "--json", "--store", str(store_path)).stdout)
    assert trace["approvals"][0]["decision"]["decided_by"] == "reviewer scripted:judge"
    reviewed = [e for e in trace["events"] if e["kind"] == "approval_reviewed"]
    assert reviewed[0]["detail"]["verdict"] == "deny"


def test_a_queued_run_is_reviewed_by_its_worker(
    workspace: Path, write_script, store_path: Path, judge
) -> None:
    script = write_script([{"text": "fixing", "tool_calls": [EDIT]}, {"text": "done"}])
    reviewer = judge("VERDICT: approve\nREASON: the fix")
    queued = run(
        workspace, script, store_path, "--queue", "--approver", f"model:scripted:{reviewer}"
    )
    assert queued.returncode == 0, queued.stderr
    worker = subprocess.run(
        [sys.executable, "-m", "io_tui", "worker", "--store", str(store_path), "--until-empty"],
        capture_output=True, text=True, env=user_env(), timeout=120,
    )  # fmt: skip
    assert worker.returncode == 0, worker.stderr
    assert (workspace / "src/app.py").read_text() == FIXED
    history = json.loads(
        io_tui("approvals", "--history", "--json", "--store", str(store_path)).stdout
    )
    assert history["approvals"][0]["decision"]["decided_by"] == "reviewer scripted:judge"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--approver", "llamacpp:smollm2"), "--approver: 'llamacpp:smollm2': expected model:PRESET:MODEL"),
        (("--approver", "model:llamacpp"), "expected PRESET:MODEL"),
        (("--approver", "model:nosuch:m"), "unknown provider 'nosuch'"),
        (("--approver", "model:openai:gpt-4o-mini"), "needs an API key"),
        (("--approver", "model:scripted:/nonexistent/judge.json"), "script not found"),
        (("--approver", "model:llamacpp:m", "--approve", "all"), "--approve all approves every ask"),
        (("--approver-timeout", "5"), "need --approver"),
        (("--approver", "model:llamacpp:m", "--approver-timeout", "0"), "above 0"),
    ],
)  # fmt: skip
def test_bad_approver_options_are_one_line(
    workspace: Path, write_script, store_path: Path, args: tuple[str, ...], message: str
) -> None:
    script = write_script([{"text": "done"}])
    env = user_env(drop=("OPENAI_API_KEY",))
    done = io_tui("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
                  "--store", str(store_path), *args, env=env)  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
