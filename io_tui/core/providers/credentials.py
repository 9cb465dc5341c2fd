"""API keys from a credentials file, for users who keep them out of their shell environment.

``credentials.toml`` in the config dir (``IO_TUI_CREDENTIALS`` overrides the path) maps the same
variable names the environment would use to their values::

    OPENAI_API_KEY = "sk-..."
    ANTHROPIC_API_KEY = "sk-ant-..."

The file must be readable by its owner only (mode 0600): a looser file is refused with the
``chmod`` that fixes it, never silently used. The environment wins over the file.
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

from io_tui.core.providers.base import ProviderConfigError
from io_tui.paths import config_dir


def credentials_path() -> Path:
    return Path(os.environ.get("IO_TUI_CREDENTIALS") or config_dir() / "credentials.toml")


def read_credential(name: str, path: Path | None = None) -> str | None:
    """The value stored under ``name``, or None when the file or the entry is absent."""
    path = path or credentials_path()
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ProviderConfigError(f"cannot read credentials file {path}: {exc.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ProviderConfigError(
            f"credentials file {path} is readable by others (mode {stat.S_IMODE(mode):o});"
            f" run: chmod 600 {path}"
        )
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        # The parser's message may quote the file, which holds keys: name only the kind of fault.
        raise ProviderConfigError(
            f"credentials file {path} cannot be read as TOML ({type(exc).__name__})"
        ) from None
    value = data.get(name)
    return value if isinstance(value, str) and value else None
