"""run_command: an argv in the workspace, never a shell string (DESIGN §3.4, §3.7).

The policy checks the command line of what really runs (``command_line``): a bare program name
only when PATH finds it outside the workspace, a program inside the workspace as its own ``./``
path (``tools/ls`` is ``./tools/ls``, never ``ls``), and an interpreter's script from the
workspace as a ``./`` path too. A human approving it sees that line and the full argv as JSON.
Output comes back whole with the exit status first; the run loop bounds it with
``ledger.bound_text``, which keeps the tail where errors usually are.
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from pathlib import Path, PurePath
from typing import Any

from pydantic import Field, field_validator

from io_tui.core.authority.policy import INTERPRETERS, Act, script_index
from io_tui.core.ledger import ObsKind
from io_tui.core.tools.base import Gate, Tool, ToolArgs, ToolContext, ToolOutcome
from io_tui.core.workspace import Workspace, command_env

DEFAULT_TIMEOUT_S = 120.0
MAX_TIMEOUT_S = 600.0


def command_line(argv: list[str], workspace: Workspace | None = None) -> str:
    """What the exec policy matches: the program as ``program_name`` names it, then its
    arguments shell-quoted, an interpreter's workspace script as its ``./`` path.

    A slash-free pattern without spaces (``pytest``) matches the program alone; a pattern with a
    space (``git status*``) matches the whole line, so rules can name a subcommand.
    """
    if workspace is None:
        return shlex.join([PurePath(argv[0]).name or argv[0], *argv[1:]])
    program = program_name(argv, workspace)
    args = list(argv[1:])
    if INTERPRETERS.fullmatch(PurePath(program).name) and not program.startswith("./"):
        at = script_index(args)
        if at is not None:
            inside = _inside(workspace, args[at])
            if inside is not None:
                args[at] = inside
    return shlex.join([program, *args])


def _inside(workspace: Workspace, word: str) -> str | None:
    """``word`` as ``./rel`` when it names an existing file inside the workspace, else None."""
    path = Path(word) if Path(word).is_absolute() else workspace.root / word
    try:
        real = Path(os.path.realpath(path))
    except (OSError, ValueError):
        return None
    if not real.is_file() or not real.is_relative_to(workspace.root):
        return None
    return "./" + real.relative_to(workspace.root).as_posix()


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


def program_name(argv: list[str], workspace: Workspace) -> str:
    """The program as the policy names it: its bare name when that is what PATH finds outside
    the workspace (``python3``) or a system directory holds it (``/usr/bin/python3``), its
    ``./`` path when it lies inside the workspace (``tools/ls``, or a PATH entry in the
    workspace), else the path as given (``/tmp/x/ls`` is not ``ls``)."""
    given = argv[0]
    name = PurePath(given).name or given
    found = which(name, workspace)
    if "/" not in given:
        if found is None:
            return given  # it will not start: "command not found"
        return _inside(workspace, str(found)) or given
    inside = _inside(workspace, given)
    if inside is not None:
        return inside
    path = Path(given) if Path(given).is_absolute() else workspace.root / given
    if str(path.parent) in SYSTEM_BIN or (
        found is not None and os.path.realpath(found) == os.path.realpath(path)
    ):
        return name  # a system program, or the one PATH finds by its name
    return given


# where the system's own programs live: one of them named by its path is that program's name
SYSTEM_BIN = frozenset(
    {"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"}
)


def which(name: str, workspace: Workspace) -> Path | None:
    """The executable a command named ``name`` starts: the first on the commands' PATH, whose
    relative entries (``.``, ``bin``, an empty one) are taken from the workspace root, where
    commands run."""
    for entry in command_env(workspace.env_allow).get("PATH", os.defpath).split(os.pathsep):
        base = Path(entry or ".")
        candidate = (base if base.is_absolute() else workspace.root / base) / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


class RunCommand(Tool):
    name = "run_command"
    description = (
        "Run a program in the workspace root with an argv list (no shell), stdout and stderr "
        "merged. Answers with the exit code and the output. Killed after timeout_s seconds."
    )
    Args = RunCommandArgs

    async def gate(self, args: RunCommandArgs, ctx: ToolContext) -> Gate:
        line = await asyncio.to_thread(command_line, args.argv, ctx.workspace)
        return Gate(Act.EXEC, line, json.dumps(args.argv))

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
