"""An MCP server's tool as an io-tui Tool: model-safe name, the server's schema, a policy gate.

Each remote tool is offered as ``mcp__<server>__<tool>`` and gated as ``exec`` on that name, so
the deny-first policy, approvals and remembered rules cover it like any command. Arguments are
checked against the server's JSON schema before anything is sent.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import ConfigDict

from io_tui.core.authority.policy import Act
from io_tui.core.events import EventKind
from io_tui.core.ledger import ObsKind
from io_tui.core.providers.base import ToolSpec
from io_tui.core.tools.base import Gate, Tool, ToolArgs, ToolContext, ToolError, ToolOutcome

if TYPE_CHECKING:
    from mcp_types import CallToolResult

PREFIX = "mcp"
MAX_NAME = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
MAX_SCHEMA_ERRORS = 5


def safe_part(name: str) -> str:
    """``name`` in the model-safe charset: runs of other characters become one ``_``.

    Double underscores are folded too, so ``mcp__server__tool`` always splits one way.
    """
    cleaned = _UNSAFE.sub("_", name.strip())
    cleaned = re.sub("_{2,}", "_", cleaned).strip("_")
    return cleaned or "x"


def exposed_name(server: str, tool: str, taken: Iterable[str] = ()) -> str:
    """``mcp__<server>__<tool>``, at most 64 characters and distinct from ``taken``.

    A name that had to be shortened, or that collides after sanitizing, gets a short hash of the
    original pair so it stays stable across restarts.
    """
    name = f"{PREFIX}__{safe_part(server)}__{safe_part(tool)}"
    if len(name) <= MAX_NAME and name not in set(taken):
        return name
    digest = hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_NAME - 9]}_{digest}"


Sampler = Callable[[Any], Awaitable[Any]]  # a server's request during a call → its answer
# (``mcp.sampling.SamplingAsk`` → the model's text, ``mcp.elicitation.ElicitAsk`` → an
# ``ElicitAnswer``), given by the run whose call it is (``core.run.server_asks``)


class Progress(Protocol):
    """Hears a server's progress notifications on one call (the SDK's ``ProgressFnT``)."""

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None: ...


class Caller(Protocol):
    """What a tool needs from its server's connection."""

    name: str

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        progress: Progress | None = None,
        sampler: Sampler | None = None,
    ) -> CallToolResult: ...


class McpArgs(ToolArgs):
    """The arguments exactly as the model sent them, already checked against the schema."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    arguments: dict[str, Any]


class McpTool(Tool):
    """One remote tool. Built by ``McpTool.make``; the class attributes are per tool."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    Args: ClassVar[type[ToolArgs]] = McpArgs

    def __init__(self, server: Caller, remote_name: str, schema: dict[str, Any]) -> None:
        self.server = server
        self.remote_name = remote_name
        self.schema = model_schema(schema)
        self._validator = _validator(self.schema)

    @classmethod
    def make(
        cls,
        server: Caller,
        remote_name: str,
        description: str | None,
        schema: dict[str, Any],
        exposed: str,
        *,
        read_only: bool = False,
    ) -> McpTool:
        """``read_only``: the server marks it so (``readOnlyHint``): a step that calls only such
        tools takes no checkpoint."""
        text = (description or "").strip() or f"The {remote_name!r} tool"
        attrs = {
            "name": exposed,
            "description": f"{text}\n(MCP server '{server.name}')",
            "changes_files": not read_only,
        }
        subclass: type[McpTool] = type(f"McpTool_{exposed}", (cls,), attrs)
        return subclass(server, remote_name, schema)

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.schema)

    def parse(self, raw: dict[str, Any]) -> McpArgs:
        if not isinstance(raw, dict):
            raise ToolError(f"invalid arguments for {self.name}: expected a JSON object")
        problems = schema_problems(self._validator, raw)
        if problems:
            raise ToolError(
                f"invalid arguments for {self.name} (nothing was sent to the server): {problems}"
            )
        return McpArgs(arguments=raw)

    async def gate(self, args: McpArgs, ctx: ToolContext) -> Gate:
        return Gate(Act.EXEC, self.name, content=json.dumps(args.arguments, sort_keys=True))

    async def run(self, args: McpArgs, ctx: ToolContext) -> ToolOutcome:
        sample = ctx.sample
        sampler: Sampler | None = (
            (lambda ask: sample(ctx.call_id, ask)) if sample is not None else None
        )
        result = await self.server.call(
            self.remote_name, args.arguments, _progress_events(self.name, ctx), sampler
        )
        return ToolOutcome(
            text=render_result(result),
            kind=ObsKind.MCP,
            target=self.name,
            is_error=bool(result.is_error),
            data={"server": self.server.name, "tool": self.remote_name},
        )


