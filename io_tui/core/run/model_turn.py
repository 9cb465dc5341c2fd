"""The model request path of a run: building its context engine (skills, instructions, tool
schemas, stale-read refresh, the disk probe, summaries), asking the model for one working completion, and
recording each request and its tokens.

Plain functions over a ``RunState``, which they change only through its methods; the loop in
``run.py`` calls ``build_engine`` once and ``ask_model`` each step.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Sequence
from contextlib import aclosing
from dataclasses import replace
from functools import lru_cache, partial
from typing import Any, NamedTuple

from io_tui.core import telemetry
from io_tui.core.authority.policy import Act, Effect
from io_tui.core.context.engine import ContextEngine
from io_tui.core.context.frame import Frame, schema_tokens
from io_tui.core.context.ladder import LadderExhausted, Rung
from io_tui.core.context.manifest import Assembly
from io_tui.core.context.refresh import Fresh, RefreshFailed
from io_tui.core.context.summary import Summary
from io_tui.core.context.turns import message_tokens
from io_tui.core.contract import estimate_tokens
from io_tui.core.events import EventKind
from io_tui.core.ledger import Observation, ObsKind, StepRecord
from io_tui.core.providers.base import (
    Attempt,
    Completed,
    CompletionRequest,
    ErrorKind,
    ProviderError,
    Response,
    Retrying,
    TextDelta,
    complete,
    discover_limits,
    fit_output_limit,
    fitted_output,
    provider_limits,
    tools_ignored,
    window_source,
)
from io_tui.core.providers.messages import Message
from io_tui.core.run.calls import framed
from io_tui.core.run.meter import RequestCost
from io_tui.core.run.pinned import PinnedRequest
from io_tui.core.run.rebuild import first_build, refresh_derived
from io_tui.core.run.state import RunState
from io_tui.core.store.encoded import manifest_text
from io_tui.core.store.requests import RequestRecord
from io_tui.core.text.heads import operator_line
from io_tui.core.text.numbered import span_lines
from io_tui.core.tokens import Calibrated, raw_ceiling
from io_tui.core.tools.base import ToolError

# -- the context engine --


async def build_engine(state: RunState) -> ContextEngine:
    """Load skills and instructions (``rebuild.first_build``), fix the frame, and wire refresh
    and summaries to the run."""
    instructions, withheld = await first_build(state)
    frame = Frame(
        system_prompt=state.system_prompt,
        tools=state.specs(),
        contract=state.contract,
        instructions=instructions,
        withheld=withheld,
    )
    summaries = [Summary(s, t) for s, t in await state.store.runs.summaries(state.run_id)]

    async def on_summary(summary: Summary) -> None:
        await state.store.runs.add_summary(state.run_id, summary.through_step, summary.text)
        state.publish(
            EventKind.COMPACTED,
            {"through_step": summary.through_step, "chars": len(summary.text)},
        )

    return ContextEngine(
        frame,
        refresh=partial(refresh_stale_read, state),
        probe=state.workspace.changed,
        summarize=partial(summarize, state),
        summaries=summaries,
        on_summary=on_summary,
        agreement=state.progress.agreement,
    )


async def refresh_stale_read(state: RunState, obs: Observation) -> Fresh:
    """The current result of a read that went out of date (read again through the same policy
    and containment as any read), or of a grep, find or listing (the same call run again): what
    its correction carries (``context/correct.py``)."""
    if obs.tool in ("grep", "find", "list_dir"):
        return await _run_again(state, obs, _arguments(state, obs))
    if obs.kind is ObsKind.RECALL:  # the trace holds the old result only: nothing to redo
        raise RefreshFailed("a recall gives the result as recorded; make the call again instead")
    verdict = state.policy.explain(Act.READ, obs.target)
    if verdict.effect is not Effect.ALLOW:
        raise RefreshFailed(
            f"policy says {verdict.effect.value} for read ({verdict.rule_text}, layer {verdict.layer})"
        )
    if obs.span.startswith("bytes "):  # a byte range: the same range again
        return await _run_again(state, obs, _arguments(state, obs), "read_file")
    arguments: dict[str, Any] = {"path": obs.target}
    lines = span_lines(obs.span)
    if obs.span and lines is not None:
        arguments["offset"], arguments["limit"] = lines[0], lines[1] - lines[0] + 1
    return await _run_again(state, obs, arguments, "read_file")


def _arguments(state: RunState, obs: Observation) -> dict[str, Any]:
    """The arguments of the call that made ``obs`` (for a correction, of the call it
    corrects: ``c3@8`` is call ``c3`` made again)."""
    call_id = obs.call_id.split("@", 1)[0]
    for record in reversed(state.history):
        for call in record.tool_calls:
            if call.id == call_id:
                return dict(call.arguments)
    raise RefreshFailed(f"the call of step {obs.step}'s {obs.tool} is not in the history")


async def _run_again(
    state: RunState, obs: Observation, arguments: dict[str, Any], name: str | None = None
) -> Fresh:
    tool = state.registry.get(name or obs.tool)
    ctx = state.tool_context(state.step)
    try:
        outcome = await tool.run(tool.parse(arguments), ctx)
    except ToolError as exc:
        raise RefreshFailed(str(exc)) from None
    if outcome.is_error:
        raise RefreshFailed(outcome.text)
    return Fresh(framed(tool.name, outcome).text, outcome.seen)  # as the call's own result was


# -- one working completion --


async def ask_model(
    state: RunState,
    engine: ContextEngine,
    operator_messages: tuple[str, ...],
    requests: list[RequestRecord],
) -> Response:
    """One working completion, climbing the degradation ladder's last rungs on context
    overflow (``context/ladder.py``): a forced fold, then the bounded emergency compaction,
    then a safe stop (``LadderExhausted``) before any call of the step runs.

    Guarded before sending (``refuse``): a frame (system prompt, tools, contract, instructions)
    that with the answer's limit exceeds the model's known window, or alone exceeds the run's
    context ceiling when the window is unknown, is refused locally with the figures; a request the server found too long is compacted and sent again only if that
    changed it and its frame alone fits the ceiling. Every attempt, failed, refused or not, is
    appended to ``requests`` for the step's commit.
    """
    provider = state.harness.provider
    await discover_limits(provider)  # llama.cpp's /props, once
    limit, window = provider_limits(provider)
    default_limit = limit if fitted_output(provider) else None  # fitted to the window
    source = window_source(provider)
    ceiling = state.contract.context.ceiling(state.remaining_tokens())
    key = state.calibration.next_key(provider.name, provider.model)
    if tools_ignored(provider) and state.specs():
        say_tools_ignored(state, key, SERVER_SAYS)
    factor = state.calibration.factor(*key)
    history = [*state.history, StepRecord(state.step, "", operator_messages=operator_messages)]
    recalled, state.recalled = state.recalled, None  # read with the step's operator messages
    if recalled is None:
        recalled = await state.store.notes.recalled_for(str(state.workspace.root))
    notes, left_out = recalled
    await refresh_derived(state, engine, notes)  # derived parts whose dependencies moved
    overflowed: tuple[tuple[Message, ...], ProviderError] | None = None
    refused = 0  # what the last request the server refused carried beside its frame (raw)

    async def build(attempt: int) -> Assembly:
        raw = raw_ceiling(ceiling, factor)
        if attempt == LADDER[-1]:  # carrying at most half of what the refused request did
            raw = max(1, min(raw, refused))
        return await engine.build(
            history, ceiling_tokens=raw, notes=notes, left_out=left_out,
            force_fold=attempt == 2,
            emergency=attempt == LADDER[-1],
        )  # fmt: skip

    await state.keep_tool_set()
    for attempt in LADDER:
        assembly = await build(attempt)
        tools = tool_tokens(assembly)
        dropped = 0 if state.calibration.counts_tools(*key) else tools
        frame = round((assembly.frame_tokens - dropped) * factor)
        if default_limit is not None and window is not None:
            limit = fit_output_limit(default_limit, window, frame)
        room = None if window is None or limit is None else window - limit - frame
        if room is not None and 0 < room < ceiling:  # the window is tighter than the ceiling
            ceiling = room
            assembly = await build(attempt)
        # which limit the ceiling is: the window's room (kept for the ladder's later rungs), or
        # the run's context ceiling (or what is left of its token budget)
        bound = "window" if room is not None and ceiling == room else "contract"
        estimate = Calibrated(assembly.total_est_tokens - dropped, factor)
        limits = Limits(ceiling, window, limit, room, bound, source)
        state.publish(
            EventKind.REQUEST_STARTED,
            {
                "attempt": attempt,
                "rung": assembly.rung,
                "ceiling_tokens": ceiling,
                "est_tokens": estimate.tokens,
                "frame_tokens": frame,
                "raw_est_tokens": estimate.raw,
                "factor": factor,
                "max_output_tokens": limit,
                "window_tokens": window,
            },
        )
        last = attempt == LADDER[-1]
        refusal = refuse(
            assembly,
            frame,
            estimate,
            ceiling,
            (limit, window),
            overflowed,
            state.contract.context.max_tokens,
        )
        if refusal is not None:
            unchanged = isinstance(refusal, LadderExhausted)  # this rung left it as refused
            if unchanged and last:
                refusal = LadderExhausted(f"{STOPPED}; {refusal.message}{_go_on(state)}")
                assembly = replace(assembly, rung=Rung.STOPPED)
            requests.append(
                request_record(state, assembly, estimate, limits, attempt, None, refusal)
            )
            telemetry.request(state.run_id, requests[-1], None)
            _failed(state, attempt, refusal, local=True)
            if unchanged and not last:
                continue  # climb to the next rung
            raise refusal
        started = time.monotonic()
        try:
            response = await stream(state, assembly, limit if default_limit else None)
        except asyncio.CancelledError:  # the run is cancelled mid-answer: what came is kept
            stopped = interrupted(state, started, limit)
            requests.append(
                request_record(state, assembly, estimate, limits, attempt, None, stopped)
            )
            raise
        except ProviderError as exc:
            overflow = exc.kind is ErrorKind.CONTEXT_OVERFLOW
            error = exc
            if overflow and last:
                error = LadderExhausted(
                    f"{STOPPED}: the prompt still does not fit after a forced fold and a bounded"
                    f" emergency compaction (~{estimate.tokens:,} tokens): {exc.message}"
                    + _go_on(state),
                    status=exc.status,
                    attempts=exc.attempts,
                )
                assembly = replace(assembly, rung=Rung.STOPPED)
            requests.append(request_record(state, assembly, estimate, limits, attempt, None, exc))
            telemetry.request(state.run_id, requests[-1], None)
            _failed(state, attempt, exc, partial=partial_json(exc.attempts))
            if not overflow:
                raise
            if not last:
                overflowed, refused = (assembly.messages, exc), assembly.est_tokens
                continue  # climb to the next rung
            raise error from exc
        cost = state.meter.price(
            assembly, state.history, response.usage, factor, _output_tokens(response)
        )
        if response.usage:
            counted = state.calibration.counts_tools(response.provider, response.model)
            state.calibration.observe(
                response.provider,
                response.model,
                assembly.total_est_tokens,
                response.usage.prompt_tokens,
                tools=tools,
            )
            if counted and not state.calibration.counts_tools(response.provider, response.model):
                say_tools_ignored(
                    state, (response.provider, response.model), count_says(response, tools)
                )
        requests.append(
            request_record(state, assembly, estimate, limits, attempt, response, None, cost)
        )
        await record_recall(state, assembly)
        telemetry.request(state.run_id, requests[-1], response)
        state.publish(
            EventKind.REQUEST_FINISHED,
            {
                "attempt": attempt,
                "reported_tokens": response.usage.prompt_tokens if response.usage else None,
                "usage": response.usage.to_json() if response.usage else None,
                "est_tokens": estimate.tokens,
                "latency_s": round(time.monotonic() - started, 3),
                "tool_calls": len(response.tool_calls),
                "cost": cost.to_json(),
                "stop_reason": response.stop_reason,
                "raw_stop_reason": response.finish_reason,
                "attempts": len(response.attempts),
            },
        )
        return response
    raise AssertionError("unreachable")


async def ask_pinned(
    state: RunState,
    pinned: PinnedRequest,
    operator_messages: tuple[str, ...],
    requests: list[RequestRecord],
) -> Response:
    """A fork's first completion: the recorded request ``pinned`` sent again as it was, with the
    operator's new messages after it (each as the context engine writes one), and recorded
    with the manifest it was recorded with, which says where it came from (``fork``)."""
    extra = tuple(Message("user", operator_line(m)) for m in operator_messages)
    messages = pinned.messages + extra
    limit = await fitted_limit(state, pinned.frame_tokens)
    request = completion_request(state, messages, pinned.stable_messages, limit)
    digest = state.tool_set()[0]
    recorded_tools = pinned.manifest.get("tools_digest")
    if recorded_tools is not None and recorded_tools != digest:
        state.publish(
            EventKind.WARNING,
            {
                "message": "the fork offers other tools than the request it repeats (MCP"
                " servers or skills changed): the provider's cache of its prefix is not reused"
            },
        )
    await state.keep_tool_set()
    state.publish(
        EventKind.REQUEST_STARTED,
        {
            "attempt": 1,
            "rung": pinned.manifest.get("rung"),
            "ceiling_tokens": pinned.ceiling_tokens,
            "est_tokens": pinned.est_tokens,
            "frame_tokens": pinned.frame_tokens,
            "fork_of": pinned.source,
        },
    )
    head = {k: v for k, v in pinned.manifest.items() if k != "entries"}
    head |= {
        "fork": {**pinned.source, "appended": list(operator_messages)},
        "tools_digest": digest,
        "cache_key": request.cache_key,
    }
    started = time.monotonic()
    response: Response | None = None
    error: ProviderError | None = None
    try:
        response = await stream_request(state, request)
    except asyncio.CancelledError:  # the run is cancelled mid-answer: what came is kept
        stopped = interrupted(state, started, request.max_output_tokens)
        requests.append(pinned_record(state, pinned, messages, head, None, stopped))
        raise
    except ProviderError as exc:
        error = exc
        _failed(state, 1, exc, partial=partial_json(exc.attempts))
    requests.append(pinned_record(state, pinned, messages, head, response, error))
    if error is not None:
        raise error
    assert response is not None
    keys = list(pinned.manifest.get("memory_keys") or ())
    if keys:
        await state.store.recalls.record(
            state.run_id, state.step, None, keys, str(state.workspace.root)
        )
    state.publish(
        EventKind.REQUEST_FINISHED,
        {
            "attempt": 1,
            "reported_tokens": response.usage.prompt_tokens if response.usage else None,
            "est_tokens": pinned.est_tokens,
            "latency_s": round(time.monotonic() - started, 3),
            "tool_calls": len(response.tool_calls),
            "stop_reason": response.stop_reason,
            "raw_stop_reason": response.finish_reason,
            "attempts": len(response.attempts),
        },
    )
    return response


def _output_tokens(response: Response) -> int:
    """The answer's tokens, estimated as its message would be sent back."""
    return message_tokens(Message("assistant", response.text, response.tool_calls))


