"""Hooks in Claude Code's shape: commands the operator (or a trusted workspace) configured for
a run's moments (``PreToolUse``, ``PostToolUse``, ``UserPromptSubmit``, ``Notification``,
``Stop``, ``SubagentStop``, ``PreCompact``, ``SessionStart``, ``SessionEnd``), each given the
moment as JSON on stdin and answering with its exit code (2 blocks) or JSON on stdout.

Why that shape: teams already have scripts for it. ``config`` holds the settings' form and the
workspace file's (``.claude/settings.json``), ``trust`` the digests of the workspace files the
operator approved (an unapproved file's hooks never run), ``runner`` one command's run (the
workspace's environment rules, a timeout that kills its process tree, redacted output) and
``moments`` what each moment sends and how its answers are read.

The package imports its modules on first use: the settings read ``config`` (pure pydantic),
and ``moments`` brings the workspace, the ledger and the providers with it.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from io_tui.core.hooks.config import HOOK_EVENTS, HookCommand, HookMatcher, HooksSettings
    from io_tui.core.hooks.moments import HOOK_LAYER, HookVerdict, RunHooks, load_run_hooks

_HOME = {  # name → the module that defines it, imported on first use
    **dict.fromkeys(("HOOK_EVENTS", "HookCommand", "HookMatcher", "HooksSettings"), "config"),
    **dict.fromkeys(("HOOK_LAYER", "HookVerdict", "RunHooks", "load_run_hooks"), "moments"),
}


def __getattr__(name: str) -> Any:
    """Load the submodule behind ``name`` when it is first asked for: importing the settings
    (``core.run.settings`` → ``hooks.config``) then loads neither the runner nor the moments."""
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_HOME[name]}"), name)


__all__ = [
    "HOOK_EVENTS",
    "HOOK_LAYER",
    "HookCommand",
    "HookMatcher",
    "HookVerdict",
    "HooksSettings",
    "RunHooks",
    "load_run_hooks",
]
