"""The MCP servers a client passes with ``session/new`` or ``session/load``, as io-tui servers:
a stdio server (``command``, ``args``, ``env``) and a streamable-HTTP one (``url``, ``headers``)
become the ``mcpServers`` entries io-tui reads from a ``.mcp.json``; SSE, which io-tui does not
speak, and the unstable ACP transport are left out with a warning. They start with the session's
first prompt, beside the config's (a client's server wins on a shared name), and their calls go
through io-tui's policy like any MCP call."""

from __future__ import annotations

import logging
from typing import Any

from acp import RequestError

from io_tui.core import McpConfigError, ServerSource, read_servers

log = logging.getLogger("io_tui.acp")


def client_servers(servers: list[Any] | None) -> dict[str, ServerSource]:
    entries: dict[str, dict[str, Any]] = {}
    for server in servers or []:
        kind = getattr(server, "type", None)
        if kind is None and hasattr(server, "command"):
            entries[server.name] = {
                "command": server.command,
                "args": list(server.args),
                "env": {v.name: v.value for v in server.env},
            }
        elif kind == "http":
            headers = {h.name: h.value for h in server.headers}
            entries[server.name] = {"type": "http", "url": server.url, "headers": headers}
        else:
            log.warning(
                "MCP server %r: the %s transport is not offered, left out", server.name, kind
            )
    if not entries:
        return {}
    try:
        settings = read_servers({"mcpServers": entries}, source="the client's mcpServers")
    except McpConfigError as exc:
        raise RequestError.invalid_params({"details": str(exc)}) from None
    return dict(settings.servers)
