"""The model request path of a run: building its context engine (skills, instructions, tool
schemas, stale-read refresh, the disk probe, summaries), asking the model for one working completion, and
recording each request and its tokens.

Plain functions over a ``Run``; the loop in ``run.py`` calls ``build_engine`` once and
``ask_model`` each step.
"""

from __future__ import annotations

import hashlib
import time
from functools import partial
from typing import TYPE_CHECKING, Any

from io_tui.core.context import (
    Assembly,
    ContextEngine,
    Frame,
    InstructionFile,
    RefreshFailed,
    Summary,
)
from io_tui.core.contract import estimate_tokens
from io_tui.core.events import EventKind
from io_tui.core.instructions import load_instructions, oversized
from io_tui.core.ledger import Observation, StepRecord
from io_tui.core.memory import MemoryNote
from io_tui.core.policy import Act, Effect
from io_tui.core.providers.base import (
    Completed,
    CompletionRequest,
    ErrorKind,
    ProviderError,
    Response,
    TextDelta,
    ToolSpec,
)
from io_tui.core.skills import ReadSkill, catalogue, discover_async
from io_tui.core.store import RequestRecord
from io_tui.core.store.encoded import manifest_text
from io_tui.core.tokens import Calibrated, raw_ceiling
from io_tui.core.tools.base import ToolError
from io_tui.paths import bundled_dir, config_dir

if TYPE_CHECKING:
    from io_tui.core.run import Run


# -- the context engine --


async def build_engine(run: Run) -> ContextEngine:
    """Load skills and instructions, fix the frame, and wire refresh and summaries to the run."""
    await load_skills(run)
    run.tool_specs = None
    frame = Frame(
        system_prompt=run.system_prompt,
        tools=specs(run),
        contract=run.contract,
        instructions=await instructions(run),
    )
    summaries = [Summary(s, t) for s, t in await run.store.runs.summaries(run.run_id)]

    async def on_summary(summary: Summary) -> None:
        await run.store.runs.add_summary(run.run_id, summary.through_step, summary.text)
        run.emit(
            EventKind.COMPACTED,
            {"through_step": summary.through_step, "chars": len(summary.text)},
        )

    return ContextEngine(
        frame,
        refresh=partial(refresh_stale_read, run),
        probe=run.workspace.changed,
        summarize=partial(summarize, run),
        summaries=summaries,
        on_summary=on_summary,
    )


async def instructions(run: Run) -> tuple[InstructionFile, ...]:
    """AGENTS.md / CLAUDE.md, carried whole; a warning event when one is oversized."""
    found = await load_instructions(run.workspace.root)
    ceiling = run.contract.context.ceiling(remaining_tokens(run))
    for warning in oversized(found, ceiling):
        run.emit(EventKind.WARNING, {"message": warning})
    return found


async def load_skills(run: Run) -> None:
    skills = await discover_async(
        run.workspace.root, bundled=bundled_dir("skills"), user=config_dir() / "skills"
    )
    if skills:
        run.registry.register(ReadSkill(skills), replace=True)
        run.system_prompt = f"{run.h.system_prompt}\n\n{catalogue(skills)}"


def specs(run: Run) -> tuple[ToolSpec, ...]:
    """The tools' schemas, generated once: the registry is fixed after skills load."""
    if run.tool_specs is None:
        run.tool_specs = run.registry.specs()
    return run.tool_specs


async def refresh_stale_read(run: Run, obs: Observation) -> str:
    """The current result of a stale read (re-read through the same policy and containment as
    any read), grep or find (the same call run again)."""
    if obs.tool in ("grep", "find"):
        return await _run_again(run, obs, _arguments(run, obs))
    verdict = run.h.policy.explain(Act.READ, obs.target)
    if verdict.effect is not Effect.ALLOW:
        raise RefreshFailed(
            f"policy says {verdict.effect.value} for read ({verdict.rule_text}, layer {verdict.layer})"
        )
    arguments: dict[str, Any] = {"path": obs.target}
    if obs.span.startswith("lines "):
        first, _, last = obs.span[6:].partition("-")
        arguments["offset"] = int(first)
        if last:
            arguments["limit"] = int(last) - int(first) + 1
    return await _run_again(run, obs, arguments, "read_file")


