"""The errors a tool call ends in, written for the model to read and adapt to. A leaf: the tools
(``tools.base``) and the workspace they act through both raise them, and import nothing else."""

from __future__ import annotations


class ToolError(Exception):
    """A failure the model should read and adapt to (bad arguments, missing file, no match)."""


class WorkspaceError(ToolError):
    """A path or file operation the workspace refuses; the message is written for the model."""
