"""One validated settings object: the TOML config file, then ``IO_TUI_*`` environment variables.

The file lives at ``io-tui config path`` (``IO_TUI_CONFIG`` overrides it). Environment variables
win over the file; command-line flags win over both (applied by the CLI). API keys are never
settings: providers read them from the environment or the credentials file.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from io_tui.core.mcp.config import McpSettings
from io_tui.paths import config_file

ApproveMode = Literal["ask", "all", "deny", "defer"]
HarnessMode = Literal["process", "inline"]  # where the app's runs execute (ui.hosts)


class ConfigError(ValueError):
    """The config file or environment does not validate; the message names the field."""


class CacheSettings(BaseModel):
    """Prompt-cache prices per input token, relative to an uncached one; each unset field is
    the provider preset's (``io_tui.core.providers.presets``). ``[cache]`` in the file."""

    model_config = ConfigDict(extra="forbid")
    uncached: float | None = Field(default=None, ge=0)
    write: float | None = Field(default=None, ge=0)
    read: float | None = Field(default=None, ge=0)
    min_prefix_tokens: int | None = Field(default=None, ge=0)


class UISettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    theme: str = "io-dark"
    harness: HarnessMode = Field(
        default="process",
        description="where the app's runs execute: a worker process, or the app's own loop",
    )
    bell_on_ask: bool = True
    title_on_ask: bool = True
    letter_shortcuts: bool = Field(
        default=False,
        description="also decide approvals with y e a n d (the digits 1-5 always work)",
    )
    approval_arm_ms: int = Field(
        default=400,
        ge=0,
        le=10_000,
        description="an approval ignores decision keys this long after it is shown (and after"
        " every key pressed meanwhile)",
    )
    typing_quiet_ms: int = Field(
        default=600,
        ge=0,
        le=10_000,
        description="a key pressed this recently means the operator is typing: a new ask waits"
        " as a banner instead of opening its modal",
    )
    keys: dict[str, str] = Field(
        default_factory=dict, description="binding id → key, e.g. {'app.inbox' = 'ctrl+i'}"
    )


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="IO_TUI_", env_nested_delimiter="__", extra="forbid"
    )

    provider: str = "scripted"
    model: str | None = None
    base_url: str | None = None
    fallback_provider: str | None = None
    fallback_model: str | None = None
    store: Path | None = None
    policy: Path | None = None
    approve: ApproveMode = "ask"
    max_steps: int = Field(default=12, ge=1, le=10_000)
    token_budget: int | None = Field(default=None, ge=1)
    context_max_tokens: int = Field(default=24_000, ge=256)
    context_share: float = Field(default=0.5, gt=0, le=1)
    request_timeout_s: float = Field(default=120.0, gt=0)
    max_retries: int = Field(default=4, ge=0, le=20)
    ui: UISettings = Field(default_factory=UISettings)
    mcp: McpSettings = Field(default_factory=McpSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            env_settings,
            TomlConfigSettingsSource(settings_cls, toml_file=config_file()),
        )


def load_settings(**overrides: Any) -> Settings:
    """Load and validate settings, turning every failure into one readable ConfigError."""
    path = config_file()
    try:
        return Settings(**{k: v for k, v in overrides.items() if v is not None})
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"config ({path} or IO_TUI_* env): {where}: {err['msg']}") from None


def masked(settings: Settings) -> dict[str, Any]:
    """Settings as JSON for ``io-tui config show``. Holds no keys by construction."""
    return settings.model_dump(mode="json")
