"""The one-line stubs that stand in for results a request does not carry.

Every stub names the step it stands for and its **handle** (the call id) and says how to get
the result back, in the model's terms, so nothing leaves the window without a way back:
``recall_result("<call id>")`` reads the recorded result back from the trace (``tools/recall``),
and a stale one says how to get its current result instead. What is not reproducible is never
cleared (``receipt``): a stub keeps the decision, the side effect's receipt, the exit status
(of a failed command as of a passed one) and the latest test command's output's end.
"""

from __future__ import annotations

import difflib
import re

from io_tui.core.checks import is_test_command
from io_tui.core.heads import untrusted_body
from io_tui.core.ledger import Observation, ObsKind, bound_head, bound_text
from io_tui.core.numbered import range_from

RECALL = "recall_result"
RECEIPT_CHARS = 200  # of a receipt's line
TEST_TAIL_CHARS = 400  # of the latest test output's end, kept in its stub
_DECIDED = ("The operator ", "Refused by policy")  # the harness's words on a decision
_RECEIPTS = frozenset({ObsKind.WRITE, ObsKind.MEMORY, ObsKind.AGENT, ObsKind.MCP})


def what(obs: Observation) -> str:
    """The observation's target, with its span when it has one."""
    return f"{obs.target} ({obs.span})" if obs.span else obs.target


def recall_call(call_id: str, offset: int = 0) -> str:
    """The call that reads a recorded result back, from ``offset`` (in characters)."""
    at = f", offset={offset}" if offset else ""
    return f'{RECALL}("{call_id}"{at})'


def rest_hint(call_id: str, chars: int, cap: int) -> str:
    """What a marker cutting a text of ``chars`` characters to ``cap`` says: where the
    recorded result goes on (the head kept is the recorded result's own head)."""
    return f"{recall_call(call_id, bound_head(chars, cap))} reads on"


def cut(obs: Observation, cap: int) -> str:
    """The recorded result cut to ``cap`` (within it: unchanged), the marker saying where the
    recall goes on."""
    return bound_text(obs.text, cap, rest_hint(obs.call_id, len(obs.text), cap))


def again(obs: Observation) -> str:
    """The call that gives an observation's current result, in the model's terms."""
    target = what(obs)
    match obs.kind:
        case ObsKind.READ | ObsKind.LIST | ObsKind.FIND | ObsKind.SKILL:
            return f"call {obs.tool} {target} again"
        case ObsKind.GREP:
            return f"rerun the {obs.tool} for {target}"
        case ObsKind.EXEC:
            return f"rerun {target}"
        case ObsKind.RECALL:  # a recall gives the recorded result again, never the current one
            return f"make the call {obs.target} recorded again"
        case _:
            return f"call {obs.tool} again with the same arguments"


def how_to_get_back(obs: Observation, stale: bool = False) -> str:
    """How to get an observation back: recalled as recorded, or, when what it was made from
    changed since, made again for its current result."""
    if stale:
        return f"{again(obs)} for its current result ({recall_call(obs.call_id)}: as recorded)"
    return f"{recall_call(obs.call_id)} reads it back"


def receipt(obs: Observation, latest: bool = False) -> str:
    """What of a result is never cleared, whatever stands in for it: the operator's or the
    policy's decision on the call, a side effect's receipt (a write, a memory write, a
    sub-agent's run, an MCP tool's answer: its first line), a command's exit status (passed or
    failed alike), and for the run's ``latest`` test command (``checks.is_test_command``) the end
    of its output (untrusted data), whether it passed or failed: the evidence the verification
    step needs. "" for a result with none (a read, a grep, a recall: reproducible, read back by
    handle)."""
    text = obs.text
    kept: list[str] = []
    if text.startswith(_DECIDED):
        first, _, text = text.partition("\n")
        kept.append(_line(first))
    text = untrusted_body(text)
    if obs.kind is ObsKind.EXEC:  # failed or passed: its exit status all the same
        lines = text.split("\n", 2)  # "$ argv", the exit status, the output
        if len(lines) > 1:
            kept.append(_line(lines[1]))
        if latest and len(lines) > 2 and is_test_command(obs.target):
            tail = lines[2][-TEST_TAIL_CHARS:]
            kept.append(f"the end of its output, untrusted data: {' '.join(tail.split())}")
    elif obs.kind in _RECEIPTS and not obs.is_error and text and not _resource(obs):
        kept.append(_line(text.partition("\n")[0]))
    return "; ".join(kept)


