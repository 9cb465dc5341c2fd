"""The operator's MCP asks (the TUI's prompts and resources) start a workspace ``.mcp.json``'s
servers as a run there would: only once its content is trusted, and only those the policy does
not deny as an ``exec`` (issue 31)."""

from __future__ import annotations

import json
from pathlib import Path

from io_tui.core.mcp.config import McpSettings
from io_tui.core.run.mcp_hubs import McpHubs
from io_tui.core.run.origin import configured_servers
from io_tui.core.run.settings import RunSettings
from io_tui.core.store import Store
from tests.support.mcp_support import DENY_SH


async def _problems(settings: RunSettings, store: Store, workspace: Path) -> tuple[str, ...]:
    hubs = McpHubs(settings, lambda _: None, store)
    try:
        return (await hubs.prompts(workspace, timeout_s=10)).problems
    finally:
        await hubs.aclose()


async def test_the_operators_asks_start_no_untrusted_nor_denied_server(
    tmp_path: Path, store: Store
) -> None:
    workspace = tmp_path / "repo"
    workspace.mkdir()
    marker = workspace / "HOSTILE_RAN"
    server = {"command": "sh", "args": ["-c", f"touch {marker}; sleep 30"]}
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"h": server}}))
    policy = tmp_path / "policy.toml"
    policy.write_text(DENY_SH)
    settings = RunSettings(policy=policy, mcp=McpSettings(ready_wait_s=0.1))

    (said,) = await _problems(settings, store, workspace)
    assert "is not trusted" in said
    digest = configured_servers(settings, workspace).workspace_digest
    await store.trust.trust(str(workspace.resolve()), digest, "the operator")
    (said,) = await _problems(settings, store, workspace)
    assert said.startswith("MCP server h from") and "not started" in said
    assert not marker.exists()
