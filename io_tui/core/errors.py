"""The errors a tool call ends in, written for the model to read and adapt to. A leaf: the tools
(``tools.base``) and the workspace they act through both raise them, and import nothing else."""

from __future__ import annotations


class ToolError(Exception):
    """A failure the model should read and adapt to (bad arguments, missing file, no match)."""


class WorkspaceError(ToolError):
    """A path or file operation the workspace refuses; the message is written for the model."""


class ServerError(ToolError):
    """A failed call whose message quotes an MCP server: its own error text, its stderr.

    ``said`` is the harness's sentence (what failed, what happens next), ``quoted`` the server's
    words, ``server`` its name. The model reads the quoted words framed as untrusted data, on the
    server's authority (``calls.py``); ``str()`` is the whole message, for the operator."""

    def __init__(self, said: str, quoted: str, server: str) -> None:
        super().__init__(f"{said}: {quoted}" if quoted else said)
        self.said, self.quoted, self.server = said, quoted, server
