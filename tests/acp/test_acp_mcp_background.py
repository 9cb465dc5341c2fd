"""An ACP session's MCP servers start in the background, as the CLI's and the app's do: a server
that hangs at start never holds up the session's first prompt, and one that becomes ready
mid-run has its tools offered to the model from the next request, with the notice the other
paths give. The protocol package's own client over a real ``io-tui acp`` subprocess; the
servers are real stdio subprocesses of the test server, passed by the client."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest
from acp import text_block
from acp.schema import EnvVariable, McpServerStdio
from acp_client import EditorClient, io_tui_acp
from cli_process import io_tui
from mcp_support import MARK_VAR, needs_proc, new_mark, server_script_args, wait_until_gone
from mcp_test_server import GATE_VAR
from waits import until

STARTUP_TIMEOUT_S = 30  # a client's server's start-up timeout (io-tui's default)
READY_WAIT_S = 1.0
EDIT = {
    "name": "edit_file",
    "arguments": {"path": "src/app.py", "old": "return a", "new": "return x"},
}
ECHO = {"name": "mcp__late__echo", "arguments": {"message": "hi"}}


def server(name: str, mode: str, **env: str) -> McpServerStdio:
    variables = [EnvVariable(name=k, value=v) for k, v in env.items()]
    return McpServerStdio(
        name=name, command=sys.executable, args=server_script_args(mode), env=variables
    )


@needs_proc
async def test_a_hanging_server_never_holds_a_prompt_and_a_late_one_joins_the_run(
    workspace, write_script, store_path, tmp_path, monkeypatch
):
    monkeypatch.setenv("IO_TUI_MCP__READY_WAIT_S", str(READY_WAIT_S))
    mark, gate, stderr = new_mark(), tmp_path / "gate", tmp_path / "stderr.log"
    stuck = server("stuck", "hang-at-start", **{MARK_VAR: mark})
    late = server("late", "gated", **{GATE_VAR: str(gate)})
    script = write_script(
        [
            {"text": "Hello."},
            {"text": "Editing.", "tool_calls": [EDIT]},
            {"text": "Echoing.", "tool_calls": [ECHO]},
            {"text": "Done."},
        ]
    )
    client = EditorClient(answers=["hold", "approve"])
    args = ("--provider", f"scripted:{script}", "--store", str(store_path), "-v")
    async with io_tui_acp(client, *args, stderr=stderr) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[stuck, late])
        began = time.monotonic()
        first = await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
        took = time.monotonic() - began
        # answered after ready_wait_s, not after the hanging server's start-up timeout
        assert took < STARTUP_TIMEOUT_S / 3, f"the first prompt took {took:.1f}s"
        assert first.stop_reason == "end_turn"

        second = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[text_block("edit, then echo")])
        )
        await client.asked.wait()  # the run is at its first step's edit: open the gate now
        gate.write_text("serve")
        await until(
            lambda: "MCP server 'late' ready" in stderr.read_text(), "the late server's tools"
        )
        assert client.release is not None
        client.release.set_result("approve")
        answer = await second
        assert answer.stop_reason == "end_turn"
    assert wait_until_gone(mark) == []  # the hanging start ended with the process

    first_trace = trace_of(first.field_meta["io-tui"]["run_id"], store_path)
    (told,) = first_trace["steps"][0]["operator_messages"]
    assert told.startswith("io-tui: still starting: MCP server 'late', MCP server 'stuck'.")
    trace = trace_of(answer.field_meta["io-tui"]["run_id"], store_path)
    steps = trace["steps"]
    assert not any("mcp__late__" in m for m in steps[0]["operator_messages"])
    (ready,) = [m for m in steps[1]["operator_messages"] if "is now ready" in m]
    assert ready.startswith(
        "io-tui: MCP server 'late' is now ready; its tools are offered from this request on:"
    )
    assert "mcp__late__echo" in ready
    assert steps[1]["observations"][0]["text"].endswith("echo: hi")
    completed = client.tool_updates("completed")
    assert any("echo: hi" in u.content[0].content.text for u in completed)
    assert "Traceback" not in stderr.read_text()


def trace_of(run_id: int, store_path: Path) -> dict:
    done = io_tui("trace", str(run_id), "--json", "--store", str(store_path))
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(autouse=True)
def _no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IO_TUI_CONFIG_DIR", str(tmp_path / "config"))
