"""Shared fixtures: a real SQLite store in a temp dir, a small workspace, scripted providers.

``make test`` runs the suite on several pytest-xdist workers (``-n auto --dist loadgroup``): each
worker is its own process with its own ``tmp_path`` root, environment and module state, and the
tests are dealt out among them in any order. So a test must not share anything outside its
``tmp_path`` with a test that may run at the same moment in another worker:

- Files: write under ``tmp_path`` (or ``tmp_path_factory`` for a session fixture). A test that
  needs a *fixed* path (a snapshot that shows it) declares it with ``@pytest.mark.fixed_paths``,
  which puts it in the ``xdist_group`` ``FIXED_PATHS``: every test of one group runs on one
  worker, one after another. A snapshot test of the app on the demo workspace (``snap_compare`` with
  ``demo_workspace_path``, which is then the fixed ``SNAPSHOT_WORKSPACE`` the picture shows) is
  put in that group here (``pytest_collection_modifyitems``); the other snapshot tests run on
  any worker.
- Ports: bind port 0 (``mcp_support.free_port``), never a fixed number.
- Processes: find your own by a marker of your own (``mcp_support.new_mark``), never by name
  (tests that cannot, like ``tests/test_bad_input.py``, form an ``xdist_group`` of their own);
  tmux servers get a socket named after the worker's pid (``tmux -L io-tui-e2e-<pid>``).
- Time: a wait gives up after a generous limit (tens of seconds: two workers and their
  processes share the cores) and returns as soon as its condition holds.
- Environment: ``monkeypatch.setenv`` only (``_isolated_dirs`` below points the config, store
  and UI state at ``tmp_path``); the user's real dirs are never touched.
- A singleton service (a database server, say) is a session-scoped fixture, so one per worker:
  put its data under ``tmp_path_factory`` and let the kernel pick its port, or, if it must be
  shared, key what each worker creates in it by ``worker_id`` (pytest-xdist's fixture: ``gw0``,
  ``gw1``..., ``master`` without xdist), e.g. one database per worker.

``-n 0`` runs it all in one process, as before; ``--snapshot-update`` with ``-n 0`` also deletes
snapshots no test uses any more (syrupy does that only without xdist).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from io_tui.core.store import Store

pytest_plugins = ["pg_cluster"]  # a PostgreSQL server for the store's tests (tests/support)

# Times on screen (inbox, audit, memory editor) are local: pin the zone so snapshots agree anywhere.
os.environ["TZ"] = "UTC"
time.tzset()

# Property tests are judged on what they find, not how fast: an example's own few milliseconds
# can stretch past Hypothesis's 200 ms deadline whenever the loaded cores stall this worker.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


FIXED_PATHS = "fixed-paths"
"""The xdist group of the tests that use a fixed path (see above)."""


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        fixtures = getattr(item, "fixturenames", ())
        on_demo = "snap_compare" in fixtures and "demo_workspace_path" in fixtures
        if on_demo or item.get_closest_marker("fixed_paths"):
            item.add_marker(pytest.mark.xdist_group(FIXED_PATHS))


@pytest.fixture(autouse=True)
def _isolated_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reads or writes the user's real config, store or UI state."""
    monkeypatch.setenv("IO_TUI_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("IO_TUI_STORE", str(tmp_path / "default-store.db"))
    monkeypatch.setenv("IO_TUI_UI_STATE", str(tmp_path / "ui-state.json"))
    monkeypatch.setenv("IO_TUI_CHECKPOINTS_DIR", str(tmp_path / "checkpoints"))
    monkeypatch.delenv("IO_TUI_CONFIG", raising=False)
    # a run waits for its MCP servers however loaded the machine (tests of not waiting set 0)
    monkeypatch.setenv("IO_TUI_MCP__READY_WAIT_S", "120")


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
