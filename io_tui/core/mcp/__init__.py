"""MCP client hub: stdio and streamable-HTTP servers from config, their tools as io-tui tools.

- ``config``: the ``[mcp.servers.NAME]`` tables (pure pydantic; never imports the SDK).
- ``connection``: one server's link: an owner task per client, crash and hang handling, restart.
- ``tools``: a remote tool as ``mcp__<server>__<tool>``, schema-checked, gated as exec.
- ``resources``: a server's resources as ``list_resources`` / ``read_resource`` tools.
- ``hub``: ``McpHub``: all servers together, problems, ``register_into`` (built by
  ``core.run.mcp_hubs``, the one place hubs are made).
- ``sampling``, ``elicitation``: a server's requests during a call, as data (what it asked);
  the run whose call it is asks and answers them (``core.run.server_asks``).
- ``offered``: a server's prompts and resources as the operator browses them (JSON for the pipe).

The MCP SDK is imported only when a server is opened, and the package imports its modules on
first use, so loading settings (which reads ``config``) stays fast.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from io_tui.core.mcp.config import (
        HttpServer,
        McpConfigError,
        McpServerConfig,
        McpSettings,
        StdioServer,
        discover_mcp_files,
        load_mcp_file,
        parse_mcp_settings,
        user_servers,
    )
    from io_tui.core.mcp.connection import InProcessServer, ServerSource
    from io_tui.core.mcp.hub import McpHub, ServerStatus, tool_summary
    from io_tui.core.mcp.offered import Offered, PromptRow, ResourceRow
    from io_tui.core.mcp.resources import contents_plain, contents_text, resource_target
    from io_tui.core.mcp.tools import McpTool, exposed_name

_HOME = {  # name → the module that defines it, imported on first use
    **dict.fromkeys(
        (
            "HttpServer",
            "McpConfigError",
            "McpServerConfig",
            "McpSettings",
            "StdioServer",
            "discover_mcp_files",
            "load_mcp_file",
            "parse_mcp_settings",
            "user_servers",
        ),
        "config",
    ),
    **dict.fromkeys(("InProcessServer", "ServerSource"), "connection"),
    **dict.fromkeys(("McpHub", "ServerStatus", "tool_summary"), "hub"),
    **dict.fromkeys(("Offered", "PromptRow", "ResourceRow"), "offered"),
    **dict.fromkeys(("McpTool", "exposed_name"), "tools"),
    **dict.fromkeys(("contents_plain", "contents_text", "resource_target"), "resources"),
}


def __getattr__(name: str) -> Any:
    """Load the submodule behind ``name`` when it is first asked for: importing the settings
    (``core.run.settings`` → ``mcp.config``) then loads neither the hub nor the tools."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)


__all__ = [
    "HttpServer",
    "InProcessServer",
    "McpConfigError",
    "McpHub",
    "McpServerConfig",
    "McpSettings",
    "McpTool",
    "Offered",
    "PromptRow",
    "ResourceRow",
    "ServerSource",
    "ServerStatus",
    "StdioServer",
    "contents_plain",
    "contents_text",
    "discover_mcp_files",
    "exposed_name",
    "load_mcp_file",
    "parse_mcp_settings",
    "resource_target",
    "tool_summary",
    "user_servers",
]