async def fitted_limit(state: RunState, frame: int) -> int | None:
    """The answer's limit of a request whose frame is ``frame`` tokens: the provider's default
    fitted to the model's window (``fit_output_limit``) where the operator set none, else None
    (the provider's own)."""
    provider = state.harness.provider
    await discover_limits(provider)  # llama.cpp's /props, once
    limit, window = provider_limits(provider)
    if not fitted_output(provider) or limit is None or window is None:
        return None
    return fit_output_limit(limit, window, frame)


def pinned_record(
    state: RunState,
    pinned: PinnedRequest,
    messages: tuple[Message, ...],
    head: dict[str, Any],
    response: Response | None,
    error: ProviderError | None,
) -> RequestRecord:
    """A fork's first request as the trace keeps it, answered or not."""
    usage = response.usage if response else None
    attempts = response.attempts if response else tuple(error.attempts if error else ())
    return RequestRecord(
        step=state.step,
        attempt=1,
        purpose="work",
        ceiling_tokens=pinned.ceiling_tokens,
        est_tokens=pinned.est_tokens,
        frame_tokens=pinned.frame_tokens,
        reported_tokens=usage.prompt_tokens if usage else None,
        usage=usage.to_json() if usage else None,
        messages=[m.to_json() for m in messages],
        manifest={**head, "entries": pinned.manifest.get("entries", [])},
        attempts=[a.to_json() for a in attempts],
        provider=response.provider if response else state.harness.provider.name,
        model=response.model if response else state.harness.provider.model,
        error=str(error) if error else None,
    )


