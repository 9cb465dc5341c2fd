"""``io-tui mcp resources | read | prompts`` against the real ``@modelcontextprotocol/server-
everything`` (from npm, installed on first use), as a user runs them: real subprocesses, the
server found in the workspace's ``.mcp.json``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_process import io_tui
from mcp_support import server_everything_entry

TEXT = "demo://resource/dynamic/text/3"
BLOB = "demo://resource/dynamic/blob/3"


@pytest.fixture
def everything(tmp_path: Path) -> Path:
    """A workspace whose ``.mcp.json`` names server-everything (and a second, quick server)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    server = {"command": "node", "args": [str(server_everything_entry()), "stdio"]}
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"everything": server}}))
    trusted = io_tui("mcp", "trust", cwd=workspace)  # as the operator does, once
    assert trusted.returncode == 0, trusted.stderr
    return workspace


def mcp(workspace: Path, *args: str) -> tuple[int, str, str]:
    done = io_tui("mcp", *args, cwd=workspace)
    assert "Traceback" not in done.stderr
    return done.returncode, done.stdout, done.stderr


def test_resources_lists_resources_and_templates(everything: Path) -> None:
    code, out, _ = mcp(everything, "resources")
    assert code == 0
    assert out.startswith("everything: 7 resources, 2 templates\n")
    assert "  demo://resource/static/document/features.md  features.md (text/markdown)\n" in out
    assert "  demo://resource/dynamic/text/{resourceId}  Dynamic Text Resource" in out
    code, out, _ = mcp(everything, "resources", "everything", "--json")
    rows = json.loads(out)["resources"]
    assert code == 0 and {row["kind"] for row in rows} == {"resource", "template"}
    assert {"server": "everything", "kind": "template", "mime_type": "text/plain"}.items() <= next(
        row for row in rows if row["uri"] == "demo://resource/dynamic/text/{resourceId}"
    ).items()


def test_read_prints_text_and_summarizes_binary(everything: Path) -> None:
    code, out, _ = mcp(everything, "read", "everything", TEXT)
    assert code == 0 and out.startswith("Resource 3: This is a plaintext resource")
    assert out.count("\n") == 1  # the content as it is: no header
    # the blob is "Resource 3: This is a base64 blob created at <the server's local time>":
    # 55 bytes at "1:17:22 PM", 56 at "11:17:22 AM"
    code, out, _ = mcp(everything, "read", "everything", BLOB)
    summary = re.fullmatch(rf"\[resource {re.escape(BLOB)} text/plain, (\d+) bytes\]\n", out)
    assert code == 0 and summary and int(summary[1]) in (55, 56), out
    code, out, _ = mcp(everything, "read", "everything", BLOB, "--json")
    [content] = json.loads(out)["contents"]
    assert code == 0 and content["bytes"] in (55, 56) and "text" not in content


def test_prompts_list_names_descriptions_and_arguments(everything: Path) -> None:
    code, out, _ = mcp(everything, "prompts", "everything")
    assert code == 0
    assert "everything/args-prompt(city*, state)\n" in out
    assert "      city (required): Name of the city\n" in out
    code, out, _ = mcp(everything, "prompts", "--json")
    prompts = {p["name"]: p for p in json.loads(out)["prompts"]}
    assert prompts["args-prompt"]["arguments"][0] == {
        "name": "city", "required": True, "description": "Name of the city"
    }  # fmt: skip


def test_an_unknown_server_or_uri_is_one_line(everything: Path) -> None:
    code, out, err = mcp(everything, "read", "nosuch", TEXT)
    assert (code, out) == (2, "")
    assert err.endswith("io-tui: no MCP server named 'nosuch' (configured: everything)\n")
    code, out, err = mcp(everything, "resources", "nosuch")
    assert code == 2 and "no MCP server named 'nosuch'" in err
    code, out, err = mcp(everything, "read", "everything", "demo://nope/1")
    last = err.splitlines()[-1]
    assert (code, out) == (1, "") and last.startswith("io-tui: MCP server 'everything' ")
    assert "demo://nope/1 not found" in last
