"""What MCP servers offer the operator to browse: their prompts and resources, as rows.

The rows cross the harness process's pipe (the TUI asks the process that owns the servers), so
each has a JSON form; ``Offered`` is one answer: the rows, how many servers were asked, and
the problems met on the way (a file that did not load, a server that did not start).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

ASK_TIMEOUT_S = 30.0  # the operator's ask (list prompts, read a resource…) answers within this


@dataclass(frozen=True, slots=True)
class ResourceRow:
    """One resource or resource template of a server, as the resource browser lists it."""

    server: str
    kind: str  # "resource", "template", or "error" (``name`` says why)
    uri: str
    name: str
    mime_type: str | None = None
    description: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "kind": self.kind,
            "uri": self.uri,
            "name": self.name,
            "mime_type": self.mime_type,
            "description": self.description,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ResourceRow:
        return cls(
            str(data["server"]),
            str(data["kind"]),
            str(data["uri"]),
            str(data["name"]),
            data.get("mime_type"),
            data.get("description"),
        )


@dataclass(frozen=True, slots=True)
class PromptRow:
    """One prompt a server offers: its arguments as (name, required, description)."""

    server: str
    name: str
    description: str
    arguments: tuple[tuple[str, bool, str], ...] = ()

    @property
    def required(self) -> tuple[str, ...]:
        return tuple(name for name, required, _ in self.arguments if required)

    def to_json(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "name": self.name,
            "description": self.description,
            "arguments": [list(argument) for argument in self.arguments],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PromptRow:
        arguments = tuple(
            (str(name), bool(required), str(about)) for name, required, about in data["arguments"]
        )
        return cls(str(data["server"]), str(data["name"]), str(data["description"]), arguments)


Row = TypeVar("Row", PromptRow, ResourceRow)


@dataclass(frozen=True, slots=True)
class Offered(Generic[Row]):
    """What the servers of a workspace offer (``rows``), from how many servers, and the problems
    met asking them (shown above the rows: the others still answer)."""

    rows: tuple[Row, ...] = ()
    servers: int = 0
    problems: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "rows": [row.to_json() for row in self.rows],
            "servers": self.servers,
            "problems": list(self.problems),
        }

    @staticmethod
    def from_json(data: Mapping[str, Any], row: Callable[[Mapping[str, Any]], Row]) -> Offered[Row]:
        return Offered(
            tuple(row(item) for item in data["rows"]),
            int(data["servers"]),
            tuple(str(problem) for problem in data["problems"]),
        )