SERVER_SAYS = (
    "the server's chat template drops tool schemas (its /props says supports_tools: false)"
)


def count_says(response: Response, tools: int) -> str:
    """How the prompt count showed a server dropping the tool schemas."""
    reported = response.usage.prompt_tokens if response.usage else 0
    return (
        f"the server counted {reported:,} prompt tokens, about what the request is without its"
        f" ~{tools:,} tokens of tool schemas: its chat template drops them"
    )


def say_tools_ignored(state: RunState, key: tuple[str, str], why: str) -> None:
    """Once a run: the model did not receive the tools. Said in the transcript (a warning
    event), and the schemas are no longer counted in the frame (``Calibration``); each request
    then records it for the inspector (``tools_ignored`` in its manifest)."""
    state.calibration.tools_dropped.add(key)
    if state.tools_ignored_said:
        return
    state.tools_ignored_said = True
    state.publish(
        EventKind.WARNING,
        {
            "code": "tools_ignored",
            "message": f"the model did not receive the tools: {why}; it can only answer in"
            " text (use a model or chat template with tool support, e.g. llama-server --jinja"
            " with a tool-calling template)",
        },
    )


LADDER = (1, 2, 3)  # the attempts: as built, a forced fold, the emergency compaction
STOPPED = (
    "stopped safely before running any call of this step: the required state could not be"
    " preserved in the model's window"
)


