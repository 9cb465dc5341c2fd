"""Themes as validated data: ``themes/*.toml`` → ``textual.theme.Theme``.

A broken file is reported (returned as an error line for ``notify``), never fatal.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from textual.color import Color, ColorParseError
from textual.theme import Theme

from io_tui.paths import bundled_dir
from io_tui.ui.first_theme import DEFAULT_THEME as DEFAULT_THEME


class ThemeFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    dark: bool = True
    primary: str
    secondary: str | None = None
    accent: str | None = None
    warning: str | None = None
    error: str | None = None
    success: str | None = None
    foreground: str | None = None
    background: str | None = None
    surface: str | None = None
    panel: str | None = None
    boost: str | None = None
    variables: dict[str, str] = Field(default_factory=dict)

    @field_validator(
        "primary", "secondary", "accent", "warning", "error", "success",
        "foreground", "background", "surface", "panel", "boost",
    )  # fmt: skip
    @classmethod
    def _colour(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                Color.parse(value)
            except ColorParseError:
                raise ValueError(f"not a colour: {value!r}") from None
        return value

    def to_theme(self) -> Theme:
        return Theme(**self.model_dump())


def load_theme(path: Path) -> Theme:
    """One theme file; raises ValueError naming the file and the first problem."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{path.name}: {exc}") from None
    try:
        return ThemeFile.model_validate(data).to_theme()
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "file"
        raise ValueError(f"{path.name}: {where}: {err['msg']}") from None


def load_themes(*folders: Path) -> tuple[list[Theme], list[str]]:
    """Every ``*.toml`` in the bundled themes folder (and ``folders``): (themes, errors)."""
    themes: list[Theme] = []
    errors: list[str] = []
    for folder in (bundled_dir("themes"), *folders):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            try:
                themes.append(load_theme(path))
            except ValueError as exc:
                errors.append(str(exc))
    return themes, errors
