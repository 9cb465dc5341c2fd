"""The bundled demo: a small Python project with a failing test, and the scripted model that fixes it."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from io_tui.core.authority.policy import Policy
from io_tui.core.contract import ContextBudget, TaskContract
from io_tui.core.providers.base import Provider

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "script.json"
POLICY = HERE / "policy.toml"
GOAL = "The test suite fails. Find the bug in textstats and fix it; keep the public API."
# Small on purpose: the inspector shows full, refreshed, superseded and elided entries.
DEMO_CONTEXT = ContextBudget(max_tokens=1_400)


def make_workspace(parent: Path | None = None) -> Path:
    """Copy the demo project into a fresh temp dir and return its path."""
    target = Path(tempfile.mkdtemp(prefix="io-tui-demo-", dir=parent)) / "textstats"
    shutil.copytree(HERE / "workspace", target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def demo_contract(workspace: Path) -> TaskContract:
    return TaskContract(
        goal=GOAL,
        workspace=workspace,
        verify=(sys.executable, "-m", "unittest", "-q"),
        max_steps=14,
        context=DEMO_CONTEXT,
    )


def demo_policy() -> Policy:
    return Policy.load(POLICY)


def demo_run(workspace: Path) -> tuple[TaskContract, Provider, Policy]:
    """The demo on ``workspace``: its contract, scripted model and policy, as the app hands them
    to a host (the harness knows nothing of the demo)."""
    from io_tui.core.providers.scripted import ScriptedProvider

    return demo_contract(workspace), ScriptedProvider.from_file(SCRIPT), demo_policy()
