"""UI fixtures: the real app from ``create_app``, a real store in a temp dir, the demo workspace
at a fixed path (so snapshots are deterministic), an approver that approves everything."""

from __future__ import annotations

import dataclasses
import fcntl
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_textual_snapshot
from svg_canonical import canonical_svg

from io_tui.config import Settings
from io_tui.core.authority.approvals import ApproveAll
from io_tui.ui.app import IoApp, create_app
from io_tui.ui.testing import prepare_demo_workspace

# Compare pictures, not Rich's style numbering (see svg_canonical).
pytest_textual_snapshot.normalize_svg = canonical_svg

SNAPSHOT_WORKSPACE = Path("/tmp/io-tui-snapshots/textstats")
SIZE = (140, 44)


@pytest.fixture(autouse=True)
def _colour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.fixture(autouse=True)
def _steady_test_timings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo really runs its tests; unittest's "Ran 5 tests in 0.003s" is the one clock on
    screen that the frozen clock cannot reach, so it is frozen here."""
    from io_tui.core.boundary.workspace import ExecResult, Workspace

    real_exec = Workspace.exec

    async def exec_with_steady_timing(
        self: Workspace, argv: Any, timeout_s: float, **options: Any
    ) -> ExecResult:
        result = await real_exec(self, argv, timeout_s, **options)
        steady = re.sub(r"(Ran \d+ tests?) in \d+\.\d+s", r"\1 in 0.001s", result.output)
        return dataclasses.replace(result, output=steady)

    monkeypatch.setattr(Workspace, "exec", exec_with_steady_timing)


@pytest.fixture(autouse=True)
def _steady_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether a command runs sandboxed depends on the machine (bubblewrap, user namespaces), and
    the screens say which; the app's tests pin it, so every machine draws the same screens. The
    sandbox itself is checked in tests/core/test_sandbox.py and tests/hostile."""
    from io_tui.core.boundary.sandbox import SandboxStatus
    from io_tui.core.tools import command

    steady = SandboxStatus(False, "the app's tests run commands unsandboxed, for steady screens")
    monkeypatch.setattr(command, "probe", lambda: steady)


@pytest.fixture(autouse=True)
def _steady_verify_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """The demo verifies with ``sys.executable``, whose path (and so the contract's token count)
    depends on where the checkout lives; the snapshots name ``python3`` from PATH instead."""
    from io_tui import demo

    real_contract = demo.demo_contract

    def contract_with_steady_python(workspace: Path) -> Any:
        contract = real_contract(workspace)
        return dataclasses.replace(contract, verify=("python3", "-m", "unittest", "-q"))

    monkeypatch.setattr(demo, "demo_contract", contract_with_steady_python)


@pytest.fixture(autouse=True)
def _toasts_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    """A toast without its own timeout lasts ``NOTIFICATION_TIMEOUT`` (5 s) of the wall clock, the
    one clock the fake cannot stop; on a loaded machine a test reached its check after the toast
    had gone. Tests look at toasts, never at how long they last: here they stay."""
    from textual.app import App

    monkeypatch.setattr(App, "NOTIFICATION_TIMEOUT", 3600)


class FakeClock:
    """The clock of elapsed times on screen (``ui.state.clock``), moved on by hand."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """Elapsed times on screen stand still unless a test moves them (``clock.advance``)."""
    from io_tui.ui import state

    fake = FakeClock()
    monkeypatch.setattr(state, "clock", fake)
    return fake


@pytest.fixture
def _snapshot_workspace_lock() -> Iterator[None]:
    """The demo's workspace is at one fixed path (snapshots show it), shared by every checkout
    on the machine: a test that uses it holds this lock, so that two test sessions running at
    once do not replace it under each other's runs. (Within one session, every snapshot test
    runs on the same xdist worker: see ``tests/conftest.py``.)"""
    SNAPSHOT_WORKSPACE.parent.mkdir(parents=True, exist_ok=True)
    with open(SNAPSHOT_WORKSPACE.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture
def demo_workspace_path(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """Where ``make_app`` copies the demo: the fixed path for a snapshot test (the picture shows
    it), the test's own temp dir for any other, so that those run on any xdist worker."""
    if "snap_compare" in request.fixturenames:
        request.getfixturevalue("_snapshot_workspace_lock")
        return SNAPSHOT_WORKSPACE
    return tmp_path / "demo-workspace" / "textstats"


@pytest.fixture
def make_app(tmp_path: Path, demo_workspace_path: Path) -> Callable[..., IoApp]:
    def make(
        *, demo: bool = True, theme: str = "io-dark", approve: bool = True, **kw: object
    ) -> IoApp:
        settings = Settings(ui={"theme": theme, **kw.pop("ui", {})})  # type: ignore[arg-type]
        workspace = prepare_demo_workspace(demo_workspace_path) if demo else None
        kw.setdefault("harness", "inline")  # in the test's loop: deterministic snapshots
        return create_app(
            settings,
            kw.pop("store", tmp_path / "store.db"),  # type: ignore[arg-type]
            demo=demo,
            approver=kw.pop("approver", ApproveAll() if approve else None),  # type: ignore[arg-type]
            poll_interval=None,
            demo_workspace=workspace,
            **kw,  # type: ignore[arg-type]
        )

    return make


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if "NO_COLOR" in os.environ:
        os.environ.pop("NO_COLOR")
