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

from io_tui.core.authority.policy import INTERPRETERS, Act, Effect, Policy, script_index
from io_tui.core.boundary.sandbox import SandboxPlan, SandboxStatus, denials, plan, probe
from io_tui.core.boundary.workspace import ExecResult, Workspace
from io_tui.core.ledger import ObsKind
from io_tui.core.tools.base import Gate, Tool, ToolArgs, ToolContext, ToolError, ToolOutcome
from io_tui.paths import config_dir, default_store_path

SANDBOXED = "sandboxed"
NOT_SANDBOXED = "not sandboxed"
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
    found = workspace.find_program(name)
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


class RunCommand(Tool):
    name = "run_command"
    description = (
        "Run a program in the workspace root with an argv list (no shell), stdout and stderr "
        "merged. Answers with the exit code and the output. Killed after timeout_s seconds."
    )
    Args = RunCommandArgs

    async def gate(self, args: RunCommandArgs, ctx: ToolContext) -> Gate:
        await asyncio.to_thread(_sandbox_or_refuse, ctx.policy or Policy())  # never asked in vain
        line = await asyncio.to_thread(command_line, args.argv, ctx.workspace)
        return Gate(Act.EXEC, line, json.dumps(args.argv))

    async def run(self, args: RunCommandArgs, ctx: ToolContext) -> ToolOutcome:
        policy = ctx.policy or Policy()
        status = _sandbox_or_refuse(policy)
        box = sandbox_plan(ctx.workspace, policy) if status.available else None
        result = await ctx.workspace.exec(args.argv, args.timeout_s, sandbox=box)
        line = shlex.join(args.argv)
        text = f"$ {line}\n{_status(result, args.timeout_s, status)}\n{_output(result)}"
        data: dict[str, Any] = {
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "sandboxed": box is not None,
            "sandbox": status.mechanism if box is not None else status.reason,
        }
        refused = (
            denials(result.output, args.argv, box)
            if box is not None and result.exit_code != 0
            else []
        )
        if refused:
            data["denied"] = [d.to_json() for d in refused]
            text += "\n[sandbox] refused " + "; ".join(d.describe() for d in refused)
            rerun = ctx.escalate is not None and await ctx.escalate(ctx.call_id, args.argv, refused)
            data["rerun_outside_sandbox"] = rerun
            if rerun:
                result = await ctx.workspace.exec(args.argv, args.timeout_s)
                outside = SandboxStatus(False, "rerun outside it, approved by the operator")
                text += (
                    f"\n\n$ {line}  (outside the sandbox, approved by the operator)\n"
                    f"{_status(result, args.timeout_s, outside)}\n{_output(result)}"
                )
                data.update(exit_code=result.exit_code, timed_out=result.timed_out)
            else:
                text += (
                    ". It did not run outside the sandbox: only the operator can allow that"
                    " (a rerun outside the sandbox is its own decision)."
                )
        return ToolOutcome(  # the whole argv is the target: a rerun of it supersedes this one
            text,
            ObsKind.EXEC,
            line,
            is_error=result.timed_out or result.exit_code != 0,
            data=data,
        )


def _sandbox_or_refuse(policy: Policy) -> SandboxStatus:
    """Whether this policy's commands run sandboxed here; ToolError when the policy requires a
    sandbox ([sandbox] require = true) and there is none, before anyone is asked."""
    status = sandbox_status(policy)
    if not status.available and policy.sandbox.require:
        raise ToolError(
            "the policy requires a sandbox ([sandbox] require = true) and none is available"
            f" here: {status.reason}; the command did not run"
        )
    return status


def _status(result: ExecResult, timeout_s: float, sandbox: SandboxStatus) -> str:
    """The lines under the command: how it ended, then whether it ran sandboxed."""
    if result.timed_out:
        how = f"timed out after {timeout_s:g}s; the process group was killed"
    else:
        how = f"exit code {result.exit_code}"
    return f"{how}\n{sandbox_line(sandbox)}"


def sandbox_line(sandbox: SandboxStatus) -> str:
    """``[sandboxed: bubblewrap …]`` or ``[not sandboxed: why]``: the line a command's result
    carries under its exit status (the trace, the transcript and the inspector show it)."""
    if sandbox.available:
        return f"[{SANDBOXED} ({sandbox.mechanism}): writes only to the workspace and /tmp]"
    return f"[{NOT_SANDBOXED}: {sandbox.reason}]"


def _output(result: ExecResult) -> str:
    return result.output if result.output else "(no output)"


def sandbox_status(policy: Policy) -> SandboxStatus:
    """Whether this policy's commands run sandboxed here, and if not, why."""
    if not policy.sandbox.enabled:
        return SandboxStatus(False, "the policy turns the sandbox off ([sandbox] enabled = false)")
    return probe()


def sandbox_plan(workspace: Workspace, policy: Policy) -> SandboxPlan:
    """The sandbox of a command in ``workspace`` under ``policy``: the network only where the
    policy allows it (``[sandbox] network``, or ``net`` allowed by default)."""
    network = policy.sandbox.network or policy.defaults.get(Act.NET) is Effect.ALLOW
    own = (config_dir(), default_store_path().parent)
    return plan(workspace.root, network=network, extra_hidden=own)
