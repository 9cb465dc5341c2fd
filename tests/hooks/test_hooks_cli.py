"""Claude Code-style hooks through the CLI, on real processes: a ``PreToolUse`` script that
denies ``rm`` (exit 2) honoured by ``io-tui run`` and by a queue worker, its refusal naming the
``hook:PreToolUse`` layer; a JSON ``permissionDecision`` of ask putting an otherwise allowed
command to the operator; a workspace's ``.claude/settings.json`` never run until ``io-tui hooks
trust``, and again not after it changes; every hook run in the trace; the other moments
(``UserPromptSubmit``, ``SessionStart``, ``SessionEnd``, ``Stop``, ``PostToolUse``,
``Notification``) each given its JSON and heard."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import cli_process
import pytest
from cli_process import user_env

DENY_RM = """#!/bin/sh
# A Claude Code PreToolUse hook: no Bash command may run rm.
input=$(cat)
cmd=$(printf '%s' "$input" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"].get("command",""))')
case " $cmd " in
  *" rm "*) echo "rm is not allowed here" >&2; exit 2 ;;
esac
exit 0
"""
ALLOW_EXEC = '[defaults]\nexec = "allow"\nwrite = "allow"\n'


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return user_env({"IO_TUI_CONFIG_DIR": str(tmp_path / "cfg")}, drop=["IO_TUI_CONFIG"])


def hook_script(tmp_path: Path, body: str = DENY_RM, name: str = "deny_rm.sh") -> Path:
    path = tmp_path / name
    path.write_text(body)
    path.chmod(0o755)
    return path


def config(env: dict[str, str], tmp_path: Path, text: str) -> None:
    cfg = Path(env["IO_TUI_CONFIG_DIR"])
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "config.toml").write_text(text)


def io_tui(*args: str, env: dict[str, str], store: Path) -> Any:
    return cli_process.io_tui(*args, "--store", str(store), env=env)


def rm_script(write_script, workspace: Path) -> Path:
    (workspace / "doomed.txt").write_text("keep me\n")
    rm = {"id": "c1", "name": "run_command", "arguments": {"argv": ["rm", "doomed.txt"]}}
    return write_script([{"tool_calls": [rm]}, {"text": "tried"}])


def events(store: Path, env: dict[str, str], kind: str) -> list[dict[str, Any]]:
    trace = json.loads(io_tui("trace", "1", "--json", env=env, store=store).stdout)
    return [e for e in trace["events"] if e["kind"] == kind]


def test_a_pre_tool_use_hook_denies_rm_in_a_cli_run(tmp_path, workspace, write_script, env):
    script = hook_script(tmp_path)
    config(env, tmp_path, f'[[hooks.PreToolUse]]\nmatcher = "Bash"\n'
                          f'hooks = [{{ type = "command", command = "{script}" }}]\n')  # fmt: skip
    policy = tmp_path / "policy.toml"
    policy.write_text(ALLOW_EXEC)
    store = tmp_path / "s.db"
    done = io_tui("run", "clean up", "-w", str(workspace), "--provider",
                  f"scripted:{rm_script(write_script, workspace)}", "--policy", str(policy),
                  env=env, store=store)  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    assert (workspace / "doomed.txt").exists(), "the hook's deny wins over the policy's allow"
    (refused,) = events(store, env, "tool_refused")
    assert refused["detail"]["layer"] == "hook:PreToolUse"
    (ran,) = events(store, env, "hook")
    assert ran["detail"]["event"] == "PreToolUse" and ran["detail"]["exit_code"] == 2
    assert "rm is not allowed here" in ran["detail"]["stderr"]
    trace = json.loads(io_tui("trace", "1", "--json", env=env, store=store).stdout)
    result = trace["steps"][0]["observations"][0]["text"]
    assert "rm is not allowed here" in result and "hook:PreToolUse" in result


def test_a_queued_run_honours_the_hook(tmp_path, workspace, write_script, env):
    script = hook_script(tmp_path)
    config(env, tmp_path, f'[[hooks.PreToolUse]]\nmatcher = "run_command"\n'
                          f'hooks = [{{ type = "command", command = "{script}" }}]\n')  # fmt: skip
    policy = tmp_path / "policy.toml"
    policy.write_text(ALLOW_EXEC)
    store = tmp_path / "s.db"
    queued = io_tui("run", "clean up", "-w", str(workspace), "--queue", "--provider",
                    f"scripted:{rm_script(write_script, workspace)}", "--policy", str(policy),
                    env=env, store=store)  # fmt: skip
    assert queued.returncode == 0, queued.stderr
    # the worker's own config has no hooks: the run's recorded settings carry them
    (Path(env["IO_TUI_CONFIG_DIR"]) / "config.toml").unlink()
    worked = io_tui("worker", "--until-empty", env=env, store=store)
    assert worked.returncode == 0, worked.stderr
    assert (workspace / "doomed.txt").exists()
    assert events(store, env, "tool_refused")[0]["detail"]["layer"] == "hook:PreToolUse"


def test_a_json_ask_puts_an_allowed_command_to_the_operator(tmp_path, workspace, write_script, env):
    asks = hook_script(tmp_path, "#!/bin/sh\ncat >/dev/null\necho '{\"hookSpecificOutput\": "
                       "{\"hookEventName\": \"PreToolUse\", \"permissionDecision\": \"ask\", "
                       "\"permissionDecisionReason\": \"a human looks at every command\"}}'\n",
                       "ask.sh")  # fmt: skip
    config(env, tmp_path, f'[[hooks.PreToolUse]]\nhooks = [{{ command = "{asks}" }}]\n')
    policy = tmp_path / "policy.toml"
    policy.write_text(ALLOW_EXEC)
    store = tmp_path / "s.db"
    call = {"id": "c1", "name": "run_command", "arguments": {"argv": ["true"]}}
    script = write_script([{"tool_calls": [call]}, {"text": "done"}])
    done = io_tui("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
                  "--policy", str(policy), "--approve", "defer", env=env, store=store)  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr  # paused on the ask
    pending = json.loads(io_tui("approvals", "--json", env=env, store=store).stdout)["approvals"]
    assert pending[0]["layer"] == "hook:PreToolUse"


def test_workspace_hooks_run_only_while_trusted(tmp_path, workspace, write_script, env):
    marker = tmp_path / "ran.txt"
    claude = workspace / ".claude"
    claude.mkdir()
    settings = {"hooks": {"SessionStart": [{"hooks": [
        {"type": "command", "command": f"cat > {marker}"}]}]}}  # fmt: skip
    (claude / "settings.json").write_text(json.dumps(settings))
    script = write_script([{"text": "hi"}, {"text": "hi"}, {"text": "hi"}])
    store = tmp_path / "s.db"

    def run() -> Any:
        return io_tui("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
                      env=env, store=store)  # fmt: skip

    first = run()
    assert not marker.exists(), "an untrusted workspace file never runs"
    assert "not trusted" in first.stdout + first.stderr
    listed = io_tui("hooks", "list", "-w", str(workspace), env=env, store=store)
    assert "SessionStart" in listed.stdout and "not trusted" in listed.stdout
    assert io_tui("hooks", "trust", "-w", str(workspace), env=env, store=store).returncode == 0
    run()
    payload = json.loads(marker.read_text())
    assert payload["hook_event_name"] == "SessionStart" and payload["source"] == "startup"
    assert payload["cwd"] == str(workspace.resolve())
    marker.unlink()
    settings["hooks"]["SessionStart"][0]["hooks"][0]["command"] += " # changed"
    (claude / "settings.json").write_text(json.dumps(settings))
    run()
    assert not marker.exists(), "a changed file needs trusting again"


def test_the_other_moments_are_heard(tmp_path, workspace, write_script, env):
    log = tmp_path / "log"
    record = hook_script(tmp_path, f"#!/bin/sh\ncat >> {log}\necho >> {log}\n", "rec.sh")
    stop_once = hook_script(
        tmp_path,
        f"#!/bin/sh\ncat >/dev/null\nif [ ! -e {tmp_path}/stopped ]; then touch {tmp_path}/stopped;"
        " echo 'run the tests first' >&2; exit 2; fi\n",
        "stop.sh",
    )  # fmt: skip
    lines = []
    for event in ("UserPromptSubmit", "SessionStart", "SessionEnd", "PostToolUse", "Notification"):
        lines.append(f'[[hooks.{event}]]\nhooks = [{{ command = "{record}" }}]\n')
    lines.append(f'[[hooks.Stop]]\nhooks = [{{ command = "{stop_once}" }}]\n')
    config(env, tmp_path, "".join(lines))
    call = {"id": "w1", "name": "write_file", "arguments": {"path": "a.txt", "content": "x\n"}}
    script = write_script([{"tool_calls": [call]}, {"text": "done"}, {"text": "tests pass"}])
    store = tmp_path / "s.db"
    done = io_tui("run", "write a", "-w", str(workspace), "--provider", f"scripted:{script}",
                  "--approve", "all", env=env, store=store)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    seen = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    names = [p["hook_event_name"] for p in seen]
    assert names[:2] == ["SessionStart", "UserPromptSubmit"] and names[-1] == "SessionEnd"
    assert "Notification" in names and "PostToolUse" in names
    post = next(p for p in seen if p["hook_event_name"] == "PostToolUse")
    assert post["tool_name"] == "write_file" and post["tool_input"]["file_path"] == "a.txt"
    assert (
        next(p for p in seen if p["hook_event_name"] == "UserPromptSubmit")["prompt"] == "write a"
    )
    trace = json.loads(io_tui("trace", "1", "--json", env=env, store=store).stdout)
    told = [m for s in trace["steps"] for m in s["operator_messages"]]
    assert any("run the tests first" in m for m in told), "a Stop hook's exit 2 sends it on"
    hooks = [e["detail"]["event"] for e in trace["events"] if e["kind"] == "hook"]
    assert hooks.count("Stop") == 2 and "SessionEnd" in hooks


def test_a_hook_that_hangs_is_killed_at_its_timeout(tmp_path, workspace, write_script, env):
    config(
        env, tmp_path, '[[hooks.SessionStart]]\nhooks = [{ command = "sleep 30", timeout = 0.5 }]\n'
    )
    script = write_script([{"text": "hi"}])
    store = tmp_path / "s.db"
    done = io_tui("run", "t", "-w", str(workspace), "--provider", f"scripted:{script}",
                  env=env, store=store)  # fmt: skip
    assert done.returncode == 0, done.stderr
    (ran,) = events(store, env, "hook")
    assert ran["detail"]["timed_out"] is True and ran["detail"]["exit_code"] is None


def test_a_bad_hooks_table_is_one_line(tmp_path, env):
    config(env, tmp_path, '[[hooks.PreToolUse]]\nmatcher = "("\nhooks = []\n')
    done = io_tui("hooks", "list", env=env, store=tmp_path / "s.db")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "matcher" in done.stderr and len(done.stderr.strip().splitlines()) == 1
