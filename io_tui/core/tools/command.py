"""run_command: an argv in the workspace, never a shell string (DESIGN §3.4, §3.7).

The policy checks the program's name (``argv[0]``'s basename) and a human approving it sees the
full argv as JSON. Output comes back whole with the exit status first; the run loop bounds it with
``ledger.bound_text``, which keeps the tail where errors usually are.
"""

from __future__ import annotations

import json
import shlex
from pathlib import PurePath
from typing import Any

from pydantic import Field, field_validator

from io_tui.core.authority.policy import Act
from io_tui.core.ledger import ObsKind
from io_tui.core.tools.base import Gate, Tool, ToolArgs, ToolContext, ToolOutcome

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 600.0


def command_line(argv: list[str]) -> str:
    """What the exec policy matches: the program's basename, then its arguments, shell-quoted.

    A slash-free pattern without spaces (``pytest``) matches the program alone; a pattern with a
    space (``git status*``) matches the whole line, so rules can name a subcommand.
    """
    return shlex.join([program_name(argv), *argv[1:]])


class RunCommandArgs(ToolArgs):
    argv: list[str] = Field(
        min_length=1,
        description='The program and its arguments as a list, e.g. ["pytest", "-q", "tests"]. '
        "No shell is involved: no pipes, globs, redirects or && chains.",
    )
    timeout_s: float = Field(
        default=DEFAULT_TIMEOUT_S,
        gt=0,
        le=MAX_TIMEOUT_S,
        description=f"Seconds before the command is killed (default {DEFAULT_TIMEOUT_S:g}, "
        f"max {MAX_TIMEOUT_S:g}).",
    )

    @field_validator("argv", mode="before")
    @classmethod
    def _argv_is_a_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            raise ValueError(
                "argv must be a list of strings such as "
                f"{json.dumps(shlex.split(value) if _splittable(value) else [value])}, "
                "not one command string; there is no shell"
            )
        return value

    @field_validator("argv")
    @classmethod
    def _program_named(cls, value: list[str]) -> list[str]:
        if not value[0].strip():
            raise ValueError("argv[0] must name a program")
        return value


def _splittable(value: str) -> bool:
    try:
        shlex.split(value)
    except ValueError:
        return False
    return bool(value.strip())


def program_name(argv: list[str]) -> str:
    """What the policy matches: ``/usr/bin/python3`` and ``python3`` are both ``python3``."""
    return PurePath(argv[0]).name or argv[0]


class RunCommand(Tool):
    name = "run_command"
    description = (
        "Run a program in the workspace root with an argv list (no shell), stdout and stderr "
        "merged. Answers with the exit code and the output. Killed after timeout_s seconds."
    )
    Args = RunCommandArgs

    async def gate(self, args: RunCommandArgs, ctx: ToolContext) -> Gate:
        return Gate(Act.EXEC, command_line(args.argv), json.dumps(args.argv))

    async def run(self, args: RunCommandArgs, ctx: ToolContext) -> ToolOutcome:
        result = await ctx.workspace.exec(args.argv, args.timeout_s)
        if result.timed_out:
            status = f"timed out after {args.timeout_s:g}s; the process group was killed"
        else:
            status = f"exit code {result.exit_code}"
        output = result.output if result.output else "(no output)"
        line = shlex.join(args.argv)
        text = f"$ {line}\n{status}\n{output}"
        return ToolOutcome(  # the whole argv is the target: a rerun of it supersedes this one
            text,
            ObsKind.EXEC,
            line,
            is_error=result.timed_out or result.exit_code != 0,
            data={"exit_code": result.exit_code, "timed_out": result.timed_out},
        )
