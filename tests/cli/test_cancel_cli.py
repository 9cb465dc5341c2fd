"""``io-tui cancel RUN`` as a user meets it: a run deferred on its ask, cancelled from another
process; its request leaves the inbox, the trace says cancelled, and nothing resumes it."""

from __future__ import annotations

import json

from cli_process import io_tui

EDIT = {
    "name": "edit_file",
    "arguments": {"path": "src/app.py", "old": "return a", "new": "return x"},
}


def test_a_deferred_run_is_cancelled_and_stays_cancelled(tmp_path, workspace, write_script):
    store = ("--store", str(tmp_path / "store.db"))
    policy = tmp_path / "policy.toml"
    policy.write_text('[defaults]\nwrite = "ask"\n')
    script = write_script([{"text": "fixing", "tool_calls": [EDIT]}, {"text": "done"}])
    run = ("run", "fix it", "-w", str(workspace), "--provider", f"scripted:{script}",
           "--policy", str(policy), "--approve", "defer", *store)  # fmt: skip
    first = io_tui(*run)
    assert first.returncode == 3, first.stdout + first.stderr
    assert [
        p["run_id"] for p in json.loads(io_tui("approvals", "--json", *store).stdout)["approvals"]
    ] == [1]

    cancelled = io_tui("cancel", "1", *store)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    assert cancelled.stdout.strip() == (
        "run 1 cancelled (it was paused); request 1 denied: the run was cancelled"
    )
    assert json.loads(io_tui("approvals", "--json", *store).stdout)["approvals"] == []
    assert io_tui("approvals", *store).stdout.strip() == "no pending approvals"
    trace = json.loads(io_tui("trace", "1", "--json", *store).stdout)
    assert (trace["run"]["status"], trace["run"]["outcome"]) == ("cancelled", "cancelled")
    (approval,) = trace["approvals"]
    assert approval["decision"]["kind"] == "deny"
    assert approval["decision"]["reason"] == "the run was cancelled"
    assert approval["decision"]["decided_by"].endswith(" (cli)")
    assert (workspace / "src/app.py").read_text().endswith("return a\n")  # never written

    again = io_tui("cancel", "1", *store)
    assert again.returncode == 1 and "run 1 was already cancelled" in again.stderr
    resumed = io_tui("resume", "1", "--reconcile", "skip", *store)
    assert resumed.returncode == 1, resumed.stdout + resumed.stderr
    assert "run 1 is cancelled; only an interrupted or paused run resumes" in resumed.stderr
    decided = io_tui("decide", "1", "approve", *store)
    assert decided.returncode == 1 and "already decided: denied by " in decided.stderr
    as_json = io_tui("cancel", "1", "--json", *store)
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout) == {
        "run_id": 1,
        "cancelled": False,
        "error": "run 1 was already cancelled",
    }
    assert (workspace / "src/app.py").read_text().endswith("return a\n")

    second = io_tui(*run)
    assert second.returncode == 3, second.stdout + second.stderr
    done = io_tui("cancel", "2", "--json", *store)
    assert done.returncode == 0, done.stdout + done.stderr
    said = json.loads(done.stdout)
    assert (said["run_id"], said["status"], said["was"], said["approvals"]) == (
        2, "cancelled", "paused", [2]
    )  # fmt: skip
    assert said["error"] == "cancelled by the operator while paused"


def test_cancel_refuses_what_it_cannot_cancel_and_bad_usage(tmp_path, workspace, write_script):
    store = ("--store", str(tmp_path / "store.db"))
    script = write_script([{"text": "done"}])
    finished = io_tui("run", "say done", "-w", str(workspace), "--provider",
                      f"scripted:{script}", *store)  # fmt: skip
    assert finished.returncode == 0, finished.stdout + finished.stderr
    ended = io_tui("cancel", "1", *store)
    assert ended.returncode == 1
    assert ended.stderr.strip() == (
        "io-tui: run 1 has already ended (finished): there is nothing to cancel"
    )
    missing = io_tui("cancel", "7", *store)
    assert missing.returncode == 1 and "no run 7 in the store" in missing.stderr
    assert io_tui("cancel", *store).returncode == 2
    assert io_tui("cancel", "one", *store).returncode == 2
    nowhere = io_tui("cancel", "1", "--store", str(tmp_path / "none.db"))
    assert nowhere.returncode == 2 and "no store at" in nowhere.stderr
    assert not (tmp_path / "none.db").exists()


def test_a_run_queued_by_mistake_is_cancelled_before_a_worker_takes_it(
    tmp_path, workspace, write_script
):
    store = ("--store", str(tmp_path / "store.db"))
    script = write_script([{"text": "done"}])
    queued = io_tui("run", "the wrong task", "-w", str(workspace), "--provider",
                    f"scripted:{script}", "--queue", *store)  # fmt: skip
    assert queued.returncode == 0, queued.stdout + queued.stderr
    cancelled = io_tui("cancel", "1", *store)
    assert cancelled.returncode == 0, cancelled.stdout + cancelled.stderr
    assert cancelled.stdout.strip() == "run 1 cancelled (it was queued)"
    drained = io_tui("worker", "--until-empty", "--scratch", str(tmp_path / "scratch"), *store)
    assert drained.returncode == 0, drained.stdout + drained.stderr
    trace = json.loads(io_tui("trace", "1", "--json", *store).stdout)
    assert (trace["run"]["status"], trace["run"]["error"]) == (
        "cancelled",
        "cancelled by the operator while queued",
    )
    assert trace["run"]["steps"] == 0  # no worker drove it
