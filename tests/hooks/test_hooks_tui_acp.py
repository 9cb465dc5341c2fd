"""The same Claude Code-style ``PreToolUse`` hook that denies ``rm`` honoured where a run is
driven from the cockpit (its runs in the app's loop and in the harness worker process) and from
an ACP client (the protocol package's own client over a real ``io-tui acp``); a hook's ``ask``
shown in the cockpit's approval modal with its layer."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from acp import text_block
from acp_client import EditorClient, io_tui_acp
from textual.pilot import Pilot

from io_tui.config import Settings
from io_tui.core import NewRunRequest, Store
from io_tui.ui.app import create_app
from io_tui.ui.screens.approval import ApprovalScreen

DENY_RM = """#!/bin/sh
input=$(cat)
cmd=$(printf '%s' "$input" | python3 -c 'import json,sys; print(json.load(sys.stdin)["tool_input"].get("command",""))')
case " $cmd " in
  *" rm "*) echo "rm is not allowed here" >&2; exit 2 ;;
esac
exit 0
"""
ASK = """#!/bin/sh
cat >/dev/null
echo '{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
 "permissionDecisionReason": "a human looks at every command"}}'
"""
ALLOW_EXEC = '[defaults]\nexec = "allow"\nwrite = "allow"\n'
RM = {"id": "c1", "name": "run_command", "arguments": {"argv": ["rm", "doomed.txt"]}}


def hook(tmp_path: Path, body: str, name: str) -> dict[str, Any]:
    path = tmp_path / name
    path.write_text(body)
    path.chmod(0o755)
    return {"PreToolUse": [{"matcher": "Bash", "hooks": [{"command": str(path)}]}]}


def allowing_policy(tmp_path: Path) -> Path:
    policy = tmp_path / "policy.toml"
    policy.write_text(ALLOW_EXEC)
    return policy


async def until(predicate: Callable[[], object], pilot: Pilot[Any], limit: float = 60.0) -> None:
    for _ in range(int(limit / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError("condition not reached")


async def refusals(store_path: Path, run_id: int) -> list[dict[str, Any]]:
    async with await Store.open(store_path) as store:
        return [e.detail for e in await store.trace.events(run_id) if e.kind == "tool_refused"]


@pytest.mark.parametrize("harness", ["inline", "process"])
async def test_the_cockpit_honours_a_hook_that_denies_rm(
    tmp_path, workspace, write_script, harness
):
    (workspace / "doomed.txt").write_text("keep me\n")
    script = write_script([{"tool_calls": [RM]}, {"text": "tried"}])
    settings = Settings(
        ui={"harness": harness},  # type: ignore[arg-type]
        hooks=hook(tmp_path, DENY_RM, "deny_rm.sh"),  # type: ignore[arg-type]
        policy=allowing_policy(tmp_path),
    )
    app = create_app(settings, tmp_path / "store.db", poll_interval=None)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.screen.query("#prompt"), pilot)
        app.start_request(NewRunRequest("clean up", workspace, f"scripted:{script}"))
        await until(lambda: 1 in app.runs and app.runs[1].status == "finished", pilot)
    assert (workspace / "doomed.txt").exists(), "the hook's deny wins over the policy's allow"
    (refused,) = await refusals(tmp_path / "store.db", 1)
    assert refused["layer"] == "hook:PreToolUse"


async def test_a_hooks_ask_shows_its_layer_in_the_approval_modal(tmp_path, workspace, write_script):
    call = {"id": "c1", "name": "run_command", "arguments": {"argv": ["true"]}}
    script = write_script([{"tool_calls": [call]}, {"text": "done"}])
    settings = Settings(
        ui={"harness": "inline"},  # type: ignore[arg-type]
        hooks=hook(tmp_path, ASK, "ask.sh"),  # type: ignore[arg-type]
        policy=allowing_policy(tmp_path),
    )
    app = create_app(settings, tmp_path / "store.db", poll_interval=None)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(lambda: app.screen.query("#prompt"), pilot)
        app.start_request(NewRunRequest("check", workspace, f"scripted:{script}"))
        await until(lambda: isinstance(app.screen, ApprovalScreen), pilot)
        screen = app.screen
        assert isinstance(screen, ApprovalScreen)
        assert screen.request.layer == "hook:PreToolUse"

        def shown() -> str:  # the modal's lines, once they are mounted
            return " ".join(str(s.render()) for s in screen.query("Static"))

        await until(lambda: "hook:PreToolUse" in shown(), pilot)


async def test_an_acp_session_honours_a_hook_that_denies_rm(
    tmp_path, workspace, write_script, store_path
):
    (workspace / "doomed.txt").write_text("keep me\n")
    cfg = tmp_path / "config"  # the suite's IO_TUI_CONFIG_DIR (tests/conftest.py)
    cfg.mkdir(exist_ok=True)
    script_path = tmp_path / "deny_rm.sh"
    hook(tmp_path, DENY_RM, "deny_rm.sh")
    (cfg / "config.toml").write_text(
        f'[[hooks.PreToolUse]]\nmatcher = "Bash"\nhooks = [{{ command = "{script_path}" }}]\n'
    )
    script = write_script([{"tool_calls": [RM]}, {"text": "tried"}])
    client = EditorClient()
    args = ("--provider", f"scripted:{script}", "--store", str(store_path),
            "--policy", str(allowing_policy(tmp_path)))  # fmt: skip
    async with io_tui_acp(client, *args) as conn:
        session = await conn.new_session(cwd=str(workspace))
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("clean up")])
    assert answer.stop_reason == "end_turn"
    assert (workspace / "doomed.txt").exists()
    assert not client.terminals, "the refused command never reached the client's terminal"
    (failed,) = client.tool_updates("failed")
    assert "hook:PreToolUse" in failed.content[0].content.text
    (refused,) = await refusals(store_path, answer.field_meta["io-tui"]["run_id"])
    assert refused["layer"] == "hook:PreToolUse"