def _go_on(state: RunState) -> str:
    return (
        f"; the run's state is kept: io-tui run --continue {state.run_id} starts a fresh run"
        " from its progress ledger (on a model with a larger window)"
    )


def _failed(  # the request_failed event
    state: RunState,
    attempt: int,
    error: ProviderError,
    *,
    local: bool = False,
    partial: dict[str, Any] | None = None,
) -> None:
    detail: dict[str, Any] = {"attempt": attempt, "error": str(error), "kind": error.kind.value}
    state.publish(
        EventKind.REQUEST_FAILED, detail | ({"local": True} if local else {"partial": partial})
    )


INTERRUPTED = "the run was cancelled while the answer streamed"


def interrupted(state: RunState, started: float, limit: int | None) -> ProviderError:
    """The request a cancel stopped mid-answer, as the trace keeps it: its one attempt, with
    the text it had streamed (``partial``)."""
    provider = state.harness.provider
    attempt = Attempt(
        provider=provider.name,
        model=provider.model,
        latency_s=time.monotonic() - started,
        error=INTERRUPTED,
        error_kind=ErrorKind.INTERRUPTED,
        partial_text=state.streamed,
        max_output_tokens=limit,
    )
    return ProviderError(
        ErrorKind.INTERRUPTED, INTERRUPTED, attempts=[attempt], partial=bool(state.streamed)
    )


