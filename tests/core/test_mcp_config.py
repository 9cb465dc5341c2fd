"""MCP server config: the [mcp.servers.NAME] tables, one-line errors, masking, ${VAR} references."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from io_tui.config import ConfigError, load_settings, masked
from io_tui.core.mcp.config import (
    HttpServer,
    McpConfigError,
    StdioServer,
    expand_env,
    load_mcp_file,
    parse_mcp_settings,
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mcp.toml"
    path.write_text(text)
    return path


def test_stdio_and_http_tables_load_with_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[mcp.servers.time]
command = "uvx"
args = ["mcp-server-time", "--local-timezone", "UTC"]
env = { TZ = "UTC" }
cwd = "/tmp"
call_timeout_s = 10

[mcp.servers.docs]
url = "https://mcp.example.com/mcp"
headers = { Authorization = "Bearer ${DOCS_TOKEN}" }
enabled = false
""",
    )
    servers = load_mcp_file(path).servers
    time_server, docs = servers["time"], servers["docs"]
    assert isinstance(time_server, StdioServer) and isinstance(docs, HttpServer)
    assert time_server.args == ["mcp-server-time", "--local-timezone", "UTC"]
    assert (time_server.call_timeout_s, time_server.startup_timeout_s) == (10, 30.0)
    assert time_server.enabled and not docs.enabled
    assert docs.headers == {"Authorization": "Bearer ${DOCS_TOKEN}"}


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ('args = ["x"]', "mcp.servers.s: an MCP server needs `command` (stdio) or `url`"),
        ('command = "x"\nbogus = 1', "mcp.servers.s.bogus: unknown key"),
        ('url = "ftp://host/mcp"', "mcp.servers.s.url: url must be an http:// or https:// URL"),
        ('type = "sse"\nurl = "http://h/sse"', "type may be 'stdio' or 'http'"),
        ('command = "x"\ncall_timeout_s = 0', "mcp.servers.s.call_timeout_s: Input should be"),
        ('command = ""', "mcp.servers.s.command: String should have at least 1 character"),
    ],
)
def test_invalid_tables_are_one_clear_line(tmp_path: Path, table: str, expected: str) -> None:
    path = write(tmp_path, f"[mcp.servers.s]\n{table}\n")
    with pytest.raises(McpConfigError) as caught:
        load_mcp_file(path)
    message = str(caught.value)
    assert expected in message, message
    assert message.startswith(str(path)) and "\n" not in message


def test_file_problems_are_named(tmp_path: Path) -> None:
    with pytest.raises(McpConfigError, match="not found"):
        load_mcp_file(tmp_path / "nope.toml")
    with pytest.raises(McpConfigError, match="not valid TOML"):
        load_mcp_file(write(tmp_path, "[mcp.servers.s\n"))
    with pytest.raises(McpConfigError, match=r"no MCP servers found; expected JSON .*mcpServers"):
        load_mcp_file(write(tmp_path, 'provider = "ollama"\n'))


def test_settings_read_the_mcp_table_and_mask_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text(
        '[mcp.servers.gh]\ncommand = "gh-mcp"\nenv = { GITHUB_TOKEN = "ghp_secret" }\n'
        '[mcp.servers.web]\nurl = "http://127.0.0.1:9/mcp"\nheaders = { "X-Key" = "k123" }\n'
    )
    monkeypatch.setenv("IO_TUI_CONFIG", str(cfg))
    settings = load_settings()
    gh = settings.mcp.servers["gh"]
    assert isinstance(gh, StdioServer) and gh.env == {"GITHUB_TOKEN": "ghp_secret"}
    shown = json.dumps(masked(settings))
    assert "ghp_secret" not in shown and "k123" not in shown
    assert masked(settings)["mcp"]["servers"]["gh"]["env"] == {"GITHUB_TOKEN": "***"}


def test_bad_mcp_table_in_the_config_file_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('[mcp.servers.x]\ncommand = "a"\ntimeout = 3\n')
    monkeypatch.setenv("IO_TUI_CONFIG", str(cfg))
    with pytest.raises(ConfigError, match=r"mcp\.servers\.x\..*timeout"):
        load_settings()


