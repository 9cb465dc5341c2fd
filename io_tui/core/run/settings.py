"""The settings the core builds runs from: the provider and its fallback, the policy file, a
run's limits, prompt-cache prices, MCP servers. Validated here; where they come from (the TOML
file, ``IO_TUI_*`` variables, flags) is the app's business: its config loader's ``Settings`` is a
``RunSettings`` plus the app's own.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from io_tui.core.hooks.config import HookEvent, HookMatcher
from io_tui.core.mcp.config import McpSettings, client_servers

if TYPE_CHECKING:
    from io_tui.core.authority.policy import Policy
    from io_tui.core.contract import CheckpointLimits


class CacheSettings(BaseModel):
    """Prompt-cache prices per input token, relative to an uncached one; each unset field is
    the provider preset's (``io_tui.core.providers.presets``). ``[cache]`` in the file."""

    model_config = ConfigDict(extra="forbid")
    uncached: float | None = Field(default=None, ge=0)
    write: float | None = Field(default=None, ge=0)
    read: float | None = Field(default=None, ge=0)
    min_prefix_tokens: int | None = Field(default=None, ge=0)


class CommandSettings(BaseModel):
    """``[run]`` in the file: what the commands a run starts see of the environment."""

    model_config = ConfigDict(extra="forbid")
    # variables passed besides the harmless defaults (``workspace.ENV_ALLOW``); ``NAME_*`` a prefix
    env_allow: list[str] = Field(default_factory=list)

    @field_validator("env_allow")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name or "=" in name or "\0" in name or "*" in name[:-1]:
                raise ValueError(
                    f"{name!r} is not a variable name (a name, or a prefix ending in '*')"
                )
        return value


class CheckpointSettings(BaseModel):
    """``[checkpoints]`` in the file: a run's workspace checkpoints (``core/checkpoints``) and
    the pruning policy (``contract.CheckpointLimits``)."""

    model_config = ConfigDict(extra="forbid")
    enabled: bool = True
    max_file_bytes: int = Field(default=5_000_000, ge=0)
    ignored_dir_files: int = Field(default=2_000, ge=0)
    ignored_dir_bytes: int = Field(default=50_000_000, ge=0)
    keep_runs: int = Field(default=20, ge=0)
    keep_days: float = Field(default=14.0, ge=0)

    def limits(self) -> CheckpointLimits:
        from io_tui.core.contract import CheckpointLimits  # on use: settings load light

        return CheckpointLimits(**self.model_dump())


class RunSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    provider: str = "scripted"
    model: str | None = None
    base_url: str | None = None
    fallback_provider: str | None = None
    fallback_model: str | None = None
    policy: Path | None = None
    max_steps: int = Field(default=12, ge=1, le=10_000)
    token_budget: int | None = Field(default=None, ge=1)
    context_max_tokens: int = Field(default=24_000, ge=256)
    context_share: float = Field(default=0.5, gt=0, le=1)
    request_timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=20)
    # the longest answer a request asks for; None: the preset's and model's (providers.presets)
    max_output_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    # the model's context window (prompt plus answer); None: the model table's, or the server's
    # own report (llama.cpp's /props). Set, it wins over both (providers.presets.make_provider)
    context_window: int | None = Field(default=None, ge=1, le=100_000_000)
    mcp: McpSettings = Field(default_factory=McpSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    run: CommandSettings = Field(default_factory=CommandSettings)
    # ``[[hooks.PreToolUse]]`` …: Claude Code's hooks, in its form (``core/hooks``)
    hooks: dict[HookEvent, list[HookMatcher]] = Field(default_factory=dict)
    checkpoints: CheckpointSettings = Field(default_factory=CheckpointSettings)

    @model_validator(mode="before")
    @classmethod
    def _client_servers(cls, data: Any) -> Any:
        """``[mcpServers.NAME]`` (other clients' shape) joins ``[mcp.servers]``."""
        if not isinstance(data, dict) or "mcpServers" not in data:
            return data
        data = dict(data)
        extra = client_servers(data.pop("mcpServers"), source="config")
        mcp = data.get("mcp")
        mcp = dict(mcp) if isinstance(mcp, dict) else {}
        mcp["servers"] = {**(mcp.get("servers") or {}), **extra}
        return {**data, "mcp": mcp}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunSettings:
        """The run settings within ``data`` (the app's settings as JSON: its own keys are left
        out)."""
        return cls.model_validate({k: v for k, v in data.items() if k in cls.model_fields})

    def updated(self, **changes: Any) -> RunSettings:
        """A validated copy with ``changes``; ValueError naming the field that does not validate."""
        data = self.model_dump(include=set(RunSettings.model_fields))
        try:
            return RunSettings.model_validate({**data, **changes})
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise ValueError(f"settings: {where}: {err['msg']}") from None


def policy_for(settings: RunSettings) -> Policy:
    """The settings' policy file, or the defaults; ValueError when the file does not load."""
    from io_tui.core.authority.policy import Policy, PolicyError  # loading settings stays light

    if settings.policy is None:
        return Policy()
    try:
        return Policy.load(settings.policy)
    except PolicyError as exc:
        raise ValueError(str(exc)) from None
