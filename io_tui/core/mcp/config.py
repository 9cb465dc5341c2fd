"""MCP server configuration: the ``[mcp.servers.NAME]`` tables of the TOML config, and the
``mcpServers`` shape other clients write (Claude Desktop, Claude Code, Cursor), docs/MCP.md.

A table with ``command`` is a stdio server (io-tui starts it as a subprocess); a table with
``url`` is a streamable-HTTP server (io-tui connects to it). ``type = "stdio" | "http"`` may say
so explicitly. Values in ``env`` and ``headers`` may refer to environment variables as
``${NAME}``, so tokens stay out of the file; they are masked whenever settings are shown.

A file of servers (``--mcp-config``, the user's ``mcp.json``, a workspace's ``.mcp.json``) is
JSON or TOML, told apart by its content, holding either shape (``load_mcp_file``).

This module is pure pydantic: loading settings never imports the MCP SDK.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field as dataclass_field
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_serializer,
    field_validator,
)

MASK = "***"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class McpConfigError(ValueError):
    """An MCP config that does not validate; the message is one line naming the server and key."""


class _ServerBase(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    startup_timeout_s: float = Field(
        default=30.0, gt=0, le=600, description="connect, handshake and list tools within this"
    )
    call_timeout_s: float = Field(
        default=120.0, gt=0, le=3600, description="one tool call must answer within this"
    )


class StdioServer(_ServerBase):
    """A server io-tui starts as a subprocess and talks to over stdin/stdout."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(
        default_factory=dict, description="added to a minimal inherited environment (PATH, HOME…)"
    )
    cwd: Path | None = None

    @field_serializer("env", when_used="json")
    def _mask_env(self, env: dict[str, str]) -> dict[str, str]:
        return {key: MASK for key in env}

    def resolved_env(self) -> dict[str, str]:
        return {key: expand_env(value, f"env.{key}") for key, value in self.env.items()}


class HttpServer(_ServerBase):
    """A running server io-tui connects to over streamable HTTP."""

    type: Literal["http"] = "http"
    url: str
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"url must be an http:// or https:// URL, got {url!r}")
        return url

    @field_serializer("headers", when_used="json")
    def _mask_headers(self, headers: dict[str, str]) -> dict[str, str]:
        return {key: MASK for key in headers}

    def resolved_headers(self) -> dict[str, str]:
        return {key: expand_env(value, f"headers.{key}") for key, value in self.headers.items()}


def _server_kind(data: Any) -> str | None:
    if isinstance(data, BaseModel):
        return getattr(data, "type", None)
    if not isinstance(data, dict):
        return None
    kind = data.get("type")
    if kind is not None:
        return str(kind)
    if "url" in data:
        return "http"
    if "command" in data:
        return "stdio"
    return None


McpServerConfig = Annotated[
    Annotated[StdioServer, Tag("stdio")] | Annotated[HttpServer, Tag("http")],
    Discriminator(
        _server_kind,
        custom_error_type="mcp_server_kind",
        custom_error_message=(
            "an MCP server needs `command` (stdio) or `url` (streamable HTTP); "
            "type may be 'stdio' or 'http'"
        ),
    ),
]


