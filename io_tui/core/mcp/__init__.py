"""MCP client hub: stdio and streamable-HTTP servers from config, their tools as io-tui tools.

- ``config``: the ``[mcp.servers.NAME]`` tables (pure pydantic; never imports the SDK).
- ``connection``: one server's link: an owner task per client, crash and hang handling, restart.
- ``tools``: a remote tool as ``mcp__<server>__<tool>``, schema-checked, gated as exec.
- ``hub``: ``McpHub`` / ``open_hub``: all servers together, problems, ``register_into``.

The MCP SDK is imported only when a server is opened, so loading settings stays fast.
"""

from io_tui.core.mcp.config import (
    HttpServer,
    McpConfigError,
    McpServerConfig,
    McpSettings,
    StdioServer,
    load_mcp_file,
    parse_mcp_settings,
)
from io_tui.core.mcp.connection import InProcessServer, ServerSource
from io_tui.core.mcp.hub import McpHub, ServerStatus, open_hub, tool_summary
from io_tui.core.mcp.tools import McpTool, exposed_name

__all__ = [
    "HttpServer",
    "InProcessServer",
    "McpConfigError",
    "McpHub",
    "McpServerConfig",
    "McpSettings",
    "McpTool",
    "ServerSource",
    "ServerStatus",
    "StdioServer",
    "exposed_name",
    "load_mcp_file",
    "open_hub",
    "parse_mcp_settings",
    "tool_summary",
]