def test_env_references_expand_and_a_missing_one_is_named(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("IO_TUI_TEST_TOKEN", "t0k")
    server = HttpServer(
        url="http://h/mcp", headers={"Authorization": "Bearer ${IO_TUI_TEST_TOKEN}"}
    )
    assert server.resolved_headers() == {"Authorization": "Bearer t0k"}
    monkeypatch.delenv("IO_TUI_TEST_TOKEN")
    with pytest.raises(
        McpConfigError, match=r"headers.Authorization refers to \$\{IO_TUI_TEST_TOKEN\}"
    ):
        server.resolved_headers()
    assert expand_env("plain $HOME text", "x") == "plain $HOME text"


def test_parse_accepts_explicit_type() -> None:
    servers = parse_mcp_settings(
        {
            "servers": {
                "a": {"type": "stdio", "command": "x"},
                "b": {"type": "http", "url": "http://h"},
            }
        },
        source="test",
    ).servers
    assert isinstance(servers["a"], StdioServer) and isinstance(servers["b"], HttpServer)


def test_loading_settings_does_not_import_the_mcp_sdk() -> None:
    code = (
        "import sys, io_tui.config, io_tui.core.mcp, io_tui.cli.mcp\n"
        "print(sorted(m for m in ('mcp', 'mcp_types', 'httpx2', 'jsonschema') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_loading_settings_leaves_the_hub_and_tools_unloaded() -> None:
    """``io_tui.config`` reads ``core.run.settings`` and the pure config modules it holds
    (``mcp.config``, ``hooks.config``, ``telemetry.config``) only: the packages import none of
    their modules, so neither the hub nor the hook runner (with the workspace and the
    providers) comes with them."""
    code = (
        "import sys, io_tui.config\n"
        "print(sorted(m for m in sys.modules if m.startswith('io_tui.core.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == str(
        [
            "io_tui.core.hooks",
            "io_tui.core.hooks.config",
            "io_tui.core.mcp",
            "io_tui.core.mcp.config",
            "io_tui.core.run",
            "io_tui.core.run.settings",
            "io_tui.core.telemetry",
            "io_tui.core.telemetry.config",
            "io_tui.core.telemetry.context",
        ]
    )


# -- the shapes other clients write (issue 17 item 6) --

CLAUDE_DESKTOP = {
    "mcpServers": {
        "time": {"command": "uvx", "args": ["mcp-server-time"], "env": {"TZ": "UTC"}},
        "docs": {"type": "http", "url": "https://mcp.example.com/mcp",
                 "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
        "cursor": {"url": "http://127.0.0.1:9/mcp", "type": "streamable-http"},
        "off": {"command": "later", "disabled": True, "autoApprove": ["x"]},
    }
}  # fmt: skip


def test_a_json_mcp_servers_file_loads_whatever_its_name(tmp_path: Path) -> None:
    path = tmp_path / "mcp.toml"  # told by content, not by the name
    path.write_text(json.dumps(CLAUDE_DESKTOP, indent=2))
    servers = load_mcp_file(path).servers
    time_server, docs, cursor, off = (servers[n] for n in ("time", "docs", "cursor", "off"))
    assert isinstance(time_server, StdioServer) and time_server.args == ["mcp-server-time"]
    assert time_server.env == {"TZ": "UTC"}
    assert isinstance(docs, HttpServer) and docs.headers["Authorization"].endswith("}")
    assert isinstance(cursor, HttpServer) and cursor.url == "http://127.0.0.1:9/mcp"
    assert isinstance(off, StdioServer) and not off.enabled


def test_toml_mcp_servers_tables_load_in_a_file_and_in_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write(tmp_path, '[mcpServers.time]\ncommand = "uvx"\nargs = ["mcp-server-time"]\n')
    assert load_mcp_file(path).servers["time"].args == ["mcp-server-time"]  # type: ignore[union-attr]
    monkeypatch.setenv("IO_TUI_CONFIG", str(path))
    assert isinstance(load_settings().mcp.servers["time"], StdioServer)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"servers": {}}, "no MCP servers found; expected JSON"),
        ({"mcpServers": []}, "mcpServers must map server names to tables"),
        ({"mcpServers": {"x": "uvx"}}, "mcpServers.x: not a table"),
        ({"mcpServers": {"x": {"type": "sse", "url": "http://h/sse"}}}, "legacy SSE"),
        ({"mcpServers": {"x": {"type": "ws", "url": "http://h"}}}, "'ws' is not one of 'stdio'"),
        (
            {"mcpServers": {"x": {"command": "a", "argz": []}}},
            "mcpServers.x.argz: unknown key (accepted: command, args, env, cwd, url, headers",
        ),
        ({"mcpServers": {"x": {"args": ["a"]}}}, "needs `command` (stdio) or `url`"),
    ],
)
def test_a_wrong_shape_names_the_accepted_ones(tmp_path: Path, data: object, expected: str) -> None:
    path = tmp_path / ".mcp.json"
    path.write_text(json.dumps(data))
    with pytest.raises(McpConfigError) as caught:
        load_mcp_file(path)
    assert expected in str(caught.value) and str(caught.value).startswith(str(path))


def test_bad_json_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    path.write_text('{"mcpServers": {\n  "x": }\n}')
    with pytest.raises(McpConfigError, match=r"not valid JSON \(line 2"):
        load_mcp_file(path)