class McpSettings(BaseModel):
    """The ``[mcp]`` table: ``[mcp.servers.NAME]`` per server."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    servers: dict[str, McpServerConfig] = Field(default_factory=dict)
    # read a workspace's .mcp.json (Claude Code's project file); false: ignore it
    workspace_file: bool = True
    # servers start in the background; a run's first request waits for them at most this long
    # (from when they were started), then goes on and takes each one's tools when it is ready
    ready_wait_s: float = Field(default=5.0, ge=0)

    @field_validator("servers")
    @classmethod
    def _names(cls, servers: dict[str, Any]) -> dict[str, Any]:
        for name in servers:
            if not name.strip():
                raise ValueError("an MCP server name may not be empty")
        return servers


def expand_env(value: str, where: str) -> str:
    """Replace ``${NAME}`` with the environment variable; a missing one is a clear error."""

    def lookup(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in os.environ:
            raise McpConfigError(f"{where} refers to ${{{name}}}, which is not set")
        return os.environ[name]

    return _ENV_REF.sub(lookup, value)


def parse_mcp_settings(data: Any, *, source: str) -> McpSettings:
    """Validate an ``[mcp]`` table, turning the first problem into one McpConfigError line."""
    try:
        return McpSettings.model_validate(data)
    except ValidationError as exc:
        raise McpConfigError(f"{source}: {describe_error(exc, prefix='mcp')}") from None


def describe_error(exc: ValidationError, *, prefix: str = "") -> str:
    """The first validation error as ``mcp.servers.NAME.key: message``, without union noise."""
    err = exc.errors()[0]
    loc = [str(part) for part in err["loc"] if part not in ("stdio", "http")]
    where = ".".join([prefix, *loc] if prefix else loc)
    message = err["msg"].removeprefix("Value error, ")
    if err["type"] == "extra_forbidden":
        message = "unknown key"
    return f"{where}: {message}" if where else message


SHAPES = (
    'JSON {"mcpServers": {"NAME": {"command": …} or {"url": …}}} (as Claude Desktop, Claude Code'
    " and Cursor write it), or TOML [mcp.servers.NAME] / [mcpServers.NAME] tables"
)
# the keys of a client's ``mcpServers`` entry, and what each becomes here
CLIENT_KEYS = ("command", "args", "env", "cwd", "url", "headers", "type", "disabled")
_OWN_KEYS = ("enabled", "startup_timeout_s", "call_timeout_s")
# other clients' approval hints: io-tui's policy decides instead, so they are not used
_FOREIGN_KEYS = frozenset({"autoApprove", "alwaysAllow", "disabledTools"})
_TYPES = {"stdio": "stdio", "http": "http", "streamable-http": "http", "streamableHttp": "http"}


def client_servers(data: Any, *, source: str, where: str = "mcpServers") -> dict[str, Any]:
    """``mcpServers`` entries as ``[mcp.servers]`` tables: ``disabled`` becomes ``enabled``,
    ``type`` ``streamable-http`` becomes ``http``; the legacy ``sse`` and unknown keys are
    errors naming what is accepted."""
    if not isinstance(data, dict):
        raise McpConfigError(f"{source}: {where} must map server names to tables; {SHAPES}")
    out: dict[str, Any] = {}
    for name, entry in data.items():
        if not isinstance(entry, dict):
            raise McpConfigError(f"{source}: {where}.{name}: not a table; {SHAPES}")
        table: dict[str, Any] = {}
        for key, value in entry.items():
            if key == "type":
                if value == "sse":
                    raise McpConfigError(
                        f"{source}: {where}.{name}.type: the legacy SSE transport is not"
                        " supported; use the server's streamable HTTP endpoint (type 'http')"
                    )
                if value not in _TYPES:
                    accepted = ", ".join(repr(t) for t in _TYPES)
                    raise McpConfigError(
                        f"{source}: {where}.{name}.type: {value!r} is not one of {accepted}"
                    )
                table["type"] = _TYPES[value]
            elif key == "disabled":
                table["enabled"] = not value
            elif key in CLIENT_KEYS or key in _OWN_KEYS:
                table[key] = value
            elif key not in _FOREIGN_KEYS:
                raise McpConfigError(
                    f"{source}: {where}.{name}.{key}: unknown key (accepted:"
                    f" {', '.join(CLIENT_KEYS + _OWN_KEYS)})"
                )
        out[name] = table
    return out


def read_servers(data: Any, *, source: str) -> McpSettings:
    """The servers of a parsed file: ``mcp.servers`` tables and/or ``mcpServers`` entries (the
    latter win on a shared name); neither is an error naming the accepted shapes."""
    table = data.get("mcp") if isinstance(data, dict) else None
    client = data.get("mcpServers") if isinstance(data, dict) else None
    if table is None and client is None:
        raise McpConfigError(f"{source}: no MCP servers found; expected {SHAPES}")
    merged = dict(table) if isinstance(table, dict) else {} if table is None else table
    if client is not None:
        if not isinstance(merged, dict):
            raise McpConfigError(f"{source}: mcp must be a table; expected {SHAPES}")
        servers = dict(merged.get("servers") or {})
        servers.update(client_servers(client, source=source))
        merged = {**merged, "servers": servers}
    return parse_mcp_settings(merged, source=source)


def load_mcp_file(path: Path) -> McpSettings:
    """Read the servers of a JSON or TOML file (told apart by content: JSON starts with ``{``),
    in either shape (``read_servers``). The file may hold other tables (it can be the main
    config file); only ``mcp`` and ``mcpServers`` are read."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise McpConfigError(f"MCP config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(f"{path}: cannot read: {exc}") from None
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise McpConfigError(
                f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
            ) from None
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise McpConfigError(
                f"{path}: not valid TOML: {exc} (JSON files start with '{{')"
            ) from None
    return read_servers(data, source=str(path))


WORKSPACE_FILE = ".mcp.json"  # Claude Code's project-scope file
USER_FILE = "mcp.json"  # in io-tui's config dir


def discover_mcp_files(user_dir: Path, workspace: Path | None) -> list[Path]:
    """The server files that exist, lowest precedence first: the user's ``mcp.json`` in the
    config dir, then the workspace's ``.mcp.json``."""
    found = [user_dir / USER_FILE]
    if workspace is not None:
        found.append(workspace / WORKSPACE_FILE)
    return [path for path in found if path.is_file()]


@dataclass(frozen=True)
class FoundServers:
    """The servers a run gets, and what its workspace's ``.mcp.json`` added (to announce)."""

    servers: dict[str, Any]
    workspace_file: Path | None = None
    from_workspace: dict[str, Any] = dataclass_field(default_factory=dict)
    workspace_digest: str = ""  # of the workspace file's bytes: what the operator trusts
    without_workspace: dict[str, Any] = dataclass_field(default_factory=dict)

    def untrusted(self) -> FoundServers:
        """These servers without the workspace file's (its content is not trusted)."""
        return FoundServers(dict(self.without_workspace), self.workspace_file)

    def announcement(self) -> str | None:
        """``MCP servers from ./.mcp.json: db (npx -y @x/db-mcp)``: what the workspace's file
        starts, said because it came with the workspace; None when it adds none."""
        if not self.from_workspace:
            return None
        started = ", ".join(f"{name} ({_what(e)})" for name, e in self.from_workspace.items())
        return f"MCP servers from {self.workspace_file}: {started}"


def find_servers(
    configured: Mapping[str, Any],
    user_dir: Path,
    workspace: Path | None = None,
    extra: Path | None = None,
    *,
    workspace_file: bool = True,
) -> FoundServers:
    """The MCP servers of a run in ``workspace``, wherever it starts (``io-tui run``, the app's
    worker, the queue, ``io-tui acp``), lowest precedence first: the ``configured`` tables, the
    user's ``mcp.json`` in ``user_dir``, the workspace's ``.mcp.json`` (unless
    ``workspace_file`` is false: ``[mcp] workspace_file``) and ``extra`` (``--mcp-config``); a name given twice takes the later entry.
    McpConfigError (one line naming the file and the accepted shapes) for a file that does not
    load."""
    servers: dict[str, Any] = dict(configured)
    without: dict[str, Any] = dict(configured)
    here = workspace if workspace_file else None
    files = [*discover_mcp_files(user_dir, here), *([extra] if extra is not None else [])]
    ours = here / WORKSPACE_FILE if here is not None else None
    added: dict[str, Any] = {}
    digest = ""
    for file in files:
        loaded = load_mcp_file(file).servers
        if file == ours and loaded:
            added, digest = dict(loaded), file_digest(file)
        else:
            without.update(loaded)
        servers.update(loaded)
    if not added:
        return FoundServers(servers, without_workspace=dict(servers))
    return FoundServers(servers, ours, added, digest, without)


def file_digest(path: Path) -> str:
    """The digest of a file's bytes (sha256, hex): a workspace ``.mcp.json`` is trusted by it."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return ""


def _what(entry: Any) -> str:
    """What a server entry starts or reaches, for the notice naming a workspace file's."""
    if not getattr(entry, "enabled", True):
        return "disabled"
    command = getattr(entry, "command", None)
    return " ".join([command, *entry.args]) if command else str(getattr(entry, "url", ""))


def user_servers(servers: Mapping[str, Any], user_dir: Path) -> tuple[dict[str, Any], list[str]]:
    """``servers`` (the settings') with the user's ``mcp.json`` in ``user_dir`` over them: what
    a process's shared hub starts (``McpHubs``), before any workspace is known. A bad file is a
    problem line, not an error."""
    try:
        return find_servers(servers, user_dir).servers, []
    except McpConfigError as exc:
        return dict(servers), [str(exc)]
