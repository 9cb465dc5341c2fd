"""Remembering a rule from an approval (DESIGN §3.4): what the remember dialog offers and shows.
No Textual.

- ``suggest_pattern``: the pattern a remember rule starts from, exactly what was asked — an
  exec's exact command line (never the bare program, which allows every command it runs), a
  path's exact path (anchored at the workspace root: ``/README.md``, not every README.md).
- ``pattern_choices``: that pattern and the wider ones, narrowest first, each with what it
  allows (a command's subcommand and program; a path's folder and extension; an MCP tool's
  server); every choice matches the request it is offered for.
- ``grant_text``: what a pattern allows, in words.
- ``preview_matches`` / ``blast_radius``: every earlier request in the store a candidate rule
  would have allowed, under exactly the matching the policy uses (``Rule.matches``) and the
  rule's scope, and how many that is (in how many runs; how many of them a human denied).
- ``validate_pattern``; ``SCOPES`` and their labels.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from io_tui.core.authority.approvals import ApprovalRequest, DecisionKind, RememberRule, RuleScope
from io_tui.core.authority.policy import Act, Effect, Rule
from io_tui.core.mcp.asks import is_server_ask
from io_tui.core.store.approvals import ApprovalRecord

SCOPES: tuple[RuleScope, ...] = ("run", "workspace", "global")
SCOPE_LABELS: dict[str, str] = {
    "run": "this run",
    "workspace": "this workspace",
    "global": "everywhere",
}


def suggest_pattern(request: ApprovalRequest) -> str:
    """The pattern a remember rule starts from: exactly what the request asked, nothing wider.

    An exec gets its exact command line (``git status --short``, glob characters escaped), so the
    rule allows that command and nothing else; an MCP tool (``mcp__server__tool``) its exact name.
    A path act gets its exact path: ``src/app.py``; a file at the root is anchored there
    (``/README.md``), since a slash-free pattern would match that name in every folder.
    """
    if request.act is Act.EXEC:
        return glob_escape(request.target)
    target = glob_escape(request.target.replace("\\", "/"))
    return target if "/" in target else f"/{target}"


@dataclass(frozen=True, slots=True)
class PatternChoice:
    """A pattern the operator may remember for a request, and what it allows in words."""

    pattern: str
    meaning: str


def pattern_choices(request: ApprovalRequest) -> list[PatternChoice]:
    """The patterns a rule for ``request`` may take, narrowest first: the exact one
    (``suggest_pattern``), then the wider ones — for a command its subcommand and program, for
    an MCP tool its server, for a path its folder and its extension. Only choices that match
    the request are offered."""
    exact = suggest_pattern(request)
    if request.act is Act.EXEC:
        candidates = [(exact, "only this command"), *_wider_commands(request)]
    else:
        candidates = [(exact, "only this file"), *_wider_paths(request.target)]
    seen: set[str] = set()
    choices: list[PatternChoice] = []
    for pattern, meaning in candidates:
        rule = Rule(request.act, Effect.ALLOW, pattern)
        if pattern in seen or not rule.matches(request.act, request.target):
            continue
        seen.add(pattern)
        choices.append(PatternChoice(pattern, meaning))
    return choices


def _wider_commands(request: ApprovalRequest) -> list[tuple[str, str]]:
    if is_server_ask(request):  # a server's sampling or form: only that one
        return []
    if request.tool.startswith("mcp__") and request.tool.count("__") >= 2:
        server = request.tool.split("__")[1]
        return [(f"mcp__{glob_escape(server)}__*", f"every tool of the MCP server {server}")]
    if request.tool != "run_command":
        return []
    hint = command_hint(request)
    program = hint.split(" ", 1)[0]
    wider: list[tuple[str, str]] = []
    if " " in hint:  # a subcommand: "git status *"
        wider.append((f"{glob_escape(hint)} *", f"'{hint}' with any arguments"))
    wider.append((glob_escape(program), f"every {program} command"))
    return wider


def _wider_paths(target: str) -> list[tuple[str, str]]:
    """A path's folder (``src/*``, every file under it) and extension (``*.py``, anywhere)."""
    if target.startswith("mcp:"):  # an MCP resource: its URI is no folder
        return []
    path = PurePosixPath(target.replace("\\", "/"))
    wider: list[tuple[str, str]] = []
    if str(path.parent) not in ("", "."):
        folder = glob_escape(str(path.parent))
        wider.append((f"{folder}/*", f"every file under {path.parent}/"))
    if path.suffix and path.stem:
        wider.append((f"*{glob_escape(path.suffix)}", f"every {path.suffix} file, in any folder"))
    return wider


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
    if pattern.startswith("/"):
        if not _has_wildcard(pattern):
            return f"{verb} exactly '{literal[1:]}'"
        return f"{verb} every path matching '{pattern[1:]}' from the workspace root"
    if "/" not in pattern:
        if not _has_wildcard(pattern):
            return f"{verb} any file named '{literal}', in any folder"
        return f"{verb} any file whose name matches '{pattern}', in any folder"
    if not _has_wildcard(pattern):
        return f"{verb} exactly '{literal}'"
    return f"{verb} every path matching '{pattern}'"


def command_hint(request: ApprovalRequest) -> str:
    """For an exec: the program and subcommand the human saw, e.g. ``git status``."""
    if request.act is not Act.EXEC:
        return ""
    try:  # the line the policy matched: the program as it really runs (``./tools/ls``)
        line = shlex.split(request.target)
    except ValueError:
        line = request.target.split()
    words = line[:1] or [request.target]
    if len(line) > 1 and not line[1].startswith("-"):
        words.append(line[1])
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

    def short(self) -> str:
        """``3 of 41 earlier (2 runs, 1 denied)``: one choice's radius beside the others'."""
        if not self.earlier:
            return "no earlier requests"
        if not self.allowed:
            return f"none of {self.earlier} earlier"
        runs = "1 run" if self.runs == 1 else f"{self.runs} runs"
        extra = f", {self.denied} denied" if self.denied else ""
        return f"{len(self.allowed)} of {self.earlier} earlier ({runs}{extra})"


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
