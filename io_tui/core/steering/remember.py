"""Remembering a rule from an approval (DESIGN §3.4): what the remember dialog offers and shows.
No Textual.

- ``suggest_pattern``: the pattern a remember rule starts from — an exec's exact command line
  (never the bare program, which allows every command it runs), a write's folder glob.
- ``grant_text`` / ``command_examples``: what a pattern allows, in words, and the wider exec
  patterns with what each would allow (every example matches the request it is shown for).
- ``preview_matches`` / ``blast_radius``: every earlier request in the store a candidate rule
  would have allowed, under exactly the matching the policy uses (``Rule.matches``) and the
  rule's scope, and how many that is (in how many runs; how many of them a human denied).
- ``validate_pattern``; ``SCOPES`` and their labels.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from io_tui.core.authority.approvals import ApprovalRequest, DecisionKind, RememberRule, RuleScope
from io_tui.core.authority.policy import Act, Effect, Rule
from io_tui.core.store import ApprovalRecord

SCOPES: tuple[RuleScope, ...] = ("run", "workspace", "global")
SCOPE_LABELS: dict[str, str] = {
    "run": "this run",
    "workspace": "this workspace",
    "global": "everywhere",
}


def suggest_pattern(request: ApprovalRequest) -> str:
    """The pattern a remember rule starts from: the narrowest that still names the request.

    An exec gets its exact command line (``git status --short``, glob characters escaped), so the
    rule allows that command and nothing else; an MCP tool (``mcp__server__tool``) its exact name.
    A path act gets its folder's glob (``src/app.py`` → ``src/*``; a file at the root keeps its
    name, which as a slash-free pattern matches that basename anywhere).
    """
    target = request.target.replace("\\", "/")
    if request.act is Act.EXEC:
        return glob_escape(request.target)
    parent = PurePosixPath(target).parent
    if str(parent) in ("", "."):
        return target
    return f"{parent}/*"


_GLOB_CHARS = re.compile(r"([*?[])")
_ESCAPED = re.compile(r"\[([*?[])\]")


def glob_escape(text: str) -> str:
    """``text`` as a pattern that matches exactly ``text`` (``*``, ``?``, ``[`` bracketed)."""
    return _GLOB_CHARS.sub(r"[\1]", text)


def _has_wildcard(pattern: str) -> bool:
    return bool(_GLOB_CHARS.search(_ESCAPED.sub("", pattern)))


def grant_text(rule: RememberRule) -> str:
    """What ``rule`` allows, in words (the scope aside): the remember dialog shows it."""
    pattern = rule.pattern
    literal = _ESCAPED.sub(r"\1", pattern)
    if rule.act is Act.EXEC:
        if " " not in pattern:
            if pattern.startswith("mcp__") and not _has_wildcard(pattern):
                return f"calls to the MCP tool {literal}, with any arguments"
            if _has_wildcard(pattern):
                return f"every command whose program matches '{pattern}', with any arguments"
            return f"every '{literal}' command, with any arguments"
        if not _has_wildcard(pattern):
            return f"exactly the command '{literal}'"
        return f"every command line matching '{pattern}'"
    verb = rule.act.value
    if "/" not in pattern:
        if not _has_wildcard(pattern):
            return f"{verb} any file named '{literal}', in any folder"
        return f"{verb} any file whose name matches '{pattern}', in any folder"
    if not _has_wildcard(pattern):
        return f"{verb} exactly '{literal}'"
    return f"{verb} every path matching '{pattern}'"


def command_examples(request: ApprovalRequest) -> list[tuple[str, str]]:
    """For an exec: patterns from narrowest to widest, each with what it allows; every one of
    them matches ``request`` (so the hint never shows an example that would not have)."""
    if request.act is not Act.EXEC or request.tool != "run_command":
        return []
    exact = suggest_pattern(request)
    hint = command_hint(request)
    program = hint.split(" ", 1)[0]
    candidates = [(exact, "only this command")]
    if " " in hint:  # a subcommand: "git status *"
        candidates.append((f"{glob_escape(hint)} *", f"'{hint}' with any arguments"))
    candidates.append((glob_escape(program), f"every {program} command"))
    seen: set[str] = set()
    examples: list[tuple[str, str]] = []
    for pattern, meaning in candidates:
        if pattern in seen or not Rule(Act.EXEC, Effect.ALLOW, pattern).matches(
            Act.EXEC, request.target
        ):
            continue
        seen.add(pattern)
        examples.append((pattern, meaning))
    return examples


def command_hint(request: ApprovalRequest) -> str:
    """For an exec: the program and subcommand the human saw, e.g. ``git status``."""
    if request.act is not Act.EXEC:
        return ""
    argv = request_argv(request)
    words = [argv[0].rsplit("/", 1)[-1]] if argv else [request.target]
    if len(argv) > 1 and not argv[1].startswith("-"):
        words.append(argv[1])
    return " ".join(words)


def request_argv(request: ApprovalRequest) -> list[str]:
    """An exec request's argv: from its arguments, else from its JSON content; [] if neither."""
    raw = request.arguments.get("argv")
    if isinstance(raw, list):
        return [str(a) for a in raw]
    try:
        parsed = json.loads(request.content)
    except ValueError:
        return []
    return [str(a) for a in parsed] if isinstance(parsed, list) else []


def in_scope(record: ApprovalRecord, scope: RuleScope, *, workspace: str, run_id: int) -> bool:
    """Whether a rule remembered with ``scope`` (from ``run_id`` in ``workspace``) applies to the
    request — the same test ``RuleRepo.layer_for`` uses."""
    if scope == "global":
        return True
    if scope == "workspace":
        return record.request.workspace == workspace
    return record.request.run_id == run_id


def preview_matches(
    records: Iterable[ApprovalRecord],
    rule: RememberRule,
    *,
    workspace: str,
    run_id: int,
    before_id: int | None = None,
) -> list[ApprovalRecord]:
    """Every request (older than ``before_id`` when given) the rule would have matched."""
    candidate = Rule(rule.act, Effect.ALLOW, rule.pattern)
    return [
        r
        for r in records
        if (before_id is None or r.request.id < before_id)
        and candidate.matches(r.request.act, r.request.target)
        and in_scope(r, rule.scope, workspace=workspace, run_id=run_id)
    ]


@dataclass(frozen=True, slots=True)
class BlastRadius:
    """What a candidate rule would have allowed among the earlier requests in the store."""

    act: Act
    allowed: list[ApprovalRecord]
    earlier: int  # earlier requests of the rule's act, in any scope
    runs: int  # distinct runs among ``allowed``
    denied: int  # of ``allowed``, how many a human denied

    def describe(self) -> str:
        """``would have allowed 3 of 41 earlier write requests (2 runs; 1 of them denied)``."""
        earlier = f"{self.earlier} earlier {self.act.value} requests"
        if not self.earlier:
            return f"no earlier {self.act.value} requests in the store to compare"
        if not self.allowed:
            return f"would have allowed none of the {earlier}"
        runs = "1 run" if self.runs == 1 else f"{self.runs} runs"
        extra = f"; {self.denied} of them denied" if self.denied else ""
        return f"would have allowed {len(self.allowed)} of the {earlier} ({runs}{extra})"


def blast_radius(
    records: Sequence[ApprovalRecord],
    rule: RememberRule,
    *,
    workspace: str,
    run_id: int,
    before_id: int | None = None,
) -> BlastRadius:
    allowed = preview_matches(
        records, rule, workspace=workspace, run_id=run_id, before_id=before_id
    )
    earlier = sum(
        1
        for r in records
        if r.request.act is rule.act and (before_id is None or r.request.id < before_id)
    )
    denied = sum(
        1 for r in allowed if r.decision is not None and r.decision.kind is DecisionKind.DENY
    )
    runs = len({r.request.run_id for r in allowed})
    return BlastRadius(rule.act, allowed, earlier, runs, denied)


def validate_pattern(pattern: str) -> str | None:
    """A problem with a pattern, or None. Over-broad patterns are allowed but named."""
    text = pattern.strip()
    if not text:
        return "the pattern is empty"
    if text != pattern:
        return "the pattern has leading or trailing spaces"
    return None
