"""The one-line stubs that stand in for results a request does not carry.

Every stub names the step it stands for and its **handle** (the call id) and says how to get
the result back, in the model's terms, so nothing leaves the window without a way back:
``recall_result("<call id>")`` reads the recorded result back from the trace (``tools/recall``),
and a stale one says how to get its current result instead.
"""

from __future__ import annotations

from io_tui.core.ledger import Observation, ObsKind, bound_head, bound_text

RECALL = "recall_result"


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
        case _:
            return f"call {obs.tool} again with the same arguments"


def how_to_get_back(obs: Observation, stale: bool = False) -> str:
    """How to get an observation back: recalled as recorded, or, when what it was made from
    changed since, made again for its current result."""
    if stale:
        return f"{again(obs)} for its current result ({recall_call(obs.call_id)}: as recorded)"
    return f"{recall_call(obs.call_id)} reads it back"


def superseded_stub(obs: Observation, by: int, covered: bool = False) -> str:
    again = "read these lines again" if covered else "made the same call"
    return (
        f"[step {obs.step} {obs.tool} {what(obs)}: superseded by step {by}, which {again}; "
        f"the newest such result is the current one; {recall_call(obs.call_id)} reads this one]"
    )


def shown_stub(obs: Observation, by: int) -> str:
    return (
        f"[step {obs.step} {obs.tool} {what(obs)}: these lines are in step {by}'s read of "
        f"{obs.target}, the file unchanged since; {how_to_get_back(obs)} if that result is "
        "not above]"
    )


def elided_stub(obs: Observation, stale: str | None) -> str:
    why = f" (and stale: {stale})" if stale is not None else ""
    return (
        f"[step {obs.step} {obs.tool} {what(obs)}: elided, older than this request's "
        f"window{why}; {how_to_get_back(obs, stale is not None)}]"
    )


def refresh_failed_stub(obs: Observation, stale: str, failure: str) -> str:
    return (
        f"[step {obs.step} {obs.tool} {what(obs)}: stale, {stale}, and redoing it failed: "
        f"{failure}. {how_to_get_back(obs, True)} if you still need it]"
    )
