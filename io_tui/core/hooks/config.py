"""Hooks as configured: io-tui's ``[hooks]`` table and a workspace's ``.claude/settings.json``,
both in Claude Code's form (an event's list of matchers, each with its commands).

Why Claude Code's form, names included: a ``.claude/settings.json`` a team already has works
unchanged, and io-tui's config takes the same keys (``[[hooks.PreToolUse]]`` with ``matcher``
and ``hooks = [{ type = "command", command = "…" }]``). A matcher is a regular expression over
the tool's name, io-tui's (``run_command``) or Claude Code's for the same tool (``Bash``).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

HOOK_EVENTS = (
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "Notification",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
)
HookEvent = Literal[
    "PreToolUse",
    "PostToolUse",
    "UserPromptSubmit",
    "Notification",
    "Stop",
    "SubagentStop",
    "PreCompact",
    "SessionStart",
    "SessionEnd",
]
WORKSPACE_HOOKS_FILE = Path(".claude") / "settings.json"
DEFAULT_TIMEOUT_S = 60.0
# io-tui's tools by the names Claude Code gives the same tools, for matchers written for it
CLAUDE_NAMES = {
    "run_command": "Bash",
    "write_file": "Write",
    "edit_file": "Edit",
    "read_file": "Read",
    "grep": "Grep",
    "glob": "Glob",
    "list_dir": "LS",
    "spawn_agent": "Task",
}


class HookCommand(BaseModel):
    model_config = ConfigDict(extra="ignore")
    type: Literal["command"] = "command"
    command: str = Field(min_length=1)
    timeout: float = Field(default=DEFAULT_TIMEOUT_S, gt=0, le=3600)


class HookMatcher(BaseModel):
    model_config = ConfigDict(extra="ignore")
    matcher: str = ""
    hooks: list[HookCommand] = Field(default_factory=list)

    @field_validator("matcher")
    @classmethod
    def _regex(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"matcher {value!r} is not a regular expression: {exc}") from None
        return value

    def matches(self, tool: str | None) -> bool:
        """Whether this matcher takes ``tool`` (None: an event with no tool, matched always)."""
        if tool is None or self.matcher in ("", "*"):
            return True
        names = (tool, CLAUDE_NAMES.get(tool, tool))
        return any(re.fullmatch(self.matcher, name) for name in names)


HooksSettings = dict[HookEvent, list[HookMatcher]]


class WorkspaceHooksError(ValueError):
    """A workspace's hooks file that does not load; the message names it."""


class _ClaudeSettings(BaseModel):
    model_config = ConfigDict(extra="ignore")
    hooks: dict[HookEvent, list[HookMatcher]] = Field(default_factory=dict)


def workspace_hooks(root: Path) -> tuple[HooksSettings, str] | None:
    """The hooks of ``root``'s ``.claude/settings.json`` and their digest (what the operator
    trusts), or None when it has none. WorkspaceHooksError when it does not load."""
    path = root / WORKSPACE_HOOKS_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkspaceHooksError(f"{path}: cannot read: {exc}") from None
    try:
        settings = _ClaudeSettings.model_validate(json.loads(text))
    except (ValueError, ValidationError) as exc:
        raise WorkspaceHooksError(f"{path}: not valid hook settings: {_first(exc)}") from None
    if not settings.hooks:
        return None
    return settings.hooks, digest(settings.hooks)


def digest(hooks: HooksSettings) -> str:
    """The sha256 of the hooks as they would run (their canonical JSON): what trust names."""
    data = {event: [m.model_dump() for m in matchers] for event, matchers in hooks.items()}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def _first(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        return f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"
    return str(exc).splitlines()[0]
