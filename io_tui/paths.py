"""Where io-tui keeps its files (platformdirs), each overridable by an environment variable."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import platformdirs

APP = "io-tui"


def config_dir() -> Path:
    return _config_dir(os.environ.get("IO_TUI_CONFIG_DIR"), *_home_env())


@functools.lru_cache(maxsize=8)
def _config_dir(given: str | None, *env: str | None) -> Path:
    """The folder, kept per environment (one ``Path`` for the same answer): every request
    checks the user's skills and instruction files in it."""
    return Path(given or _user_config_dir(*env))


def user_skills() -> Path:
    """The user's skill folder: ``config_dir() / "skills"``, one ``Path`` per environment."""
    return _user_skills(config_dir())


@functools.lru_cache(maxsize=8)
def _user_skills(config: Path) -> Path:
    return config / "skills"


def _home_env() -> tuple[str | None, ...]:
    """The variables platformdirs derives the user's folders from, on any platform."""
    get = os.environ.get
    return get("HOME"), get("XDG_CONFIG_HOME"), get("APPDATA"), get("USERPROFILE")


@functools.lru_cache(maxsize=8)
def _user_config_dir(*_env: str | None) -> str:
    """platformdirs' answer, kept per environment: every request checks the user's skills and
    instruction files, each time asking where they are."""
    return platformdirs.user_config_dir(APP)


def config_file() -> Path:
    return Path(os.environ.get("IO_TUI_CONFIG") or config_dir() / "config.toml")


def config_table() -> dict[str, Any]:
    """The config file's TOML, not validated: what the app reads of it before the settings (and
    pydantic) are loaded, the first frame's theme and the store its panes show. Empty where
    there is no file or it cannot be read: the settings' load, which follows, says why."""
    import tomllib  # (~3 ms) not for the commands that never read the file

    try:
        return tomllib.loads(config_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def default_store_path() -> Path:
    """``IO_TUI_STORE`` wins; otherwise the user data dir."""
    env = os.environ.get("IO_TUI_STORE")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir(APP)) / "io-tui.db"


def checkpoints_dir() -> Path:
    """Where each workspace's checkpoints are kept (a git object store per workspace, outside
    the workspace): ``IO_TUI_CHECKPOINTS_DIR`` wins; otherwise the user data dir."""
    env = os.environ.get("IO_TUI_CHECKPOINTS_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_data_dir(APP)) / "checkpoints"


def ui_state_file() -> Path:
    """What the TUI remembers between starts (the theme last chosen): ``IO_TUI_UI_STATE`` wins;
    otherwise the user state dir. Never the config file, which is the user's."""
    env = os.environ.get("IO_TUI_UI_STATE")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_state_dir(APP)) / "ui-state.json"


@functools.lru_cache(maxsize=8)
def bundled_dir(name: str) -> Path:
    """A bundled data folder (``themes``, ``skills``): the source tree's, else the wheel's copy.
    Kept per name: where the package is does not move while it runs."""
    source = Path(__file__).resolve().parent.parent / name
    if source.is_dir():
        return source
    return Path(__file__).resolve().parent / "_bundled" / name