def _arguments(run: Run, obs: Observation) -> dict[str, Any]:
    """The arguments of the call that made ``obs``."""
    for record in reversed(run.history):
        if record.step == obs.step:
            for call in record.tool_calls:
                if call.id == obs.call_id:
                    return dict(call.arguments)
    raise RefreshFailed(f"the call of step {obs.step}'s {obs.tool} is not in the history")


async def _run_again(
    run: Run, obs: Observation, arguments: dict[str, Any], name: str | None = None
) -> str:
    tool = run.registry.get(name or obs.tool)
    ctx = run.tool_context(run.step)
    try:
        outcome = await tool.run(tool.parse(arguments), ctx)
    except ToolError as exc:
        raise RefreshFailed(str(exc)) from None
    if outcome.is_error:
        raise RefreshFailed(outcome.text)
    return outcome.text


# -- one working completion --


async def ask_model(
    run: Run,
    engine: ContextEngine,
    operator_messages: tuple[str, ...],
    requests: list[RequestRecord],
) -> Response:
    """One working completion, with one forced fold and retry on context overflow.

    Every attempt, failed or not, is appended to ``requests`` for the step's commit.
    """
    ceiling = run.contract.context.ceiling(remaining_tokens(run))
    key = run.calibration.next_key(run.h.provider.name, run.h.provider.model)
    factor = run.calibration.factor(*key)
    history = [*run.history, StepRecord(run.step, "", operator_messages=operator_messages)]
    notes = await memory_notes(run)
    for attempt in (1, 2):
        assembly = await engine.build(
            history,
            ceiling_tokens=raw_ceiling(ceiling, factor),
            notes=notes,
            force_fold=attempt == 2,
        )
        tools = tool_tokens(assembly)
        dropped = 0 if run.calibration.counts_tools(*key) else tools
        estimate = Calibrated(assembly.total_est_tokens - dropped, factor)
        run.emit(
            EventKind.REQUEST_STARTED,
            {
                "attempt": attempt,
                "ceiling_tokens": ceiling,
                "est_tokens": estimate.tokens,
                "frame_tokens": round((assembly.frame_tokens - dropped) * factor),
                "raw_est_tokens": estimate.raw,
                "factor": factor,
            },
        )
        started = time.monotonic()
        try:
            response = await stream(run, assembly, len(engine.frame_parts()[0]))
        except ProviderError as exc:
            requests.append(request_record(run, assembly, estimate, ceiling, attempt, None, exc))
            run.emit(
                EventKind.REQUEST_FAILED,
                {"attempt": attempt, "error": str(exc), "kind": exc.kind.value},
            )
            if exc.kind is ErrorKind.CONTEXT_OVERFLOW and attempt == 1:
                continue
            raise
        requests.append(request_record(run, assembly, estimate, ceiling, attempt, response, None))
        if response.usage:
            run.calibration.observe(
                response.provider,
                response.model,
                assembly.total_est_tokens,
                response.usage.prompt_tokens,
                tools=tools,
            )
        await record_recall(run, assembly)
        run.emit(
            EventKind.REQUEST_FINISHED,
            {
                "attempt": attempt,
                "reported_tokens": response.usage.prompt_tokens if response.usage else None,
                "est_tokens": estimate.tokens,
                "latency_s": round(time.monotonic() - started, 3),
                "tool_calls": len(response.tool_calls),
            },
        )
        return response
    raise AssertionError("unreachable")


async def stream(run: Run, assembly: Assembly, frame_messages: int) -> Response:
    """One working completion. Its prompt-cache breakpoints end the frame (never rewritten in a
    run) and the request (what the next one repeats while history is only appended to)."""
    ends = {frame_messages - 1, len(assembly.messages) - 1} - {-1}
    request = CompletionRequest(
        messages=assembly.messages,
        tools=specs(run),
        cache_breakpoints=tuple(sorted(ends)),
        cache_key=cache_key(run),
    )
    async for event in run.h.provider.stream(request):
        if isinstance(event, TextDelta):
            run.emit(EventKind.TEXT_DELTA, {"text": event.text})
        elif isinstance(event, Completed):
            return event.response
    raise ProviderError(ErrorKind.MALFORMED, "stream ended without a response")


