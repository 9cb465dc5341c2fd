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

The MCP SDK is imported only when a server is opened, and the package imports none of its
modules (each name is imported from its own), so loading settings (which reads ``config``)
stays fast.
"""