def truncated_note(response: Response) -> str:
    """Why a run whose final answer was cut ends ``finished_truncated``."""
    limit = response.attempts[-1].max_output_tokens if response.attempts else None
    at = f" of {limit:,} tokens" if limit else ""
    return (
        f"the final answer was cut at the output limit{at} (stop reason"
        f" {response.finish_reason!r}); raise max_output_tokens (--max-output-tokens) and retry"
    )


def refuse(
    assembly: Assembly,
    frame: int,
    estimate: Calibrated,
    ceiling: int,
    limits: tuple[int | None, int | None],
    overflowed: tuple[tuple[Message, ...], ProviderError] | None,
    context_max: int | None = None,
) -> ProviderError | None:
    """Why a request is not sent, with the figures; None: send it.

    Its frame (which nothing folds) plus the answer's limit exceed the model's known window; or,
    a model's (it has an output ``limit``: a script has none, and no window) whose window is
    unknown, its frame alone exceeds the run's context ceiling (``context_max``:
    ``context_max_tokens``); or the server already found
    the prompt too long (``overflowed``: what was sent, and the error) and compaction left the
    request unchanged, or its frame alone exceeds the ceiling. (With the window known, the
    ceiling bounds what is beside the frame, so a larger frame that fits the window is sent.)
    """
    limit, window = limits
    parts = ", ".join(
        f"{s.name} ~{round(s.est_tokens * estimate.factor):,}" for s in assembly.sections if s.fixed
    )
    if window is not None and limit is not None and frame + limit > window:
        return ProviderError(
            ErrorKind.CONTEXT_OVERFLOW,
            f"refused before sending: the fixed frame (~{frame:,} tokens: {parts}) plus the"
            f" answer's limit of {limit:,} exceed the model's window of {window:,};"
            " lower max_output_tokens or trim the tools and instruction files",
        )
    if window is None and limit is not None and context_max is not None and frame > context_max:
        return ProviderError(
            ErrorKind.CONTEXT_OVERFLOW,
            f"refused before sending: the fixed frame alone (~{frame:,} tokens: {parts}) exceeds"
            f" the run's context ceiling of {context_max:,} tokens (context_max_tokens; the"
            " model's window is unknown), leaving no room for the task; raise"
            " --context-max-tokens or trim the tools and instruction files",
        )
    if overflowed is None:
        return None
    sent, error = overflowed
    why = f"not sent again: the server found the prompt too long ({error.message}), and"
    if sent == assembly.messages:
        return LadderExhausted(
            f"{why} compacting left it unchanged (~{estimate.tokens:,} tokens, of which the"
            f" frame is ~{frame:,}: {parts}); trim the frame or use a model with a larger window",
        )
    if frame > ceiling:
        return ProviderError(
            ErrorKind.CONTEXT_OVERFLOW,
            f"{why} the fixed frame alone is ~{frame:,} tokens ({parts}) against a ceiling of"
            f" {ceiling:,}, which no compaction shortens; trim the tools and instruction files,"
            " or use a model with a larger window",
        )
    return None


