"""The one-line stubs that stand in for results a request does not carry.

Every stub names the step it stands for and says how to get the result back, in the model's
terms, so nothing leaves the window without a way back.
"""

from __future__ import annotations

import difflib
import re

from io_tui.core.ledger import Observation, ObsKind


def what(obs: Observation) -> str:
    """The observation's target, with its span when it has one."""
    return f"{obs.target} ({obs.span})" if obs.span else obs.target


def how_to_get_back(obs: Observation) -> str:
    """The call that brings an observation back, in the model's terms."""
    target = what(obs)
    match obs.kind:
        case ObsKind.READ | ObsKind.LIST | ObsKind.FIND | ObsKind.SKILL:
            return f"call {obs.tool} {target} again"
        case ObsKind.GREP:
            return f"rerun the {obs.tool} for {target}"
        case ObsKind.EXEC:
            return f"rerun {target} if you still need its output"
        case _:
            return f"call {obs.tool} again with the same arguments"


def superseded_stub(obs: Observation, by: int, covered: bool = False) -> str:
    again = "read these lines again" if covered else "made the same call"
    return (
        f"[step {obs.step} {obs.tool} {what(obs)}: superseded by step {by}, which {again}; "
        "the newest such result is the current one]"
    )


def shown_stub(obs: Observation, by: int) -> str:
    return (
        f"[step {obs.step} {obs.tool} {what(obs)}: these lines are in step {by}'s read of "
        f"{obs.target}, the file unchanged since; call {obs.tool} {what(obs)} again if that "
        "result is not above]"
    )


def same_stub(obs: Observation, by: int) -> str:
    return (
        f"[step {obs.step} {obs.tool} {what(obs)}: the same result as step {by}'s, to the "
        f"character; {how_to_get_back(obs)} if that result is not above]"
    )


def noted_stub(obs: Observation) -> str:
    return (
        f"[step {obs.step} {obs.tool} {obs.target!r}: the note was saved as this step's call "
        "gives it; its result was shown once and is left out since]"
    )


def elided_stub(obs: Observation, stale: str | None) -> str:
    why = f" (and stale: {stale})" if stale is not None else ""
    return (
        f"[step {obs.step} {obs.tool} {what(obs)}: elided, older than this request's "
        f"window{why}; {how_to_get_back(obs)} to see it]"
    )


def refresh_failed_stub(obs: Observation, stale: str, failure: str) -> str:
    return (
        f"[step {obs.step} {obs.tool} {what(obs)}: stale, {stale}, and redoing it failed: "
        f"{failure}. {how_to_get_back(obs)} if you still need it]"
    )


def echo_stub(obs: Observation, base: int, base_text: str, text: str) -> str:
    """``text`` (the result of ``obs``) as the difference from ``base_text``, step ``base``'s
    result of the same call, which the request carries whole before it: the same, or a
    unified diff without context lines (``-`` its lines, ``+`` this result's)."""
    head = f"[step {obs.step} {obs.tool} {what(obs)}: "
    if text == base_text:
        return head + f"the same result as step {base}'s, above, to the character]"
    old, new = base_text.splitlines(keepends=True), text.splitlines(keepends=True)
    lines = [
        line if line.endswith("\n") else line + "\n" + NO_NEWLINE
        for line in difflib.unified_diff(old, new, n=0)
        if not line.startswith(("---", "+++"))
    ]
    return (
        head + f"step {base}'s result above, with these lines changed (a unified diff: `-` "
        "its lines, `+` this result's)]\n" + "".join(lines)
    )


NO_NEWLINE = "\\ No newline at end of file\n"
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def apply_echo(base_text: str, echo: str) -> str:
    """The result an ``echo_stub`` stands for, given the base result it names: the inverse
    of ``echo_stub``, to the character."""
    head, _, body = echo.partition("\n")
    if head.endswith("to the character]"):
        return base_text
    old = base_text.splitlines(keepends=True)
    out: list[str] = []
    at = 0  # the next line of ``old`` not yet copied
    previous = ""
    for line in body.splitlines(keepends=True):
        hunk = _HUNK.match(line)
        if hunk:
            first, count = int(hunk[1]), int(hunk[2] or "1")
            start = first if count == 0 else first - 1
            out += old[at:start]
            at = start + count
        elif line.startswith("+"):
            out.append(line[1:])
        elif line == NO_NEWLINE and previous.startswith("+"):
            out[-1] = out[-1].removesuffix("\n")
        previous = line
    return "".join(out + old[at:])