def cache_key(run: Run) -> str:
    """One stable prompt-cache key per run (and store): OpenAI routes requests sharing it to the
    same cache."""
    return "io-tui-" + hashlib.sha256(f"{run.store.path}:{run.run_id}".encode()).hexdigest()[:16]


def request_record(
    run: Run,
    assembly: Assembly,
    estimate: Calibrated,
    ceiling: int,
    attempt: int,
    response: Response | None,
    error: ProviderError | None,
) -> RequestRecord:
    """The request as stored: its token figures calibrated (comparable with the reported
    usage); the manifest keeps the engine's raw figures, and says how they were calibrated."""
    usage = response.usage if response else None
    attempts = response.attempts if response else tuple(error.attempts if error else ())
    head = assembly.manifest_head()
    frame = estimate.raw - assembly.est_tokens  # less the tool schemas a server drops
    head["calibration"] = {
        "ceiling_tokens": ceiling,
        **estimate.to_json(),
        "tools_counted": frame == assembly.frame_tokens,
    }
    return RequestRecord(
        step=run.step,
        attempt=attempt,
        purpose="work",
        ceiling_tokens=ceiling,
        est_tokens=estimate.tokens,
        frame_tokens=round(frame * estimate.factor),
        reported_tokens=usage.prompt_tokens if usage else None,
        usage=usage.to_json() if usage else None,
        messages=run.messages_json.encode(assembly.messages),
        manifest=manifest_text(head, run.entries_json.encode(assembly.entries)),
        attempts=[a.to_json() for a in attempts],
        provider=response.provider if response else run.h.provider.name,
        model=response.model if response else run.h.provider.model,
        error=str(error) if error else None,
    )


async def summarize(run: Run, request: CompletionRequest) -> str:
    """The context engine's summarizer: one summary completion, recorded and charged to the run."""
    started = time.monotonic()
    response: Response | None = None
    async for event in run.h.provider.stream(request):
        if isinstance(event, Completed):
            response = event.response
    if response is None:
        raise ProviderError(ErrorKind.MALFORMED, "summary stream ended without a response")
    usage = response.usage
    tokens = usage.total if usage else sum(estimate_tokens(m.content) for m in request.messages)
    run.tokens += tokens
    run.extra_tokens += tokens
    await run.store.runs.add_request(
        run.run_id,
        RequestRecord(
            step=run.step,
            attempt=0,
            purpose="summary",
            ceiling_tokens=0,
            est_tokens=sum(estimate_tokens(m.content) for m in request.messages),
            frame_tokens=0,
            reported_tokens=usage.prompt_tokens if usage else None,
            usage=usage.to_json() if usage else None,
            messages=[m.to_json() for m in request.messages],
            manifest={},
            attempts=[a.to_json() for a in response.attempts],
            provider=response.provider,
            model=response.model,
            error=None,
        ),
    )
    run.emit(
        EventKind.COMPACTED,
        {"summary_tokens": tokens, "latency_s": round(time.monotonic() - started, 3)},
    )
    return response.text


# -- tokens --


def tool_tokens(assembly: Assembly) -> int:
    """The tool schemas' share of the frame's estimate."""
    return sum(s.est_tokens for s in assembly.sections if s.name == "tools")


def remaining_tokens(run: Run) -> int | None:
    budget = run.contract.token_budget
    return None if budget is None else max(0, budget - run.tokens)


def request_tokens(request: RequestRecord) -> int:
    if request.usage:
        return int(request.usage.get("prompt_tokens", 0)) + int(
            request.usage.get("completion_tokens", 0)
        )
    return request.est_tokens


# -- memory recall --


async def memory_notes(run: Run) -> list[MemoryNote]:
    return await run.store.memory.notes_for(str(run.workspace.root))


async def record_recall(run: Run, assembly: Assembly) -> None:
    if not assembly.memory_keys:
        return
    resolved = await run.store.memory.record_recall(
        run.run_id, run.step, None, list(assembly.memory_keys), str(run.workspace.root)
    )
    run.emit(
        EventKind.MEMORY,
        {"op": "recall", "keys": list(assembly.memory_keys), "resolved": resolved},
    )