def partial_json(attempts: Sequence[Attempt]) -> dict[str, Any] | None:
    """What the last failed attempt had streamed before it failed, if anything."""
    last = attempts[-1] if attempts else None
    return last.to_json()["partial"] if last is not None and last.partial else None


async def stream(state: RunState, assembly: Assembly, limit: int | None = None) -> Response:
    """One working completion of ``assembly`` (``completion_request``), its answer's limit
    ``limit`` (None: the provider's own)."""
    return await stream_request(
        state, completion_request(state, assembly.messages, assembly.stable_messages, limit)
    )


def completion_request(
    state: RunState, messages: tuple[Message, ...], stable_messages: int, limit: int | None = None
) -> CompletionRequest:
    """A working request of ``messages``, its answer's limit ``limit`` (None: the provider's
    own). Its prompt-cache breakpoints end the frame (the manifest's stable/dynamic boundary,
    ``stable_messages``: never rewritten in a run) and the request (what the next one repeats
    while history is only appended to)."""
    ends = {stable_messages - 1, len(messages) - 1} - {-1}
    return CompletionRequest(
        messages=messages,
        tools=state.specs(),
        cache_breakpoints=tuple(sorted(ends)),
        cache_key=cache_key(state),
        max_output_tokens=limit,
    )


async def stream_request(state: RunState, request: CompletionRequest) -> Response:
    """One working completion; text deltas and retries are published as they come."""
    state.streamed = ""
    # (closed here: a stream left at its answer would be closed later by the garbage
    # collector's hook, its connection held until then, and the loop woken from a thread)
    async with aclosing(state.harness.provider.stream(request)) as events:
        async for event in events:
            if isinstance(event, TextDelta):
                state.streamed += event.text
                state.publish(EventKind.TEXT_DELTA, {"text": event.text})
            elif isinstance(event, Retrying):
                state.publish(
                    EventKind.REQUEST_RETRY,
                    {
                        "attempt": event.number,
                        "delay_s": round(event.delay_s, 3),
                        **event.attempt.to_json(),
                    },
                )
            elif isinstance(event, Completed):
                return event.response
    raise ProviderError(ErrorKind.MALFORMED, "stream ended without a response")


