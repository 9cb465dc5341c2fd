"""A resumed run gets the MCP servers and settings it was started with (``runs.origin``), not
those of the process that decides or resumes it: real io-tui processes, the real
mcp-server-time, one store."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import cli_process
import pytest
from mcp_support import MARK_VAR, needs_proc, new_mark, wait_until_gone

PARIS = {"name": "mcp__time__get_current_time", "arguments": {"timezone": "Europe/Paris"}}
SECRET = "s3cret-literal-value"
DONE = {"text": "done"}


def io_tui(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return cli_process.io_tui(*args, env=cli_process.user_env(env, drop=(MARK_VAR,)))


def time_server(tmp_path: Path, name: str = "mcp.toml", mark: str = SECRET) -> Path:
    """mcp-server-time, with a literal env value (a secret, as far as the store knows)."""
    path = tmp_path / name
    path.write_text(
        "[mcp.servers.time]\n"
        f"command = {json.dumps(sys.executable)}\n"
        'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\n'
        f'env = {{ {MARK_VAR} = "{mark}" }}\n'
    )
    return path


def other_servers(tmp_path: Path) -> Path:
    path = tmp_path / "other.toml"
    path.write_text('[mcp.servers.other]\ncommand = "io-tui-no-such-mcp-server"\n')
    return path


def paused_run(
    tmp_path: Path, workspace: Path, write_script: Any, turns: list[dict[str, Any]], *extra: str
) -> tuple[Path, dict[str, Any]]:
    """A run of ``turns`` started with the time server whose first ask is deferred: the store
    and the pending request."""
    db = tmp_path / "run.db"
    script = write_script(turns)
    paused = io_tui(
        "run", "what time is it?", "--workspace", str(workspace), "--provider",
        f"scripted:{script}", "--approve", "defer", "--mcp-config", str(time_server(tmp_path)),
        "--store", str(db), *extra,
    )  # fmt: skip
    assert paused.returncode == 3, paused.stdout + paused.stderr
    [pending] = json.loads(io_tui("approvals", "--json", "--store", str(db)).stdout)["approvals"]
    return db, pending


def trace(db: Path, run_id: int) -> dict[str, Any]:
    done = io_tui("trace", str(run_id), "--json", "--store", str(db))
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def paris_answer(data: dict[str, Any]) -> dict[str, Any]:
    observation = data["steps"][0]["observations"][0]
    assert not observation["is_error"], observation["text"]
    answer: dict[str, Any] = json.loads(observation["text"].split("\n", 1)[1])
    return answer


@needs_proc
def test_decide_without_the_mcp_config_starts_the_servers_the_run_started_with(
    tmp_path: Path, workspace: Path, write_script: Any
) -> None:
    db, pending = paused_run(tmp_path, workspace, write_script, [{"tool_calls": [PARIS]}, DONE])
    # the record names the env variable; its value is nowhere in the store
    origin = trace(db, pending["run_id"])["run"]["origin"]
    [server] = origin["settings"]["mcp"]["servers"].values()
    assert server["env"] == {MARK_VAR: "${" + MARK_VAR + "}"}
    assert server["args"] == ["-m", "mcp_server_time", "--local-timezone", "UTC"]
    for path in db.parent.glob("run.db*"):
        assert SECRET.encode() not in path.read_bytes()

    mark = new_mark()  # the value comes from the deciding process's environment
    decided = io_tui(
        "decide", str(pending["id"]), "approve", "--store", str(db), **{MARK_VAR: mark}
    )
    assert decided.returncode == 0, decided.stdout + decided.stderr
    notice = f"io-tui: resuming run {pending['run_id']} with the MCP servers it started with: time"
    assert decided.stderr.splitlines()[0] == notice  # then the run's progress
    data = trace(db, pending["run_id"])
    assert paris_answer(data)["timezone"] == "Europe/Paris"
    assert data["run"]["outcome"] == "finished"
    assert wait_until_gone(mark) == []


def test_a_server_that_cannot_start_at_resume_is_a_notice_and_the_run_goes_on(
    tmp_path: Path, workspace: Path, write_script: Any
) -> None:
    """Resumed from a process with other servers and without the variable the run's server
    needs: the run's server is named as not started, the other process's are not started at
    all, and the run ends without a traceback."""
    db, pending = paused_run(
        tmp_path, workspace, write_script, [{"tool_calls": [PARIS]}, {"text": "no clock"}]
    )
    resumed = io_tui(
        "decide", str(pending["id"]), "approve", "--mcp-config", str(other_servers(tmp_path)),
        "--store", str(db),
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Traceback" not in resumed.stderr and "other" not in resumed.stderr
    lines = resumed.stderr.splitlines()
    assert lines[0].endswith("with the MCP servers it started with: time")
    assert lines[1].startswith("io-tui: warning: MCP server 'time'")
    assert f"${{{MARK_VAR}}}, which is not set" in lines[1]
    data = trace(db, pending["run_id"])
    assert data["steps"][0]["observations"][0]["is_error"]
    assert data["run"]["outcome"] == "finished"


def test_a_variable_this_process_lacks_comes_from_its_config_for_the_same_server(
    tmp_path: Path, workspace: Path, write_script: Any
) -> None:
    """``resume`` of the paused run, given a config whose 'time' server has the value: the
    run's own server starts (no notice: the servers are the same), with this config's value."""
    db, pending = paused_run(tmp_path, workspace, write_script, [{"tool_calls": [PARIS]}, DONE])
    mark = new_mark()
    config = time_server(tmp_path, "mine.toml", mark=mark)
    resumed = io_tui(
        "resume", str(pending["run_id"]), "--approve", "all", "--mcp-config", str(config),
        "--store", str(db),
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "io-tui:" not in resumed.stderr  # no notice, no warning
    assert paris_answer(trace(db, pending["run_id"]))["timezone"] == "Europe/Paris"


def test_a_resumed_run_keeps_its_limits_and_provider_settings(
    tmp_path: Path, workspace: Path, write_script: Any
) -> None:
    """Started with --max-steps 2 and a config's timeout and retries; decided in a process
    whose config says otherwise: the run stops at its own step cap, its record is its own."""
    started = tmp_path / "started.toml"
    started.write_text("request_timeout_s = 7.5\nmax_retries = 1\n")
    read = {"name": "read_file", "arguments": {"path": "README.md"}}
    edit = {"name": "write_file", "arguments": {"path": "a.txt", "content": "x\n"}}
    turns = [{"tool_calls": [edit]}, {"tool_calls": [read]}, {"tool_calls": [read]}, DONE]
    db = tmp_path / "run.db"
    paused = io_tui(
        "run", "edit", "--workspace", str(workspace), "--provider",
        f"scripted:{write_script(turns)}", "--approve", "defer", "--max-steps", "2",
        "--token-budget", "50000", "--store", str(db), IO_TUI_CONFIG=str(started),
    )  # fmt: skip
    assert paused.returncode == 3, paused.stdout + paused.stderr
    [pending] = json.loads(io_tui("approvals", "--json", "--store", str(db)).stdout)["approvals"]
    deciding = tmp_path / "deciding.toml"
    deciding.write_text("max_steps = 50\ntoken_budget = 900000\nrequest_timeout_s = 300\n")
    decided = io_tui(
        "decide", str(pending["id"]), "approve", "--json", "--store", str(db),
        IO_TUI_CONFIG=str(deciding),
    )  # fmt: skip
    assert decided.returncode == 0, decided.stdout + decided.stderr
    assert "io-tui:" not in decided.stderr  # no MCP servers either side: nothing to say
    result = json.loads(decided.stdout.splitlines()[-1])
    assert (result["outcome"], result["steps"]) == ("step_cap_reached", 2)
    settings = trace(db, pending["run_id"])["run"]["origin"]["settings"]
    assert (settings["max_steps"], settings["token_budget"]) == (2, 50000)
    assert (settings["request_timeout_s"], settings["max_retries"]) == (7.5, 1)
    assert settings["provider"].startswith("scripted:")


def test_a_run_from_before_the_record_resumes_with_this_process_servers_and_says_so(
    tmp_path: Path, workspace: Path, write_script: Any
) -> None:
    db, pending = paused_run(tmp_path, workspace, write_script, [{"tool_calls": [PARIS]}, DONE])
    with sqlite3.connect(db) as conn:  # as an io-tui of schema 4 left it
        conn.execute("UPDATE runs SET origin = NULL")
    assert trace(db, pending["run_id"])["run"]["origin"] is None
    config = time_server(tmp_path, "mine.toml", mark=new_mark())
    decided = io_tui(
        "decide", str(pending["id"]), "approve", "--mcp-config", str(config), "--store", str(db)
    )
    assert decided.returncode == 0, decided.stdout + decided.stderr
    assert decided.stderr.splitlines()[0] == (
        f"io-tui: run {pending['run_id']} has no record of the settings it started with"
        " (an older io-tui, or a demo): resuming with this process's, MCP servers: time"
    )
    assert paris_answer(trace(db, pending["run_id"]))["timezone"] == "Europe/Paris"


@pytest.mark.parametrize("command", ["decide", "resume"])
def test_nothing_to_resume_starts_no_server(tmp_path: Path, command: str) -> None:
    """A request or run that does not exist: the one-line refusal, no server started."""
    db = tmp_path / "run.db"
    sqlite3.connect(db).close()
    args = ("decide", "99", "approve") if command == "decide" else ("resume", "99")
    done = io_tui(*args, "--mcp-config", str(other_servers(tmp_path)), "--store", str(db))
    assert done.returncode == 1
    assert "99" in done.stderr and done.stdout == ""  # the error on stderr, nothing on stdout
