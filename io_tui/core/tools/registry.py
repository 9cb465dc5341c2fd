"""The tool registry: the set of tools a run offers the model, looked up by name.

Built-ins come from ``default_registry()``; memory, skill, agent and MCP tools are added by their
owners with ``register`` so this module never needs to know about them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from io_tui.core.providers.base import ToolSpec
from io_tui.core.tools.base import Tool, ToolError
from io_tui.core.tools.command import RunCommand
from io_tui.core.tools.files import EditFile, ListDir, ReadFile, WriteFile
from io_tui.core.tools.search import Find, Grep


class ToolRegistry:
    """Tools by name, in registration order (the order their schemas are shown to the model)."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool, *, replace: bool = False) -> None:
        """Add ``tool``. A second tool under a taken name is a wiring bug unless ``replace``."""
        if tool.name in self._tools and not replace:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool

    def holds(self, tool: Tool) -> bool:
        """Whether ``tool`` itself (not another of its name) is registered."""
        return self._tools.get(tool.name) is tool

    def remove(self, name: str) -> None:
        """Withdraw the tool called ``name`` (a no-op when none is)."""
        self._tools.pop(name, None)

    def get(self, name: str) -> Tool:
        """The tool called ``name``; an unknown name is the model's mistake, so a ToolError."""
        try:
            return self._tools[name]
        except KeyError:
            known = ", ".join(self._tools) or "none"
            raise ToolError(f"unknown tool {name!r}; available tools: {known}") from None

    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(tool.spec() for tool in self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)


BUILTIN_TOOLS: tuple[type[Tool], ...] = (
    ReadFile,
    WriteFile,
    EditFile,
    ListDir,
    Find,
    Grep,
    RunCommand,
)


def default_registry() -> ToolRegistry:
    """A fresh registry of the workspace built-ins; callers add their own tools to it."""
    return ToolRegistry(cls() for cls in BUILTIN_TOOLS)
