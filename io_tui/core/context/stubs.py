"""The one-line stubs that stand in for results a request does not carry.

Every stub names the step it stands for and says how to get the result back, in the model's
terms, so nothing leaves the window without a way back.
"""

from __future__ import annotations

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
