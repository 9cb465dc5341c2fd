"""The app shows a store's runs before it loads the settings (``first_store_path``, read without
pydantic), then holds that store to the one the settings name (``store_path``): for every way
the store can be given, both find the same, or the app would end at its settings' load (which
hands ``store_path`` the settings it loaded, not to read the file again)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from io_tui.cli.common import first_store_path, store_path
from io_tui.config import load_settings


@pytest.mark.parametrize(
    ("config", "env", "flag"),
    [
        (None, {}, None),
        (None, {"io_tui_store": "low.db"}, None),  # no config file: the settings are not read
        ("store = 'kept.db'\n", {}, None),
        ("store = 'kept.db'\n", {"IO_TUI_STORE": "env.db"}, None),
        ("store = 'kept.db'\n", {"IO_TUI_STORE": ""}, None),  # set, even empty, it wins
        ("store = 'kept.db'\n", {"io_tui_store": "low.db"}, None),  # in any case of its name
        ("store = 'kept.db'\n", {"Io_Tui_Store": ""}, None),
        ("store = 'kept.db'\n", {"IO_TUI_STORE": "env.db"}, "flag.db"),
        ("store = ''\n", {}, None),
        ("[ui]\ntheme = 'io-light'\n", {}, None),
        # a URL without a password: one given there is put in this process's PGPASSWORD
        ("store = 'postgresql://u@127.0.0.1:5432/io'\n", {}, None),
    ],
)
def test_the_store_found_before_the_settings_is_the_one_they_name(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    config: str | None,
    env: dict[str, str],
    flag: str | None,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("IO_TUI_STORE", raising=False)
    monkeypatch.setenv("IO_TUI_CONFIG", str(tmp_path / "config.toml"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    if config is not None:
        (tmp_path / "config.toml").write_text(config)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    args = argparse.Namespace(store=flag)
    assert first_store_path(args) == store_path(args) == store_path(args, load_settings())
