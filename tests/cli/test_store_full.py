"""A full disk under the store, for real: a SQLite store on a small tmpfs that a run's own
command fills (root only; skipped elsewhere, saying why).

`io-tui run` ends with one line naming the store, the room left and the room needed, exit 2, no
traceback; the commands after it answer at once (reads read, writes say the store is full in
one line), none hangs; once there is room the run resumes from its last commit and finishes."""

from __future__ import annotations

import subprocess
from pathlib import Path

import cli_process
from small_disk import small_disk

# The command fills the disk the store is on, outside the workspace, standing in for whatever
# fills a disk; the sandbox would rightly refuse that write, so this run goes without it.
POLICY = '[defaults]\nexec = "allow"\nwrite = "allow"\n[sandbox]\nenabled = false\n'
FULL = "is full: "


def io_tui(*args: str, store: Path) -> subprocess.CompletedProcess[str]:
    return cli_process.io_tui(*args, "--store", str(store), timeout=30)  # a hang fails here


def test_a_full_store_is_one_line_and_the_run_resumes_once_there_is_room(
    tmp_path, workspace, write_script
):
    with small_disk(tmp_path / "disk", "12m") as disk:
        store, filler = disk / "store.db", disk / "filler"
        fill = f"head -c 100000000 /dev/zero > {filler}; echo filled"
        script = write_script(
            [
                {"tool_calls": [{"id": "c1", "name": "run_command",
                                 "arguments": {"argv": ["sh", "-c", fill]}}]},
                {"tool_calls": [{"id": "c2", "name": "write_file",
                                 "arguments": {"path": "after.txt", "content": "after\n"}}]},
                {"text": "done"},
            ]
        )  # fmt: skip
        policy = tmp_path / "policy.toml"
        policy.write_text(POLICY)
        ran = io_tui("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
                     "--policy", str(policy), "--approve", "all", store=store)  # fmt: skip
        assert ran.returncode == 2, ran.stderr
        assert "Traceback" not in ran.stdout + ran.stderr
        said = ran.stderr.splitlines()[-1]  # after the run's progress lines
        assert said.startswith(f"io-tui: run 1: store {store} {FULL}")
        assert "free on its disk, and io-tui needs at least 8 MB there" in said
        assert "`io-tui resume 1` once there is room" in said
        for args in (("trace", "1"), ("approvals",), ("memory", "list"), ("rules", "list")):
            read = io_tui(*args, store=store)
            assert read.returncode == 0 and "Traceback" not in read.stderr, (args, read.stderr)
        for args in (("resume", "1", "--reconcile", "skip"),
                     ("run", "again", "-w", str(workspace), "--provider", f"scripted:{script}"),
                     ("memory", "set", "k", "v")):  # fmt: skip
            refused = io_tui(*args, store=store)
            assert refused.returncode == 2, (args, refused.stdout, refused.stderr)
            (line,) = refused.stderr.splitlines()
            assert f"store {store} {FULL}" in line and "Traceback" not in refused.stdout
        filler.unlink()  # room again
        resumed = io_tui("resume", "1", "--reconcile", "skip", "--approve", "all", store=store)
        assert resumed.returncode == 0, resumed.stderr
        assert "run 1: finished" in resumed.stdout
        assert (workspace / "after.txt").read_text() == "after\n"
