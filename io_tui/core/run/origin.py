"""How a run was started, recorded in its row (``runs.origin``) when it starts, so that a resume
(``io-tui resume``, ``io-tui decide``, the TUI) rebuilds the same harness in any process: the
run settings (provider, model, limits, timeouts, ``env_allow``, policy file) and its MCP
servers, whatever the resuming process's own config says.

No secret reaches the store: a server's ``env`` and ``headers`` values are recorded only where
they name variables (``${NAME}``, ``Bearer ${TOKEN}``); a literal value is recorded as
``${KEY}``, its own name (made a variable name), and a password in a URL as ``***``. At resume
each value comes from this process's environment, or, where a variable is not set (or the URL
lost its password), from this process's config for a server of the same name; else that server
does not start (a notice, the run goes on without it).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, ValidationError

from io_tui.core.mcp.config import MASK, HttpServer, McpSettings, StdioServer
from io_tui.core.run.settings import RunSettings

if TYPE_CHECKING:
    from io_tui.core.mcp.config import FoundServers
    from io_tui.core.mcp.connection import ServerSource
    from io_tui.core.store import Store

_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class RunOrigin(BaseModel):
    """What a run was started with: its ``RunSettings``, MCP servers included (secret-free)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    settings: RunSettings
    # the Agent Client Protocol session (``io-tui acp``) whose prompt started the run: the
    # session's runs, in order, are its turns, so ``session/load`` finds them in any process
    session: str | None = None
    # the W3C ``traceparent`` of the span the run nests under in a distributed trace: the span
    # that queued it, or the caller's ``TRACEPARENT`` (``telemetry.context``)
    trace: str | None = None

    @classmethod
    def at_start(
        cls,
        settings: RunSettings,
        servers: Mapping[str, ServerSource] | None = None,
        *,
        session: str | None = None,
    ) -> RunOrigin:
        """The record of a run started with ``settings`` and ``servers`` (default: the
        settings' own); servers that are not config tables (in-process ones) are left out."""
        chosen = settings.mcp.servers if servers is None else servers
        mcp = McpSettings(servers=without_secrets(chosen))
        return cls(settings=settings.updated(mcp=mcp), session=session)

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> RunOrigin | None:
        """The record of a run row, or None for a run from before records (or one that does
        not load: its resume falls back to the resuming process's settings)."""
        if data is None:
            return None
        try:
            return cls.model_validate(data)
        except ValidationError:
            return None

    def to_json(self) -> dict[str, Any]:
        # not mode="json": the config models mask env and header values there, and these hold
        # only variable names already
        data: dict[str, Any] = json.loads(json.dumps(self.model_dump(), default=str))
        return data

    @property
    def servers(self) -> dict[str, StdioServer | HttpServer]:
        return dict(self.settings.mcp.servers)

    def servers_here(
        self, current: Mapping[str, ServerSource], env: Mapping[str, str] | None = None
    ) -> dict[str, ServerSource]:
        """The recorded servers, ready to start in this process: a value whose variables are
        not set in ``env`` (default ``os.environ``) is taken from ``current``'s server of the
        same name when it has that key."""
        environ = os.environ if env is None else env
        return {
            name: _filled(server, current.get(name), environ)
            for name, server in self.settings.mcp.servers.items()
        }


def configured_servers(
    settings: RunSettings, workspace: Path | None = None, extra: Path | None = None
) -> FoundServers:
    """The MCP servers a run started in this process in ``workspace`` gets (and records),
    however it starts: the settings', the user's ``mcp.json``, the workspace's ``.mcp.json``
    and ``extra`` (``--mcp-config``) over them (``find_servers``). McpConfigError (a
    ValueError) for a file that does not load."""
    from io_tui.core.mcp.config import find_servers
    from io_tui.paths import config_dir

    return find_servers(
        settings.mcp.servers,
        config_dir(),
        workspace,
        extra,
        workspace_file=settings.mcp.workspace_file,
    )


def without_secrets(servers: Mapping[str, ServerSource]) -> dict[str, StdioServer | HttpServer]:
    """``servers`` as they may be stored: each env/header value that names no variable becomes
    ``${KEY}``; in-process servers (tests, embedders) are not config and are left out."""
    kept: dict[str, StdioServer | HttpServer] = {}
    for name, server in servers.items():
        if isinstance(server, StdioServer):
            kept[name] = server.model_copy(update={"env": _names(server.env)})
        elif isinstance(server, HttpServer):
            update = {"headers": _names(server.headers), "url": _without_password(server.url)}
            kept[name] = server.model_copy(update=update)
    return kept


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:{MASK}@{host}"))


def _names(values: Mapping[str, str]) -> dict[str, str]:
    return {key: value if _ENV_REF.search(value) else _ref(key) for key, value in values.items()}


def _ref(key: str) -> str:
    """``${KEY}``, the key made a variable name (a header ``X-Api-Key``: ``${X_Api_Key}``)."""
    name = re.sub(r"\W", "_", key, flags=re.ASCII)
    return f"${{{name if not name[:1].isdigit() else '_' + name}}}"


def _filled(
    server: StdioServer | HttpServer, here: ServerSource | None, env: Mapping[str, str]
) -> ServerSource:
    field = "env" if isinstance(server, StdioServer) else "headers"
    url = server.url if isinstance(server, HttpServer) else None
    recorded: dict[str, str] = getattr(server, field)
    theirs: dict[str, str] = getattr(here, field, {}) if type(here) is type(server) else {}
    values = {
        key: theirs[key] if key in theirs and not _all_set(value, env) else value
        for key, value in recorded.items()
    }
    update: dict[str, Any] = {field: values}
    if isinstance(here, HttpServer) and _without_password(here.url) == url:
        update["url"] = here.url  # with the password this process's config has
    return server.model_copy(update=update)


def _all_set(template: str, env: Mapping[str, str]) -> bool:
    return all(name in env for name in _ENV_REF.findall(template))


async def servers_to_resume(
    store: Store, run_id: int, current: Mapping[str, ServerSource]
) -> tuple[dict[str, ServerSource], str | None]:
    """The MCP servers to start for resuming ``run_id``: those it started with, or ``current``
    (this process's) for a run from before records; with one line to show when they are not
    ``current``'s, or when the run has no record."""
    row = await store.runs.get(run_id)
    if row is None:  # the resume itself says "no run"
        return {}, None
    origin = RunOrigin.from_json(row.origin)
    if origin is None:
        names = ", ".join(current) or "none"
        return dict(current), (
            f"run {run_id} has no record of the settings it started with (an older io-tui, or"
            f" a demo): resuming with this process's, MCP servers: {names}"
        )
    if origin.servers == without_secrets(current):
        return origin.servers_here(current), None
    names = ", ".join(origin.servers) or "none"
    return origin.servers_here(current), (
        f"resuming run {run_id} with the MCP servers it started with: {names}"
    )
