"""A run's hooks at each of its moments: what each moment sends a hook, and how its answers
are read (exit code 2 blocks; JSON on stdout decides), every run of a hook announced as a
``hook`` event (stored with the trace, exported as a span).

A ``PreToolUse`` decision (``permissionDecision`` allow, deny or ask, or exit code 2 for deny)
becomes a policy layer of its own, ``hook:PreToolUse``, holding one rule for the call's exact
act and target: the run's policy decides with it deny-first like any layer (a hook's deny or
ask wins over an allow; its allow answers what would otherwise be the act's default ask), and
the verdict names that layer wherever verdicts show (the approval modal, the audit, the
refusal the model reads).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from io_tui.core.authority.policy import Act, Effect, Layer, Rule
from io_tui.core.boundary.workspace import Workspace
from io_tui.core.hooks.config import (
    CLAUDE_NAMES,
    WORKSPACE_HOOKS_FILE,
    HookMatcher,
    HooksSettings,
    WorkspaceHooksError,
    workspace_hooks,
)
from io_tui.core.hooks.runner import HookRun, run_hook
from io_tui.core.hooks.trust import workspace_hooks_trusted

HOOK_LAYER = "hook:PreToolUse"
_EFFECTS = {"allow": Effect.ALLOW, "approve": Effect.ALLOW, "deny": Effect.DENY,
            "block": Effect.DENY, "ask": Effect.ASK}  # fmt: skip
_STRENGTH = {Effect.ALLOW: 1, Effect.ASK: 2, Effect.DENY: 3}
Announce = Callable[[HookRun, dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class HookVerdict:
    """What the ``PreToolUse`` hooks said of one call: the strongest answer, and why."""

    effect: Effect
    reason: str
    command: str

    def layer(self, act: Act, target: str) -> Layer:
        """The decision as a policy layer: one rule, this act on exactly this target."""
        return Layer(HOOK_LAYER, (Rule(act, self.effect, _literal(target)),))


def _literal(target: str) -> str:
    """``target`` as a glob pattern that matches only itself."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in target)


class RunHooks:
    """The hooks one run has, each with where it was configured; ``announce`` tells the run
    of each hook run (its ``hook`` event)."""

    def __init__(
        self,
        hooks: Mapping[str, list[tuple[HookMatcher, str]]],
        workspace: Workspace,
        session: str,
        announce: Announce,
    ) -> None:
        self.hooks = hooks
        self.workspace = workspace
        self.session = session
        self.announce = announce

    def has(self, event: str) -> bool:
        return bool(self.hooks.get(event))

    async def _run(
        self, event: str, tool: str | None, payload: dict[str, Any], extra: dict[str, Any]
    ) -> list[HookRun]:
        runs: list[HookRun] = []
        body = {
            "session_id": self.session,
            "transcript_path": "",
            "cwd": str(self.workspace.root),
            "hook_event_name": event,
            **payload,
        }
        for matcher, source in self.hooks.get(event, ()):
            if not matcher.matches(tool):
                continue
            for hook in matcher.hooks:
                done = await run_hook(self.workspace, hook, event, body, source)
                runs.append(done)
                self.announce(done, extra)
        return runs

    async def pre_tool_use(
        self, tool: str, arguments: Mapping[str, Any], call_id: str
    ) -> HookVerdict | None:
        payload = {"tool_name": tool, "tool_input": tool_input(tool, arguments),
                   "tool_use_id": call_id}  # fmt: skip
        verdict: HookVerdict | None = None
        for done in await self._run("PreToolUse", tool, payload, {"call_id": call_id}):
            said = _decision(done)
            if said is not None and (
                verdict is None or _STRENGTH[said.effect] > _STRENGTH[verdict.effect]
            ):
                verdict = said
        return verdict

    async def post_tool_use(
        self, tool: str, arguments: Mapping[str, Any], call_id: str, result: str, is_error: bool
    ) -> str | None:
        """What the hooks want the model told of the call (exit 2's stderr, a ``block``'s
        reason, ``additionalContext``), or None."""
        payload = {"tool_name": tool, "tool_input": tool_input(tool, arguments),
                   "tool_use_id": call_id,
                   "tool_response": {"output": result, "is_error": is_error}}  # fmt: skip
        notes = []
        for done in await self._run("PostToolUse", tool, payload, {"call_id": call_id}):
            answer = done.answer() or {}
            if done.blocked:
                notes.append(done.stderr.strip() or done.stdout.strip())
            elif answer.get("decision") == "block":
                notes.append(str(answer.get("reason") or "blocked"))
            context = _context(answer)
            if context:
                notes.append(context)
        return "\n".join(n for n in notes if n) or None

    async def user_prompt_submit(self, prompt: str) -> tuple[str | None, str | None]:
        """(why the prompt is blocked, or None; context the hooks add to it, or None)."""
        blocked: str | None = None
        context: list[str] = []
        for done in await self._run("UserPromptSubmit", None, {"prompt": prompt}, {}):
            answer = done.answer() or {}
            if done.blocked:
                blocked = done.stderr.strip() or "blocked by a UserPromptSubmit hook"
            elif answer.get("decision") == "block" or answer.get("continue") is False:
                blocked = str(answer.get("reason") or answer.get("stopReason") or "blocked")
            elif done.exit_code == 0:
                context.append(_context(answer) if answer else done.stdout.strip())
        return blocked, "\n".join(c for c in context if c) or None

    async def stop(self, sub_agent: bool) -> str | None:
        """Why the agent must go on rather than stop (exit 2, or ``decision: block``)."""
        event = "SubagentStop" if sub_agent else "Stop"
        for done in await self._run(event, None, {"stop_hook_active": False}, {}):
            answer = done.answer() or {}
            if done.blocked:
                return done.stderr.strip() or f"a {event} hook asks the agent to go on"
            if answer.get("decision") == "block":
                return str(answer.get("reason") or f"a {event} hook asks the agent to go on")
        return None

    async def notify(self, message: str) -> None:
        await self._run("Notification", None, {"message": message}, {})

    async def pre_compact(self, trigger: str) -> None:
        await self._run("PreCompact", None, {"trigger": trigger, "custom_instructions": ""}, {})

    async def session_start(self, source: str) -> str | None:
        """Context the hooks add for the model (stdout, or ``additionalContext``), or None."""
        context = []
        for done in await self._run("SessionStart", None, {"source": source}, {}):
            answer = done.answer()
            if done.exit_code == 0:
                context.append(_context(answer) if answer else done.stdout.strip())
        return "\n".join(c for c in context if c) or None

    async def session_end(self, reason: str) -> None:
        await self._run("SessionEnd", None, {"reason": reason}, {})


