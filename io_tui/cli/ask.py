"""Asking the operator on the terminal: ``io-tui run --approve ask`` and ``io-tui decide REQUEST``.

The request is shown whole before the question (``proposal``: a write as a diff against the
file as it is now, a command as its argv), on stderr, paged when long; the answer is a line on
stdin: ``y`` approves, ``n [reason]`` denies, ``r [N] [run|global]`` remembers (choice N of the
patterns offered, exactly what was asked by default, in this workspace unless a scope is
named), ``d`` or nothing defers. stdin is read off the event loop.
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import dataclass
from typing import TextIO

from io_tui.cli.proposal import proposal, render, show, visible
from io_tui.cli.terminal import exact
from io_tui.core import (
    SCOPE_LABELS,
    Act,
    ApprovalRecord,
    ApprovalRequest,
    Decision,
    DecisionKind,
    NoticeStyle,
    PatternChoice,
    RememberRule,
    RuleScope,
    Store,
    blast_radius,
    is_outside_sandbox,
    pattern_choices,
    terminal_notice,
)

DECIDED_BY = "terminal"
PROMPT = "approve? [y]es / [n]o [reason] / [r]emember [N] [run|global] / [d]efer: "
PROMPT_ONCE = "approve? [y]es / [n]o [reason] / [d]efer: "  # nothing to remember


def describe(request: ApprovalRequest, out: TextIO) -> str:
    """The request as the operator reads it before deciding: who asks, why, and the action; a
    rerun outside the sandbox says so, and what the sandbox refused."""
    shown = proposal(request)
    what = f"{request.act.value} {visible(request.target)}"
    if is_outside_sandbox(request):
        refused = "; ".join(
            visible(f"{d.get('kind')} {d.get('what')}")
            for d in request.arguments.get("denied") or []
        )
        what = (
            f"rerun OUTSIDE THE SANDBOX: {visible(request.target)}\n"
            f"  the sandbox refused: {refused}; approving runs it again without its limits"
        )
    head = (
        f"[io-tui] run {request.run_id} step {request.step} asks to {what}\n"
        f"  asked by rule '{request.rule}' in layer '{request.layer}'\n"
        f"  {visible(shown.summary)}"
    )
    body = render(shown, out)
    return f"{head}\n{body}" if body else head


@dataclass(frozen=True, slots=True)
class Remembering:
    """The patterns offered for a request, each with what it would have allowed before."""

    act: Act
    choices: list[PatternChoice]
    radii: list[str]

    def listing(self) -> str:
        width = max(len(c.pattern) for c in self.choices)
        rows = [
            f"  {n}  {visible(c.pattern).ljust(width)}  {c.meaning} · {radius}"
            for n, (c, radius) in enumerate(zip(self.choices, self.radii, strict=True), 1)
        ]
        return "remember one of (this workspace unless you add run or global):\n" + "\n".join(rows)


async def remembering(request: ApprovalRequest, store: Store | None) -> Remembering:
    choices = pattern_choices(request)
    history: list[ApprovalRecord] = await store.approvals.history() if store is not None else []
    radii = [
        blast_radius(
            history,
            RememberRule(c.pattern, request.act, "workspace"),
            workspace=request.workspace,
            run_id=request.run_id,
            before_id=request.id,
        ).short()
        for c in choices
    ]
    return Remembering(request.act, choices, radii)


def parse_answer(answer: str, offered: Remembering | None) -> Decision | str:
    """The decision a typed line means, or what is wrong with it (asked again). With nothing
    ``offered`` (a rerun outside the sandbox) there is no remembering: it is asked each time."""
    word, _, rest = answer.strip().partition(" ")
    word = word.lower()
    if word in {"y", "yes", "1"}:
        return Decision.approve(decided_by=DECIDED_BY)
    if word in {"n", "no", "4"}:
        return Decision.deny(rest.strip() or "denied at the terminal", decided_by=DECIDED_BY)
    if word in {"r", "remember", "3"}:
        if offered is None:
            return "a rerun outside the sandbox is asked each time: nothing to remember"
        return _remember(rest.split(), offered)
    if word in {"", "d", "defer", "5"}:
        return Decision.defer(decided_by=DECIDED_BY)
    return f"'{visible(word)}' is not an answer"


def _remember(words: list[str], offered: Remembering) -> Decision | str:
    index, scope = 0, "workspace"
    for word in words:
        if word.isdigit():
            index = int(word) - 1
            if not 0 <= index < len(offered.choices):
                return f"choose a pattern from 1 to {len(offered.choices)}"
        elif word in ("run", "workspace", "global"):
            scope = word
        else:
            return f"'{visible(word)}' is neither a choice number nor a scope"
    rule = RememberRule(offered.choices[index].pattern, offered.act, _scope(scope))
    return Decision(DecisionKind.REMEMBER, rule=rule, decided_by=DECIDED_BY)


def _scope(word: str) -> RuleScope:
    return "run" if word == "run" else "global" if word == "global" else "workspace"


class TerminalApprover:
    """Asks on the terminal (stderr, stdin). With ``store``, the remember choices say how many
    earlier requests each would have allowed. A terminal is told first (``terminal_notice``:
    the bell and, as ``notify`` says, a desktop notification), so an operator in another
    window hears of the ask."""

    def __init__(
        self,
        store: Store | None = None,
        out: TextIO | None = None,
        *,
        notify: NoticeStyle = "auto",
        bell: bool = True,
    ) -> None:
        self.store = store
        self.out = out or sys.stderr
        self.notify: NoticeStyle = notify
        self.bell = bell

    async def decide(self, request: ApprovalRequest) -> Decision:
        outside = is_outside_sandbox(request)  # its own decision each time, never a rule
        offered = None if outside else await remembering(request, self.store)
        return await asyncio.to_thread(self._ask, request, offered)

    def _ask(self, request: ApprovalRequest, offered: Remembering | None) -> Decision:
        out = self.out
        # the notice and the coloured diff are io-tui's own sequences, around text already
        # made safe (``terminal_notice`` cleans its line, ``describe`` spells out controls):
        # they go past the guard that drops every escape from untrusted text
        raw = exact(out)
        if out.isatty():
            title, body = (
                f"io-tui run {request.run_id} asks",
                f"{request.act.value} {request.target}",
            )
            raw.write(terminal_notice(title, body, self.notify, bell=self.bell))
        show("\n" + describe(request, raw), raw)
        if offered is not None:
            out.write(offered.listing() + "\n")
        while True:
            out.write(PROMPT if offered is not None else PROMPT_ONCE)
            out.flush()
            line = sys.stdin.readline()
            if not line:  # stdin closed: nobody to answer, the request waits
                out.write("\n")
                return Decision.defer(decided_by=DECIDED_BY)
            answer = parse_answer(line, offered)
            if isinstance(answer, Decision):
                if answer.rule is not None and answer.kind is DecisionKind.REMEMBER:
                    out.write(
                        f"remembered: {answer.rule.act.value} {visible(answer.rule.pattern)}"
                        f" ({SCOPE_LABELS[answer.rule.scope]})\n"
                    )
                return answer
            out.write(f"  {answer}\n")
