"""MCP server configuration: the ``[mcp.servers.NAME]`` tables of the TOML config (docs/MCP.md).

A table with ``command`` is a stdio server (io-tui starts it as a subprocess); a table with
``url`` is a streamable-HTTP server (io-tui connects to it). ``type = "stdio" | "http"`` may say
so explicitly. Values in ``env`` and ``headers`` may refer to environment variables as
``${NAME}``, so tokens stay out of the file; they are masked whenever settings are shown.

This module is pure pydantic: loading settings never imports the MCP SDK.
"""

from __future__ import annotations

import os
import re
import tomllib
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


def load_mcp_file(path: Path) -> McpSettings:
    """Read ``[mcp.servers.NAME]`` tables from a TOML file (``io-tui run --mcp-config FILE``).

    The file may hold other tables (it can be the main config file); only ``[mcp]`` is read.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise McpConfigError(f"MCP config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise McpConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise McpConfigError(f"{path}: not valid TOML: {exc}") from None
    table = data.get("mcp")
    if table is None:
        raise McpConfigError(f"{path}: no [mcp.servers.NAME] table")
    return parse_mcp_settings(table, source=str(path))
