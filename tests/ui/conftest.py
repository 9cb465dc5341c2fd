"""UI fixtures: the real app from ``create_app``, a real store in a temp dir, the demo workspace
at a fixed path (so snapshots are deterministic), an approver that approves everything."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from io_tui.config import Settings
from io_tui.core.approvals import ApproveAll
from io_tui.ui.app import IoApp, create_app
from io_tui.ui.testing import prepare_demo_workspace

SNAPSHOT_WORKSPACE = Path("/tmp/io-tui-snapshots/textstats")
SIZE = (140, 44)


@pytest.fixture(autouse=True)
def _colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.fixture
def make_app(tmp_path: Path) -> Callable[..., IoApp]:
    def make(
        *, demo: bool = True, theme: str = "io-dark", approve: bool = True, **kw: object
    ) -> IoApp:
        settings = Settings(ui={"theme": theme, **kw.pop("ui", {})})  # type: ignore[arg-type]
        workspace = prepare_demo_workspace(SNAPSHOT_WORKSPACE) if demo else None
        return create_app(
            settings,
            tmp_path / "store.db",
            demo=demo,
            approver=ApproveAll() if approve else None,
            poll_interval=None,
            demo_workspace=workspace,
            **kw,  # type: ignore[arg-type]
        )

    return make


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if "NO_COLOR" in os.environ:
        os.environ.pop("NO_COLOR")
