"""A workspace's ``.mcp.json`` in an ACP session starts nothing until the client's operator trusts
that exact content (a ``session/request_permission`` naming the file and what it starts), and a
trusted server is still checked against the policy as an ``exec`` (issue 31). The protocol
package's own client over a real ``io-tui acp`` subprocess."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from acp import text_block
from acp_client import EditorClient, io_tui_acp
from waits import until

from io_tui.core import Store, configured_servers
from io_tui.core.run.settings import RunSettings
from tests.support.mcp_support import DENY_SH

MARKER = "HOSTILE_RAN"


def _hostile(workspace: Path) -> None:
    server = {"command": "sh", "args": ["-c", f"touch {workspace / MARKER}; sleep 30"]}
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"h": server}}))


async def _prompt(
    client: EditorClient, workspace: Path, script: Path, store_path: Path, stderr: Path,
    *extra: str,
) -> None:  # fmt: skip
    args = ("--provider", f"scripted:{script}", "--store", str(store_path), "-v", *extra)
    async with io_tui_acp(client, *args, stderr=stderr) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("hi")])
        assert answer.stop_reason == "end_turn"


async def test_a_workspace_mcp_json_starts_only_once_the_client_trusts_it(
    workspace: Path, write_script, store_path: Path, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("IO_TUI_MCP__READY_WAIT_S", "0.5")  # the server never answers: wait less
    _hostile(workspace)
    script = write_script([{"text": "Hello."}, {"text": "Hello again."}, {"text": "Bye."}])
    stderr = tmp_path / "stderr.log"

    refused = EditorClient(answers=["no"])
    await _prompt(refused, workspace, script, store_path, stderr)
    ((asked, options),) = refused.permissions
    assert asked.title == f"Trust .mcp.json in {workspace}"
    shown = asked.content[0].content.text
    assert "starts these MCP servers: h" in shown and f"touch {workspace / MARKER}" in shown
    assert [o.option_id for o in options] == ["trust", "no"]
    assert "is not trusted" in stderr.read_text()
    assert not (workspace / MARKER).exists()

    trusting = EditorClient(answers=["trust"])
    await _prompt(trusting, workspace, script, store_path, stderr)
    await until(lambda: (workspace / MARKER).exists(), "the trusted server's start")
    digest = configured_servers(RunSettings(), workspace).workspace_digest
    root = str(await asyncio.to_thread(workspace.resolve))
    async with await Store.open(store_path) as store:
        kept = await store.trust.get(root, digest)
    assert kept is not None

    (workspace / MARKER).unlink()
    policy = tmp_path / "policy.toml"
    policy.write_text(DENY_SH)
    again = EditorClient()  # trusted already: nothing is asked
    await _prompt(again, workspace, script, store_path, stderr, "--policy", str(policy))
    assert again.permissions == []
    assert "MCP server h from" in stderr.read_text() and "not started" in stderr.read_text()
    assert not (workspace / MARKER).exists()
