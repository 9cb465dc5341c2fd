"""The theme the first frame is drawn in, found before the settings (and pydantic) are loaded.

The CLI's app paints its first frame before it imports the settings and the core, and that frame
must already be in the theme the user will see, or the screen would change theme once the
settings load. This reads where the theme is configured as ``config.Settings`` does, cheaply:
``IO_TUI_UI__THEME`` (or the ``theme`` of ``IO_TUI_UI``'s JSON), else the config file's
``[ui] theme``. What it cannot read counts as unset: the settings' load reports it.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from typing import Any

from textual.theme import Theme

from io_tui.paths import bundled_dir, config_table

DEFAULT_THEME = "io-dark"
THEME_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")


def configured_theme() -> str:
    """The ``[ui] theme`` the settings will hold (pydantic-settings reads the environment
    before the config file, and its names without regard to case)."""
    variables = {name.upper(): value for name, value in os.environ.items()}
    if "IO_TUI_UI__THEME" in variables:
        return variables["IO_TUI_UI__THEME"]
    theme = _theme_of(_json(variables.get("IO_TUI_UI")))
    if theme is None:
        theme = _theme_of(config_table().get("ui"))
    return theme or DEFAULT_THEME


def bundled_theme(name: str) -> Theme | None:
    """The bundled theme file of ``name``, read but not validated (``themes.load_themes``
    validates every theme file once the settings are loaded); None if there is none."""
    if not THEME_NAME.fullmatch(name):
        return None
    try:
        data = tomllib.loads((bundled_dir("themes") / f"{name}.toml").read_text(encoding="utf-8"))
        return Theme(**data)
    except (OSError, ValueError, TypeError):
        return None


def _theme_of(ui: Any) -> str | None:
    theme = ui.get("theme") if isinstance(ui, dict) else None
    return theme if isinstance(theme, str) else None


def _json(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None
