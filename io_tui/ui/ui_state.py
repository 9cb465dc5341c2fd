"""What the TUI remembers between starts: the theme last chosen (``ctrl+t``, the palette).

A small JSON file (``paths.ui_state_file``), written atomically when the theme changes; the
user's config file is never rewritten. The theme is remembered with the config's theme at the
time it was chosen, so that editing the config's ``[ui] theme`` later still takes effect.
A file that cannot be read is ignored; one that cannot be written is reported, never fatal.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from io_tui.paths import ui_state_file


@dataclass(frozen=True, slots=True)
class UiState:
    theme: str | None = None
    config_theme: str | None = None  # the config's [ui] theme when ``theme`` was chosen

    def theme_for(self, configured: str) -> str:
        """The theme to start with: the one last chosen, unless the config changed since."""
        if self.theme and self.config_theme == configured:
            return self.theme
        return configured


def load(path: Path | None = None) -> UiState:
    try:
        data = json.loads((path or ui_state_file()).read_text())
    except (OSError, ValueError):
        return UiState()
    if not isinstance(data, dict):
        return UiState()
    theme, config_theme = data.get("theme"), data.get("config_theme")
    return UiState(
        theme if isinstance(theme, str) else None,
        config_theme if isinstance(config_theme, str) else None,
    )


def save(state: UiState, path: Path | None = None) -> None:
    """Write ``state`` atomically (a temp file beside it, then ``os.replace``)."""
    path = path or ui_state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps({"theme": state.theme, "config_theme": state.config_theme}, indent=2)
    fd, tmp = tempfile.mkstemp(prefix=".ui-state-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
