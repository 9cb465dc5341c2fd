"""A reader that stops early (``io-tui trace 1 | head -3``): io-tui stops quietly, as a command
that SIGPIPE ends does: no traceback, exit 141 (128 + SIGPIPE). Handled once, in ``cli.main``,
for every command."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_process import IO_TUI, user_env
from scripted_run import run_script

from io_tui.core import Store

BIG = "a line of the model's long answer\n" * 30_000  # ~1 MB: more than any pipe holds
READ = {"name": "read_file", "arguments": {"path": "README.md"}}


@pytest.fixture
async def long_store(store_path: Path, workspace: Path, write_script) -> Path:
    """A run whose answer is ~1 MB (its trace is two), and a note."""
    script = write_script([{"text": BIG, "tool_calls": [READ]}, {"text": BIG}])
    async with await Store.open(store_path) as store:
        await run_script(store, workspace, script)
        await store.notes.set("style", "tabs", "global", None)
    return store_path


def test_a_reader_that_stops_reading_ends_io_tui_quietly(long_store):
    """As ``| head -3``: io-tui is writing (the pipe full) when its reader goes."""
    process = subprocess.Popen(
        [*IO_TUI, "trace", "1", "--store", str(long_store)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=user_env(),
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    assert [process.stdout.readline() for _ in range(3)][-1]
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141, stderr
    assert stderr == ""  # no traceback, no "Exception ignored … BrokenPipeError"


SHORT = {  # however much or little a command writes, its first write fails
    "trace --json": ("trace", "1", "--json"),  # 2 MB in one write: not a traceback either
    "trace --context": ("trace", "1", "--context", "1"),
    "memory list": ("memory", "list", "--global"),
    "approvals": ("approvals", "--history"),
    "rules": ("rules", "list", "--json"),
}


@pytest.mark.parametrize("command", SHORT.values(), ids=SHORT.keys())
def test_a_reader_gone_before_io_tui_writes_ends_it_quietly(long_store, command):
    reader, writer = os.pipe()
    os.close(reader)  # as `| head -1` that has read its line and left before io-tui wrote
    try:
        result = subprocess.run(
            [*IO_TUI, *command, "--store", str(long_store)],
            stdout=writer, stderr=subprocess.PIPE, env=user_env(), timeout=120, text=True,
        )  # fmt: skip
    finally:
        os.close(writer)
    assert (result.returncode, result.stderr) == (141, "")


def test_only_a_stdout_whose_reader_is_gone_is_taken_for_one(monkeypatch):
    """A ``BrokenPipeError`` from another pipe (a child process's stdin) is not hidden."""
    from io_tui import cli

    reader, writer = os.pipe()
    with os.fdopen(writer, "w") as out:
        monkeypatch.setattr("sys.stdout", out)
        assert not cli._stdout_closed()  # its reader is there
        os.close(reader)
        assert cli._stdout_closed()


def test_a_run_whose_reader_goes_stops_interrupted_and_resumes(
    store_path: Path, workspace: Path, write_script
):
    """``io-tui run --json | head -1``: the run stops as a hang-up would, ``interrupted`` (not
    ``failed`` with a BrokenPipeError), says so in one line on stderr, exits as
    SIGPIPE ends a command, and ``io-tui resume`` takes it on to the end."""
    listing = {"name": "list_dir", "arguments": {"path": "."}}
    turns = [{"text": "x" * 2_000, "tool_calls": [listing]} for _ in range(30)]
    script = write_script([*turns, {"text": "done"}])
    command = [*IO_TUI, "--store", str(store_path), "run", "look", "--workspace", str(workspace)]
    process = subprocess.Popen(
        [*command, "--provider", f"scripted:{script}", "--json", "--max-steps", "40"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=user_env(),
    )  # fmt: skip
    assert process.stdout is not None and process.stderr is not None
    assert b'"run_started"' in process.stdout.readline()
    process.stdout.close()
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 141, stderr
    assert stderr == (
        "io-tui: the output's reader went away: run 1 stopped, interrupted;"
        " go on with `io-tui resume 1`\n"
    )
    trace = subprocess.run(
        [*IO_TUI, "--store", str(store_path), "trace", "1", "--json"],
        capture_output=True, env=user_env(), timeout=120, text=True, check=True,
    )  # fmt: skip
    run = json.loads(trace.stdout)["run"]
    assert (run["status"], run["outcome"], run["error"]) == ("interrupted", "interrupted", None)
    resumed = subprocess.run(
        [*IO_TUI, "--store", str(store_path), "resume", "1"],
        capture_output=True, env=user_env(), timeout=120, text=True,
    )  # fmt: skip
    assert resumed.returncode == 0 and "run 1: finished" in resumed.stdout, resumed.stderr