def tool_input(tool: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The call's arguments, with the keys a Claude Code hook reads for the same tool:
    ``command`` for a command line, ``file_path`` for a file."""
    data = dict(arguments)
    argv = arguments.get("argv")
    if CLAUDE_NAMES.get(tool) == "Bash" and isinstance(argv, list):
        data.setdefault("command", shlex.join(str(a) for a in argv))
    if isinstance(arguments.get("path"), str):
        data.setdefault("file_path", arguments["path"])
    return data


def _decision(done: HookRun) -> HookVerdict | None:
    if done.blocked:
        reason = done.stderr.strip() or done.stdout.strip() or "blocked by a PreToolUse hook"
        return HookVerdict(Effect.DENY, reason, done.command)
    answer = done.answer()
    if answer is None:
        return None
    specific = answer.get("hookSpecificOutput")
    said: Any = None
    why: Any = ""
    if isinstance(specific, dict) and "permissionDecision" in specific:
        said, why = specific.get("permissionDecision"), specific.get("permissionDecisionReason")
    elif "decision" in answer:
        said, why = answer.get("decision"), answer.get("reason")
    if answer.get("continue") is False:
        said, why = "deny", answer.get("stopReason") or why
    effect = _EFFECTS.get(str(said).lower()) if said is not None else None
    if effect is None:
        return None
    return HookVerdict(effect, str(why or f"{effect.value} by a PreToolUse hook"), done.command)


def _context(answer: Mapping[str, Any] | None) -> str:
    specific = (answer or {}).get("hookSpecificOutput")
    if isinstance(specific, dict) and isinstance(specific.get("additionalContext"), str):
        return str(specific["additionalContext"])
    return ""


def load_run_hooks(
    configured: HooksSettings,
    workspace: Workspace,
    session: str,
    announce: Announce,
) -> tuple[RunHooks | None, list[str]]:
    """The hooks a run in ``workspace`` has: the settings' (``configured``) and, when the
    operator trusts its current content, the workspace's ``.claude/settings.json``; with the
    lines to tell the run (an untrusted or broken workspace file)."""
    merged: dict[str, list[tuple[HookMatcher, str]]] = {}
    for event, matchers in configured.items():
        merged.setdefault(event, []).extend((m, "config") for m in matchers)
    notices: list[str] = []
    root = workspace.root
    try:
        found = workspace_hooks(root)
    except WorkspaceHooksError as exc:
        found = None
        notices.append(f"io-tui: workspace hooks not run: {exc}")
    if found is not None:
        hooks, digest = found
        if workspace_hooks_trusted(root, digest):
            for event, matchers in hooks.items():
                merged.setdefault(event, []).extend(
                    (m, str(WORKSPACE_HOOKS_FILE)) for m in matchers
                )
        else:
            notices.append(
                f"io-tui: {Path(root, WORKSPACE_HOOKS_FILE)} has hooks that are not trusted, so they"
                f" do not run; review them, then: io-tui hooks trust -w {root}"
            )
    if not any(merged.values()):
        return None, notices
    return RunHooks(merged, workspace, session, announce), notices