def receipt_rank(obs: Observation) -> int:
    """Which receipts come first where room runs out: decisions (0), side effects (1), a
    command's exit status (2)."""
    if obs.text.startswith(_DECIDED):
        return 0
    return 2 if obs.kind is ObsKind.EXEC else 1


def _resource(obs: Observation) -> bool:
    """An MCP resource's content: a read, reproducible."""
    return obs.kind is ObsKind.MCP and obs.target.startswith("mcp:")


def _line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= RECEIPT_CHARS else text[: RECEIPT_CHARS - 1] + "…"


def _with(stub: str, obs: Observation, latest: bool = False) -> str:
    """``stub`` with the result's receipt, when it has one."""
    kept = receipt(obs, latest)
    return f"{stub[:-1]}. Kept: {kept}]" if kept else stub


def superseded_stub(obs: Observation, by: int, covered: bool = False) -> str:
    how = "read these lines again" if covered else "made the same call"
    stub = (
        f"[step {obs.step} {obs.tool} {what(obs)}: superseded by step {by}, which {how}; "
        f"the newest such result is the current one; {recall_call(obs.call_id)} reads this one]"
    )
    return _with(stub, obs)


def shown_stub(obs: Observation, by: int) -> str:
    return (
        f"[step {obs.step} {obs.tool} {what(obs)}: these lines are in step {by}'s read of "
        f"{obs.target}, the file unchanged since; {how_to_get_back(obs)} if that result is "
        "not above]"
    )


def same_stub(obs: Observation, by: int) -> str:
    return (
        f"[step {obs.step} {obs.tool} {what(obs)}: the same result as step {by}'s, to the "
        f"character; {how_to_get_back(obs)} if that result is not above]"
    )


def noted_stub(obs: Observation) -> str:
    return (
        f"[step {obs.step} {obs.tool} {obs.target!r}: saved as its call says; "
        f"{how_to_get_back(obs)}]"
    )


def elided_stub(obs: Observation, stale: str | None, latest: bool = False) -> str:
    """``latest``: the run's latest test command, whose output's end the stub keeps."""
    why = f" (and stale: {stale})" if stale is not None else ""
    stub = (
        f"[step {obs.step} {obs.tool} {what(obs)}: elided, older than this request's "
        f"window{why}; {how_to_get_back(obs, stale is not None)}]"
    )
    return _with(stub, obs, latest)


def is_test_run(obs: Observation) -> bool:
    """Whether ``obs`` is a test command's result (``checks.is_test_command``)."""
    return obs.kind is ObsKind.EXEC and is_test_command(obs.target)


def refresh_failed_stub(obs: Observation, stale: str, failure: str) -> str:
    return (
        f"[step {obs.step} {obs.tool} {what(obs)}: stale, {stale}, and redoing it failed: "
        f"{failure}. {how_to_get_back(obs, True)} if you still need it]"
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


def quote_stub(obs: Observation, base: int) -> str:
    """A range read (``obs``) whose lines step ``base``'s read of the same file, carried whole
    above in the request, shows as they are now: a pointer to them (``apply_echo`` gives the
    range back from that read's text)."""
    return f"[step {obs.step} {obs.tool} {what(obs)}: {_QUOTED.format(base=base)}]"


_QUOTED = "these lines are in step {base}'s read above, as they are now"
_QUOTE = re.compile(r"\(lines (\d+)-(\d+)\): " + _QUOTED.format(base=r"\d+") + r"\]")
NO_NEWLINE = "\\ No newline at end of file\n"
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


def apply_echo(base_text: str, echo: str) -> str:
    """The result an ``echo_stub`` or a ``quote_stub`` stands for, given the base result it
    names: the inverse of either, to the character."""
    head, _, body = echo.partition("\n")
    quoted = _QUOTE.search(head)
    if quoted:
        return range_from(base_text, int(quoted[1]), int(quoted[2])) or ""
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
