"""Exec rules match what really runs: a bare name is the program PATH finds outside the
workspace, a workspace program is its own ``./`` pattern, and an interpreter given a workspace
script is not allowed by the interpreter's rule alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from io_tui.core.authority.policy import Act, Effect, Layer, Policy, Rule
from io_tui.core.boundary.workspace import Workspace
from io_tui.core.tools.base import ToolContext
from io_tui.core.tools.command import RunCommand

ALLOW = Policy().with_layer(
    Layer(
        "project",
        (
            Rule(Act.EXEC, Effect.ALLOW, "ls"),
            Rule(Act.EXEC, Effect.ALLOW, "python3"),
            Rule(Act.EXEC, Effect.ALLOW, "sh"),
        ),
    )
)


def _script(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\necho pwned\n")
    path.chmod(0o755)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    root = tmp_path / "ws"
    _script(root / "tools" / "ls")
    _script(root / "tools" / "python3")
    _script(root / "bin" / "ls")
    (root / "tools" / "x.py").write_text("print('pwned')\n")
    return ToolContext(workspace=Workspace(root), run_id=1, step=1, cap_chars=10_000)


async def _target(ctx: ToolContext, argv: list[str]) -> str:
    tool = RunCommand()
    return (await tool.gate(tool.parse({"argv": argv}), ctx)).target


@pytest.mark.parametrize(
    ("argv", "line", "effect"),
    [
        (["ls", "-la"], "ls -la", Effect.ALLOW),
        (["tools/ls"], "./tools/ls", Effect.ASK),
        (["./tools/ls"], "./tools/ls", Effect.ASK),
        (["tools/../tools/ls", "x"], "./tools/ls x", Effect.ASK),
        (["tools/python3", "-c", "1"], "./tools/python3 -c 1", Effect.ASK),
        (["python3", "tools/x.py"], "python3 ./tools/x.py", Effect.ASK),
        (["python3", "-W", "ignore", "tools/x.py"], "python3 -W ignore ./tools/x.py", Effect.ASK),
        (["sh", "tools/ls"], "sh ./tools/ls", Effect.ASK),
        (["python3", "-m", "unittest"], "python3 -m unittest", Effect.ALLOW),
        (["python3", "-c", "print(1)"], "python3 -c 'print(1)'", Effect.ALLOW),
        (["/usr/bin/ls"], "ls", Effect.ALLOW),
    ],
)
async def test_the_line_names_what_runs(
    ctx: ToolContext, argv: list[str], line: str, effect: Effect
) -> None:
    target = await _target(ctx, argv)
    assert target == line
    assert ALLOW.explain(Act.EXEC, target).effect is effect


async def test_a_workspace_path_entry_makes_a_bare_name_the_workspace_program(
    ctx: ToolContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"bin{os.pathsep}{os.environ['PATH']}")  # relative: the workspace's
    target = await _target(ctx, ["ls"])
    assert target == "./bin/ls"
    assert ALLOW.explain(Act.EXEC, target).effect is Effect.ASK


async def test_a_program_outside_path_is_named_by_its_path(
    ctx: ToolContext, tmp_path: Path
) -> None:
    _script(tmp_path / "elsewhere" / "ls")
    target = await _target(ctx, [str(tmp_path / "elsewhere" / "ls")])
    assert target == str(tmp_path / "elsewhere" / "ls")
    assert ALLOW.explain(Act.EXEC, target).effect is Effect.ASK


def test_a_workspace_pattern_allows_only_that_program() -> None:
    policy = Policy().with_layer(Layer("p", (Rule(Act.EXEC, Effect.ALLOW, "./tools/ls"),)))
    assert policy.explain(Act.EXEC, "./tools/ls -la").effect is Effect.ALLOW
    assert policy.explain(Act.EXEC, "ls").effect is Effect.ASK
