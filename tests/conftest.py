"""Shared fixtures: a real SQLite store in a temp dir, a small workspace, scripted providers."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from io_tui.core.store import Store

pytest_plugins = ["pg_cluster"]  # a PostgreSQL server for the store's tests (tests/support)

# Times on screen (inbox, audit, memory editor) are local: pin the zone so snapshots agree anywhere.
os.environ["TZ"] = "UTC"
time.tzset()


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the user's real config, store or UI state."""
    monkeypatch.setenv("IO_TUI_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("IO_TUI_STORE", str(tmp_path / "default-store.db"))
    monkeypatch.setenv("IO_TUI_UI_STATE", str(tmp_path / "ui-state.json"))
    monkeypatch.delenv("IO_TUI_CONFIG", raising=False)


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
async def store(store_path: Path) -> AsyncIterator[Store]:
    opened = await Store.open(store_path)
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("def parse(x):\n    return a\n")
    (root / "README.md").write_text("# demo\n")
    (root / ".env").write_text("SECRET=1\n")
    return root


@pytest.fixture
def write_script(tmp_path: Path):
    """Write a scripted-provider JSON file from a list of turns; returns its path."""

    def write(turns: list[dict[str, Any]], **extra: Any) -> Path:
        path = tmp_path / f"script-{len(list(tmp_path.glob('script-*.json')))}.json"
        path.write_text(json.dumps({"model": "scripted", "turns": turns, **extra}))
        return path

    return write
