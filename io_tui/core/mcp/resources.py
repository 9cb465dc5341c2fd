"""An MCP server's resources as two io-tui tools, for servers that offer resources:

- ``mcp__<server>__list_resources``: its resources and resource templates, one line each;
- ``mcp__<server>__read_resource``: one resource's contents, gated as the act ``read`` on
  ``mcp:<server>:<uri>``, so the policy (deny first, then allow or ask) covers it like a file.

A read resource is an ``mcp`` observation whose target is that ``mcp:<server>:<uri>``. Where the
server offers subscriptions, reading one subscribes to its updates: a run that read it is told at
its next request when it changed (``Arrival.updated``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import ConfigDict, Field

from io_tui.core.authority.policy import Act
from io_tui.core.ledger import ObsKind
from io_tui.core.tools.base import Gate, Tool, ToolArgs, ToolContext, ToolOutcome

if TYPE_CHECKING:
    from mcp_types import ReadResourceResult, Resource, ResourceTemplate

MAX_LISTED = 200  # resources listed per call; the rest are counted


class Reader(Protocol):
    """What the resource tools need from their server's connection."""

    name: str

    async def resources(self) -> tuple[list[Resource], list[ResourceTemplate]]: ...

    async def read(self, uri: str) -> ReadResourceResult: ...


def resource_target(server: str, uri: str) -> str:
    """What a read of ``uri`` is checked and recorded as: ``mcp:<server>:<uri>``."""
    return f"mcp:{server}:{uri}"


class NoArgs(ToolArgs):
    model_config = ConfigDict(extra="forbid", frozen=True)


class UriArgs(ToolArgs):
    model_config = ConfigDict(extra="forbid", frozen=True)
    uri: str = Field(
        min_length=1,
        description="The resource's URI, as listed, or a template's URI with its fields filled in",
    )


class ServerTool(Tool):
    """A tool io-tui offers for a server (not one of the server's own)."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    remote_name: ClassVar[str] = ""  # the part after ``mcp__<server>__``

    def __init__(self, server: Reader) -> None:
        self.server = server

    @classmethod
    def make(cls, server: Reader, exposed: str) -> ServerTool:
        text = cls.description.format(server=server.name)
        attrs = {"name": exposed, "description": text}
        subclass: type[ServerTool] = type(f"{cls.__name__}_{exposed}", (cls,), attrs)
        return subclass(server)


class ListResources(ServerTool):
    changes_files = False
    remote_name = "list_resources"
    description = (
        "List the resources (documents, data) and resource templates that MCP server"
        " '{server}' offers; read one with its read_resource tool."
    )
    Args = NoArgs

    async def gate(self, args: ToolArgs, ctx: ToolContext) -> Gate | None:
        return None  # names and descriptions only; reading one is checked

    async def run(self, args: ToolArgs, ctx: ToolContext) -> ToolOutcome:
        resources, templates = await self.server.resources()
        text = listing_text(resources, templates)
        return ToolOutcome(
            text=text,
            kind=ObsKind.MCP,
            target=f"mcp:{self.server.name}:",
            data={"server": self.server.name, "resources": len(resources)},
        )


class ReadResource(ServerTool):
    changes_files = False
    remote_name = "read_resource"
    description = (
        "Read one resource of MCP server '{server}' by its URI (see its list_resources tool)."
        " Checked by the policy as a read of mcp:{server}:<uri>."
    )
    Args = UriArgs

    async def gate(self, args: ToolArgs, ctx: ToolContext) -> Gate:
        assert isinstance(args, UriArgs)
        return Gate(Act.READ, resource_target(self.server.name, args.uri))

    async def run(self, args: ToolArgs, ctx: ToolContext) -> ToolOutcome:
        assert isinstance(args, UriArgs)
        result = await self.server.read(args.uri)
        return ToolOutcome(
            text=contents_text(result) or f"(resource {args.uri} is empty)",
            kind=ObsKind.MCP,
            target=resource_target(self.server.name, args.uri),
            data={"server": self.server.name, "uri": args.uri},
        )


def listing_text(resources: list[Any], templates: list[Any]) -> str:
    """One line per resource (``uri  name (mime): description``), then one per template."""
    lines = [_line(r.uri, r.name, r.mime_type, r.description) for r in resources[:MAX_LISTED]]
    if len(resources) > MAX_LISTED:
        lines.append(f"… and {len(resources) - MAX_LISTED} more resources")
    if templates:
        lines.append("templates (fill in the {fields} and read the URI):")
        lines += [
            _line(t.uri_template, t.name, t.mime_type, t.description)
            for t in templates[:MAX_LISTED]
        ]
    return "\n".join(lines) or "(the server lists no resources)"


def _line(uri: object, name: str, mime: str | None, description: str | None) -> str:
    about = f" ({mime})" if mime else ""
    first = (description or "").strip().splitlines()
    return f"{uri}  {name}{about}" + (f": {first[0]}" if first else "")


def contents_text(result: ReadResourceResult) -> str:
    """Each content's text under a one-line header; binary contents summarized by size."""
    from io_tui.core.mcp.tools import render_embedded

    return "\n".join(render_embedded(content) for content in result.contents)


def contents_plain(result: ReadResourceResult) -> list[dict[str, Any]]:
    """Each content as ``io-tui mcp read`` gives it: ``uri``, ``mime_type`` and its ``text``
    as it is, or, binary, its size (``bytes``) and the one-line ``summary`` a run is shown."""
    from io_tui.core.mcp.tools import decoded_size, render_embedded

    out: list[dict[str, Any]] = []
    for content in result.contents:
        item: dict[str, Any] = {"uri": str(content.uri), "mime_type": content.mime_type}
        text = getattr(content, "text", None)
        if text is not None:
            item["text"] = text
        else:
            item["bytes"] = decoded_size(getattr(content, "blob", ""))
            item["summary"] = render_embedded(content)
        out.append(item)
    return out