def cache_key(state: RunState) -> str:
    """One stable prompt-cache key per run (and store): OpenAI routes requests sharing it to the
    same cache. A fork keeps the key of the run it left from: its requests share that prefix."""
    return state.cache_key or run_cache_key(str(state.store.path), state.run_id)


@lru_cache(maxsize=256)  # asked every request, of the few runs a process drives
def run_cache_key(store: str, run_id: int) -> str:
    return "io-tui-" + hashlib.sha256(f"{store}:{run_id}".encode()).hexdigest()[:16]


class Limits(NamedTuple):
    """What bounded one request: its ceiling, the model's window and the answer's reserved
    output budget (None: unknown), the room the window leaves beside the frame and the output
    budget, which of the two limits the ceiling is (``window`` or ``contract``), and where the
    window came from (``config``, ``preset``, ``server``; None: unknown)."""

    ceiling: int
    window: int | None
    max_output: int | None
    room: int | None
    bound: str
    source: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "window_tokens": self.window,
            "window_source": self.source,
            "max_output_tokens": self.max_output,
            "room_tokens": self.room,
            "ceiling_bound": self.bound,
        }


def request_record(
    state: RunState,
    assembly: Assembly,
    estimate: Calibrated,
    limits: Limits,
    attempt: int,
    response: Response | None,
    error: ProviderError | None,
    cost: RequestCost | None = None,
) -> RequestRecord:
    """The request as stored: its token figures calibrated (comparable with the reported
    usage); the manifest keeps the engine's raw figures, and says how they were calibrated,
    the window and output budget that bounded it (``limits``), and, answered, what it cost
    with caching beside re-sending everything (``cost``)."""
    usage = response.usage if response else None
    attempts = response.attempts if response else tuple(error.attempts if error else ())
    ceiling = limits.ceiling
    derived = state.derived.versions()  # what its derived parts were built from
    head = assembly.manifest_head(derived, sections=False)
    head["limits"] = limits.to_json()
    head["derived"] = derived
    head["tools_digest"] = state.tool_set()[0]  # the schemas it offered (``store.tool_sets``)
    head["cache_key"] = cache_key(state)
    frame = estimate.raw - assembly.est_tokens  # less the tool schemas a server drops
    head["calibration"] = {
        "ceiling_tokens": ceiling,
        **estimate.to_json(),
        "tools_counted": frame == assembly.frame_tokens,
    }
    key = (response.provider, response.model) if response else _key(state)
    said = tools_ignored(state.harness.provider) or not state.calibration.counts_tools(*key)
    if said and state.specs():
        head["tools_ignored"] = True  # the model did not receive the tools (say_tools_ignored)
    head["cost"] = cost.to_json() if cost is not None else None
    return RequestRecord(
        step=state.step,
        attempt=attempt,
        purpose="work",
        ceiling_tokens=ceiling,
        est_tokens=estimate.tokens,
        frame_tokens=round(frame * estimate.factor),
        reported_tokens=usage.prompt_tokens if usage else None,
        usage=usage.to_json() if usage else None,
        messages=state.messages_json.encode(assembly.messages),
        manifest=manifest_text(
            head,
            state.entries_json.encode(assembly.entries),
            state.sections_json.encode(assembly.labelled_sections(derived)),
        ),
        attempts=[a.to_json() for a in attempts],
        provider=response.provider if response else state.harness.provider.name,
        model=response.model if response else state.harness.provider.model,
        error=str(error) if error else None,
    )