def _progress_events(name: str, ctx: ToolContext) -> Progress | None:
    """The server's progress notifications on this call, as live ``tool_progress`` events."""
    emit = ctx.emit
    if emit is None:
        return None

    async def report(progress: float, total: float | None, message: str | None) -> None:
        emit(
            EventKind.TOOL_PROGRESS.value,
            {
                "call_id": ctx.call_id,
                "name": name,
                "progress": progress,
                "total": total,
                "message": message,
            },
        )

    return report


def model_schema(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The server's input schema as providers accept it: an object with ``properties``."""
    cleaned = dict(schema or {})
    cleaned.pop("$schema", None)
    cleaned.pop("title", None)
    cleaned.setdefault("type", "object")
    cleaned.setdefault("properties", {})
    return cleaned


def _validator(schema: dict[str, Any]) -> Any | None:
    """A jsonschema validator for ``schema``, or None when the schema itself is not valid."""
    import jsonschema

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError:
        return None  # the server's problem; let the server judge the arguments
    return cls(schema)


def schema_problems(
    validator: Any | None, arguments: dict[str, Any], top: str = "arguments"
) -> str:
    """Up to five schema violations as ``path: message`` (``top``: the whole object's path);
    empty when the arguments are valid."""
    if validator is None:
        return ""
    errors = sorted(validator.iter_errors(arguments), key=lambda e: list(e.absolute_path))
    lines = []
    for error in errors[:MAX_SCHEMA_ERRORS]:
        path = ".".join(str(p) for p in error.absolute_path) or top
        lines.append(f"{path}: {error.message}")
    if len(errors) > MAX_SCHEMA_ERRORS:
        lines.append(f"and {len(errors) - MAX_SCHEMA_ERRORS} more")
    return "; ".join(lines)


def render_result(result: CallToolResult) -> str:
    """Text content joined; structured content as JSON unless the text already carries it;
    images, audio and binary resources summarized by type and size."""
    from mcp_types import (
        AudioContent,
        EmbeddedResource,
        ImageContent,
        ResourceLink,
        TextContent,
    )

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent | AudioContent):
            size = decoded_size(block.data)
            parts.append(f"[{block.type} {block.mime_type}, {size:,} bytes]")
        elif isinstance(block, EmbeddedResource):
            parts.append(render_embedded(block.resource))
        elif isinstance(block, ResourceLink):
            size_note = f", {block.size:,} bytes" if block.size is not None else ""
            mime = f" {block.mime_type}" if block.mime_type else ""
            parts.append(f"[resource link {block.uri}{mime}{size_note}: {block.name}]")
        else:
            parts.append(f"[{getattr(block, 'type', type(block).__name__)} content]")
    structured = result.structured_content
    if structured is not None and not _carried_as_text(structured, parts):
        parts.append(json.dumps(structured, ensure_ascii=False, indent=2, sort_keys=True))
    text = "\n".join(parts)
    if not text:
        return "(the tool returned an error and no content)" if result.is_error else "(no content)"
    return text


def render_embedded(resource: Any) -> str:
    mime = f" {resource.mime_type}" if resource.mime_type else ""
    text = getattr(resource, "text", None)
    if text is not None:
        return f"[resource {resource.uri}{mime}, {len(text):,} chars]\n{text}"
    return f"[resource {resource.uri}{mime}, {decoded_size(resource.blob):,} bytes]"


def _carried_as_text(structured: Any, parts: list[str]) -> bool:
    """Whether the text blocks already say what the structured content says (servers are asked
    to send both): the same JSON, or a one-key wrapper around the text itself, as SDK servers
    put on plain values (``{"result": value}``) and the filesystem server on a file
    (``{"content": text}``). Such content is stored once, as the text."""
    wrapped = (
        next(iter(structured.values()))
        if isinstance(structured, dict) and len(structured) == 1
        else None
    )
    if isinstance(wrapped, str) and wrapped == "\n".join(parts):
        return True
    for part in parts:
        if wrapped is not None and part == str(wrapped):
            return True
        try:
            value = json.loads(part)
        except ValueError:
            continue
        if value == structured or (wrapped is not None and value == wrapped):
            return True
    return False


def decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except ValueError:
        return len(data)
