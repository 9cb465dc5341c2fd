"""run_command: argv validation, the exec gate, and what the model is told about the outcome."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from io_tui.core.authority.policy import Act
from io_tui.core.boundary.workspace import Workspace
from io_tui.core.ledger import ObsKind
from io_tui.core.tools.base import Gate, ToolContext, ToolError, ToolOutcome
from io_tui.core.tools.command import DEFAULT_TIMEOUT_S, RunCommand


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=Workspace(tmp_path), run_id=1, step=1, cap_chars=10_000)


async def call(ctx: ToolContext, **raw: Any) -> ToolOutcome:
    tool = RunCommand()
    return await tool.run(tool.parse(raw), ctx)


def test_a_string_argv_is_refused_with_an_explanation() -> None:
    with pytest.raises(ToolError) as info:
        RunCommand().parse({"argv": "pytest -q tests"})
    message = str(info.value)
    assert "argv must be a list of strings" in message
    assert '["pytest", "-q", "tests"]' in message
    assert "no shell" in message


@pytest.mark.parametrize(
    ("raw", "fragment"),
    [
        ({"argv": []}, "argv"),
        ({"argv": [""]}, "argv[0] must name a program"),
        ({"argv": ["ls", 3]}, "argv.1"),
        ({"argv": ["ls"], "timeout_s": 0}, "timeout_s"),
        ({"argv": ["ls"], "timeout_s": 601}, "timeout_s"),
        ({"argv": ["ls"], "shell": True}, "shell"),
    ],
)
def test_invalid_arguments(raw: dict[str, Any], fragment: str) -> None:
    with pytest.raises(ToolError, match="invalid arguments for run_command") as info:
        RunCommand().parse(raw)
    assert fragment in str(info.value)


def test_timeout_defaults_to_120_and_allows_600() -> None:
    assert RunCommand().parse({"argv": ["ls"]}).timeout_s == DEFAULT_TIMEOUT_S == 120
    assert RunCommand().parse({"argv": ["ls"], "timeout_s": 600}).timeout_s == 600


async def test_gate_checks_the_command_line_and_carries_the_argv(ctx: ToolContext) -> None:
    tool = RunCommand()
    argv = ["/usr/bin/python3", "-m", "pytest", "-k", "a b"]
    g = await tool.gate(tool.parse({"argv": argv}), ctx)
    # the program's basename, then its arguments quoted: rules match "python3" or "python3 -m*"
    assert g == Gate(Act.EXEC, "python3 -m pytest -k 'a b'", json.dumps(argv))
    assert json.loads(g.content) == argv


async def test_success_reports_exit_code_and_output(ctx: ToolContext) -> None:
    argv = [sys.executable, "-c", "print('hello')"]
    out = await call(ctx, argv=argv)
    lines = out.text.splitlines()
    assert lines[0].startswith("$ ") and "print" in lines[0]
    assert lines[1] == "exit code 0" and lines[3:] == ["hello"]
    assert lines[2].startswith(("[sandboxed", "[not sandboxed"))
    assert (out.kind, out.target) == (ObsKind.EXEC, shlex.join(argv))  # the key of a rerun
    assert {k: out.data[k] for k in ("exit_code", "timed_out")} == {
        "exit_code": 0,
        "timed_out": False,
    }
    assert out.data["sandboxed"] is lines[2].startswith("[sandboxed")
    assert not out.is_error


async def test_failure_is_marked_and_keeps_stderr(ctx: ToolContext) -> None:
    code = "import sys; sys.stderr.write('Traceback: boom\\n'); sys.exit(2)"
    out = await call(ctx, argv=[sys.executable, "-c", code])
    assert "exit code 2" in out.text and "Traceback: boom" in out.text
    assert out.is_error and out.data["exit_code"] == 2


async def test_timeout_is_reported_as_such(ctx: ToolContext) -> None:
    code = "import time; print('started', flush=True); time.sleep(30)"
    out = await call(ctx, argv=[sys.executable, "-c", code], timeout_s=1)
    assert "timed out after 1s" in out.text
    assert "started" in out.text
    assert out.is_error and out.data["timed_out"] is True


async def test_long_output_is_returned_whole(ctx: ToolContext) -> None:
    """Bounding is the run loop's job (ledger.bound_text); the tool must not cut the tail."""
    code = "print('\\n'.join(f'line {i}' for i in range(20000))); print('FINAL ERROR')"
    out = await call(ctx, argv=[sys.executable, "-c", code])
    assert out.text.rstrip().endswith("FINAL ERROR")
    assert "line 19999" in out.text and "line 0\n" in out.text


async def test_no_output_is_said(ctx: ToolContext) -> None:
    out = await call(ctx, argv=[sys.executable, "-c", "pass"])
    assert out.text.endswith("(no output)")


async def test_unknown_program_is_a_tool_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="command not found: no-such-prog-xyz"):
        await call(ctx, argv=["no-such-prog-xyz", "--help"])


async def test_shell_metacharacters_are_plain_arguments(ctx: ToolContext, tmp_path: Path) -> None:
    out = await call(
        ctx, argv=[sys.executable, "-c", "import sys; print(sys.argv[1:])", "a;b", ">f"]
    )
    assert "['a;b', '>f']" in out.text
    assert not (tmp_path / "f").exists()