def _key(state: RunState) -> tuple[str, str]:
    provider = state.harness.provider
    return state.calibration.next_key(provider.name, provider.model)


async def summarize(state: RunState, request: CompletionRequest) -> str:
    """The context engine's summarizer: one summary completion, recorded, priced and charged
    to the run; the run's ``PreCompact`` hooks hear of it first. A request that repeats the
    last working request to share its prompt cache (``cache_breakpoints``) goes with the run's
    cache key, as working requests do."""
    if state.hooks is not None and state.hooks.has("PreCompact"):
        await state.hooks.pre_compact("auto")
    shared = bool(request.cache_breakpoints)
    if shared:
        request = replace(request, cache_key=cache_key(state))
    started = time.monotonic()
    response = await complete(state.harness.provider, request)
    usage = response.usage
    est = sum(message_tokens(m) for m in request.messages) + schema_tokens(request.tools)
    tokens = usage.total if usage else est
    state.charge(tokens)
    factor = state.calibration.factor(*_key(state))
    output = usage.completion_tokens if usage else estimate_tokens(response.text)
    cost = state.meter.price_summary(request.messages, est, usage, factor, output, shared=shared)
    await state.store.runs.add_request(
        state.run_id,
        RequestRecord(
            step=state.step,
            attempt=0,
            purpose="summary",
            ceiling_tokens=0,
            est_tokens=est,
            frame_tokens=0,
            reported_tokens=usage.prompt_tokens if usage else None,
            usage=usage.to_json() if usage else None,
            messages=[m.to_json() for m in request.messages],
            manifest={"cost": cost.to_json(), "shared": shared},
            attempts=[a.to_json() for a in response.attempts],
            provider=response.provider,
            model=response.model,
            error=None,
        ),
        fence=state.fence,
    )
    state.publish(
        EventKind.COMPACTED,
        {"summary_tokens": tokens, "latency_s": round(time.monotonic() - started, 3)},
    )
    return response.text


# -- tokens --


def tool_tokens(assembly: Assembly) -> int:
    """The tool schemas' share of the frame's estimate."""
    return sum(s.est_tokens for s in assembly.sections if s.name == "tools")


def request_tokens(request: RequestRecord) -> int:
    if request.usage:
        return int(request.usage.get("prompt_tokens", 0)) + int(
            request.usage.get("completion_tokens", 0)
        )
    return request.est_tokens


# -- memory recall --


async def record_recall(state: RunState, assembly: Assembly) -> None:
    if not assembly.memory_keys:
        return
    resolved = await state.store.recalls.record(
        state.run_id, state.step, None, list(assembly.memory_keys), str(state.workspace.root)
    )
    state.publish(
        EventKind.MEMORY,
        {"op": "recall", "keys": list(assembly.memory_keys), "resolved": resolved},
    )
