"""``io-tui rewind``, ``io-tui checkpoints`` and ``io-tui fork`` as a user meets them: real
processes on a real store, a scripted run that changes files through commands."""

from __future__ import annotations

import json
from pathlib import Path

from cli_process import io_tui

CALLS = [
    {"tool_calls": [{"name": "write_file", "arguments": {"path": "new.txt", "content": "n\n"}}]},
    {"tool_calls": [{"name": "run_command", "arguments": {"argv": ["rm", "README.md"]}}]},
    {"text": "done"},
]


def run_once(tmp_path: Path, workspace: Path, write_script) -> tuple[str, ...]:
    store = ("--store", str(tmp_path / "store.db"))
    script = write_script(CALLS)
    run = io_tui("run", "change things", "-w", str(workspace), "--provider",
                 f"scripted:{script}", "--approve", "all", *store)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    return store


def test_rewind_shows_the_plan_asks_for_yes_and_undoes(tmp_path, workspace, write_script):
    store = run_once(tmp_path, workspace, write_script)
    assert not (workspace / "README.md").exists()

    listed = io_tui("checkpoints", "1", *store)
    assert listed.returncode == 0, listed.stderr
    assert [line.split()[3] for line in listed.stdout.splitlines()] == ["before", "before", "end"]

    dry = io_tui("rewind", "1", "--to", "1", "--dry-run", *store)
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert dry.stdout.splitlines()[0] == (
        "rewind run 1 to before step 1 (checkpoint 1, before step 1):"
        " 1 file removed, 1 file recreated (+1 −1 lines)"
    )
    assert "  D new.txt  removed (created after)" in dry.stdout
    assert "  A README.md  recreated (deleted after)" in dry.stdout
    assert (workspace / "new.txt").exists()

    unconfirmed = io_tui("rewind", "1", "--to", "1", *store)
    assert unconfirmed.returncode == 2
    assert "nothing changed: pass --yes to go on" in unconfirmed.stderr
    assert (workspace / "new.txt").exists()

    done = io_tui("rewind", "1", "--to", "1", "--yes", *store)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "undo it with `io-tui rewind 1 --undo`" in done.stdout
    assert (workspace / "README.md").read_text() == "# demo\n"
    assert not (workspace / "new.txt").exists()

    undone = io_tui("rewind", "1", "--undo", "--yes", "--json", *store)
    assert undone.returncode == 0, undone.stdout + undone.stderr
    assert json.loads(undone.stdout)["undo"] is True
    assert (workspace / "new.txt").exists() and not (workspace / "README.md").exists()

    trace = json.loads(io_tui("trace", "1", "--json", *store).stdout)
    assert [e["detail"]["undo"] for e in trace["events"] if e["kind"] == "rewound"] == [
        False,
        True,
    ]
    readable = io_tui("trace", "1", *store).stdout  # under the step the run was at: its last
    after_step_3 = readable.split("── step 3 ")[1]
    assert "↶ files rewound to before step 1: 1 file removed, 1 file recreated" in after_step_3
    assert "↶ the last rewind undone: 1 file removed, 1 file recreated" in after_step_3
    assert [c["phase"] for c in trace["checkpoints"]][-4:] == [
        "rewind-from",
        "rewound",
        "rewind-from",
        "rewound",
    ]


def test_a_hand_edit_refuses_until_each_file_is_chosen(tmp_path, workspace, write_script):
    store = run_once(tmp_path, workspace, write_script)
    (workspace / "new.txt").write_text("edited by hand\n")
    refused = io_tui("rewind", "1", "--to", "2", "--yes", *store)
    assert refused.returncode == 1
    assert "changed after run 1's last checkpoint, by someone else" in refused.stdout
    assert "refused: 1 file changed after run 1's last checkpoint" in refused.stdout
    assert (workspace / "new.txt").read_text() == "edited by hand\n"

    stray = io_tui("rewind", "1", "--to", "2", "--keep", "other.txt", "--yes", *store)
    assert stray.returncode == 2
    assert "other.txt: not among the files changed" in stray.stderr

    kept = io_tui("rewind", "1", "--to", "2", "--keep", "new.txt", "--yes", *store)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert (workspace / "new.txt").read_text() == "edited by hand\n"
    assert (workspace / "README.md").exists()


def test_bad_rewinds_say_why_in_one_line(tmp_path, workspace, write_script):
    store = run_once(tmp_path, workspace, write_script)
    for args, said in (
        (("rewind", "1", "--to", "9"), "io-tui: run 1 has steps 1–3; no step 9"),
        (("rewind", "7", "--to", "1"), "io-tui: no run 7 in the store"),
        (("rewind", "1", "--undo"), "io-tui: nothing to undo: run 1's last checkpoint is not"),
    ):
        done = io_tui(*args, *store)
        assert done.returncode == 1, done.stdout + done.stderr
        assert done.stdout.startswith(said) and "Traceback" not in done.stderr


def test_fork_runs_from_a_step_with_a_new_instruction(tmp_path, workspace, write_script):
    store = run_once(tmp_path, workspace, write_script)
    copy = tmp_path / "fork-copy"
    forked = io_tui("fork", "1", "--at", "2", "--copy", str(copy), "--task", "keep README",
                    "--approve", "all", *store)  # fmt: skip
    assert forked.returncode == 0, forked.stdout + forked.stderr
    assert "fork run 1 at step 2: its request" in forked.stderr
    assert "run 2 forked from run 1 at step 2" in forked.stderr
    assert (copy / "README.md").exists() and (copy / "new.txt").exists()
    assert not (workspace / "README.md").exists()  # the run's own workspace is left alone
    trace = json.loads(io_tui("trace", "2", "--json", *store).stdout)
    assert trace["run"]["forked_from"] == {"run_id": 1, "step": 2}
    assert trace["run"]["workspace"] == str(copy.resolve())
    parent = json.loads(io_tui("trace", "1", "--json", *store).stdout)
    assert parent["forks"] == [{"run_id": 2, "step": 2}]
    first = next(r for r in trace["requests"] if r["step"] == 2)
    recorded = next(r for r in parent["requests"] if r["step"] == 2)
    assert first["messages"][:-1] == recorded["messages"]
    assert first["messages"][-1] == {"role": "user", "content": "[operator] keep README"}
    assert "⑂ forked from run 1 at step 2" in io_tui("trace", "2", *store).stdout
    readable = io_tui("trace", "1", *store).stdout
    assert "⑂ run 2 forked from step 2" in readable
    assert f'⑂ forked at step 2 into run 2 (a copy at {copy.resolve()}): "keep README"' in readable
