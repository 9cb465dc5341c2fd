"""One validated settings object: the TOML config file, then ``IO_TUI_*`` environment variables.

The file lives at ``io-tui config path`` (``IO_TUI_CONFIG`` overrides it). Environment variables
win over the file; command-line flags win over both (applied by the CLI). API keys are never
settings: providers read them from the environment or the credentials file.
"""

from __future__ import annotations

import stat
import tomllib
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from io_tui.core.run.settings import RunSettings
from io_tui.core.telemetry.config import OtelSettings
from io_tui.paths import config_file

ApproveMode = Literal["ask", "all", "deny", "defer"]
HarnessMode = Literal["process", "inline"]  # where the app's runs execute (ui.hosts)


class ConfigError(ValueError):
    """The config file or environment does not validate; the message names the field."""


class UISettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    theme: str = "io-dark"
    harness: HarnessMode = Field(
        default="process",
        description="where the app's runs execute: a worker process, or the app's own loop",
    )
    bell_on_ask: bool = True
    notify_on_ask: Literal["auto", "osc9", "osc777", "bell", "off"] = Field(
        default="auto",
        description="a desktop notification by escape sequence when a run asks (auto: the"
        " form this terminal shows; bell: the bell alone; off: nothing, the bell included)",
    )
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


class Settings(BaseSettings, RunSettings):
    """The core's ``RunSettings`` plus the app's own: the store, how asks are answered, the UI."""

    model_config = SettingsConfigDict(
        env_prefix="IO_TUI_", env_nested_delimiter="__", extra="forbid"
    )

    store: str | None = None  # a SQLite file's path or a postgresql:// URL
    approve: ApproveMode = "ask"
    ui: UISettings = Field(default_factory=UISettings)
    otel: OtelSettings = Field(default_factory=OtelSettings)

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
        mode = path.stat().st_mode
    except OSError:
        mode = None  # no file: the defaults
    if mode is not None and not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise ConfigError(f"{path}: the config file is {kind}")
    try:
        settings = Settings(**{k: v for k, v in overrides.items() if v is not None})
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (undecodable byte at offset {exc.start})"
        ) from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc.strerror or exc}") from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"config ({path} or IO_TUI_* env): {where}: {err['msg']}") from None
    # [otel] as the standard variables, where unset: this process's runs and the processes it
    # starts (the harness worker) export as the config says (``core.telemetry.config``)
    settings.otel.export_to()
    return settings


# ``io-tui config show`` lists the settings in this order (the core's fields come first in the
# model, which inherits them)
SHOWN = (
    *("provider", "model", "base_url", "fallback_provider", "fallback_model", "store", "policy"),
    *("approve", "max_steps", "token_budget", "context_max_tokens", "context_share"),
    *("request_timeout_s", "max_retries", "max_output_tokens", "context_window"),
    *("ui", "mcp", "hooks", "cache", "run", "otel", "checkpoints"),
)


def masked(settings: Settings) -> dict[str, Any]:
    """Settings as JSON for ``io-tui config show``. Holds no keys by construction."""
    data = settings.model_dump(mode="json")
    return {key: data[key] for key in sorted(data, key=SHOWN.index)}
