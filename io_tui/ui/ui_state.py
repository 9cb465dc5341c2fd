"""What the TUI remembers between starts: the theme last chosen (``ctrl+t``, the palette), and
what the new-run dialog last started a run with (provider, base URL, model, limits, workspace).

A small JSON file (``paths.ui_state_file``), written atomically when either changes; the user's
config file is never rewritten. The theme is remembered with the config's theme at the time it
was chosen, so that editing the config's ``[ui] theme`` later still takes effect.
A file that cannot be read is ignored; one that cannot be written is reported, never fatal.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from io_tui.paths import ui_state_file

# what the new-run dialog keeps of the last run it started (``NewRunRequest``'s fields)
NEW_RUN_FIELDS = (
    "provider",
    "base_url",
    "model",
    "workspace",
    "max_steps",
    "token_budget",
    "context_max_tokens",
    "max_output_tokens",
    "context_window",
)


@dataclass(frozen=True, slots=True)
class UiState:
    theme: str | None = None
    config_theme: str | None = None  # the config's [ui] theme when ``theme`` was chosen
    # the new-run dialog's last run: ``NEW_RUN_FIELDS`` that were set (str or int values)
    new_run: Mapping[str, Any] = field(default_factory=dict)

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
    new_run = data.get("new_run")
    kept = {
        name: value
        for name, value in (new_run.items() if isinstance(new_run, dict) else ())
        if name in NEW_RUN_FIELDS and isinstance(value, str | int) and not isinstance(value, bool)
    }
    return UiState(
        theme if isinstance(theme, str) else None,
        config_theme if isinstance(config_theme, str) else None,
        kept,
    )


def save(state: UiState, path: Path | None = None) -> None:
    """Write ``state`` atomically (a temp file beside it, then ``os.replace``)."""
    path = path or ui_state_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"theme": state.theme, "config_theme": state.config_theme}
    if state.new_run:
        data["new_run"] = dict(state.new_run)
    text = json.dumps(data, indent=2)
    fd, tmp = tempfile.mkstemp(prefix=".ui-state-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(text + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def changed(path: Path | None = None, **changes: Any) -> UiState:
    """The state as stored with ``changes`` (the other parts kept), written back."""
    state = dataclasses.replace(load(path), **changes)
    save(state, path)
    return state
