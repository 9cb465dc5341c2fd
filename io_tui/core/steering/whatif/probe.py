"""Sending a "what if": one recorded request of a run, changed (``edits``), sent again to the
same provider or another, the answer kept beside the recorded one. Nothing is executed: the
tool calls it proposes are shown and stored, never run.

The request goes out with the tools it recorded (``store.tool_sets``; a request recorded
before they were kept gets the harness's built-ins, and says so) and its prompt-cache key, so
an unchanged prefix can come from the provider's cache. Each probe is stored with the run:
what was changed, the messages sent, the answer, its usage, how long it took. A batch sends
each variant N times (the recorded request unchanged among them, as the baseline) and counts
how often the answer's first tool call differs from the recorded one's, so a real effect can be
told from sampling noise.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from io_tui.core.contract import contract_from_json
from io_tui.core.prices import CachePrices
from io_tui.core.providers.base import (
    Completed,
    CompletionRequest,
    Provider,
    ProviderError,
    Response,
    TextDelta,
    ToolSpec,
)
from io_tui.core.providers.messages import Message, ToolCall
from io_tui.core.run.harness import harness_registry
from io_tui.core.run.model_turn import run_cache_key
from io_tui.core.steering.whatif.edits import (
    AS_RECORDED,
    EditError,
    Recorded,
    Variant,
    apply_variant,
    memory_block,
)
from io_tui.core.store import Store
from io_tui.core.store.probes import NewProbe, ProbeRow
from io_tui.core.store.requests import RequestRow

MAX_REPEAT = 50


class ProbeError(Exception):
    """A probe that cannot be sent: one line saying why."""


@dataclass(frozen=True, slots=True)
class Answer:
    """What a model answered (or the recorded step said): its text, its proposed tool calls,
    its usage, and an error instead when the request failed."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    usage: dict[str, Any] | None
    stop_reason: str | None = None
    error: str | None = None

    @property
    def first_call(self) -> str | None:
        """The first proposed call as ``name {arguments}`` (None: it proposed none)."""
        if not self.tool_calls:
            return None
        call = self.tool_calls[0]
        return f"{call.name} {json.dumps(call.arguments, sort_keys=True)}"

    @property
    def first_tool(self) -> str | None:
        return self.tool_calls[0].name if self.tool_calls else None

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tool_calls": [c.to_json() for c in self.tool_calls],
            "stop_reason": self.stop_reason,
            "error": self.error,
        }


@dataclass(frozen=True, slots=True)
class Baseline:
    """The recorded request a probe starts from, and the recorded answer to it."""

    run_id: int
    step: int
    request: RequestRow
    answer: Answer
    recorded: dict[str, Recorded]
    tools: tuple[ToolSpec, ...]
    tools_note: str  # where the tools came from
    prices: CachePrices
    cache_key: str

    @property
    def messages(self) -> tuple[Message, ...]:
        return tuple(Message.from_json(m) for m in self.request.messages)

    @property
    def stable_messages(self) -> int:
        boundary = self.request.manifest.get("boundary") or {}
        return int(boundary.get("stable_messages", 0))

    @property
    def entries(self) -> list[dict[str, Any]]:
        """The request's manifest entries: each call's result, its state, kind and target."""
        return [e for e in self.request.manifest.get("entries", []) if e.get("call_id")]

    @property
    def memory(self) -> str | None:
        """The memory block the request carried (None: it carried none)."""
        return memory_block(self.messages)

    @property
    def cost(self) -> dict[str, float]:
        """What the recorded answer cost, weighed as a probe's is (``cost``)."""
        return cost(self.answer.usage, self.prices)


@dataclass(frozen=True, slots=True)
class Probe:
    """One probe sent: its stored row, the variant, the answer, its cost."""

    row: ProbeRow
    variant: Variant
    answer: Answer
    changes: list[dict[str, Any]]
    cost: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        return {**self.row.to_json(), "cost": self.cost}


async def baseline(store: Store, run_id: int, step: int) -> Baseline:
    """The recorded request of ``run_id``'s ``step`` and what the model answered it."""
    run = await store.runs.get(run_id)
    if run is None:
        raise ProbeError(f"no run {run_id} in the store")
    request = await store.trace.answered_request(run_id, step)
    if request is None:
        raise ProbeError(f"run {run_id} recorded no working request at step {step}")
    steps = {s.step: s for s in await store.trace.steps(run_id)}
    answered = steps.get(step)
    answer = Answer(
        answered.text if answered else "",
        tuple(answered.tool_calls) if answered else (),
        request.usage,
        (request.attempts[-1] if request.attempts else {}).get("stop_reason"),
        request.error,
    )
    recorded: dict[str, Recorded] = {}
    for obs in await store.trace.observations(run_id):
        owner = steps.get(obs.step)
        call = next((c for c in owner.tool_calls if c.id == obs.call_id), None) if owner else None
        if owner is not None and call is not None and obs.step < step:
            recorded[obs.call_id] = Recorded(obs.step, call, owner.text, obs.text)
    tools, note = await _tools(store, request)
    contract = contract_from_json(run.contract)
    key = request.manifest.get("cache_key") or run_cache_key(str(store.path), run_id)
    return Baseline(run_id, step, request, answer, recorded, tools, note, contract.cache, str(key))


async def _tools(store: Store, request: RequestRow) -> tuple[tuple[ToolSpec, ...], str]:
    digest = request.manifest.get("tools_digest")
    if digest:
        specs = await store.tool_sets.get(str(digest))
        if specs is not None:
            return tuple(ToolSpec.from_json(s) for s in specs), "the tools it offered"
    return (
        harness_registry().specs(),
        "the harness's built-in tools (the request was recorded without its tool set)",
    )


def variant_request(
    base: Baseline, variant: Variant
) -> tuple[CompletionRequest, list[dict[str, Any]]]:
    """The request ``variant`` sends, and each change it made; ``ProbeError`` when an edit does
    not apply."""
    try:
        messages, changes = apply_variant(
            base.messages,
            base.request.manifest.get("entries", []),
            variant,
            base.recorded,
            base.stable_messages,
        )
    except EditError as exc:
        raise ProbeError(str(exc)) from None
    ends = {base.stable_messages - 1, len(messages) - 1} - {-1}
    request = CompletionRequest(
        messages=messages,
        tools=base.tools,
        cache_breakpoints=tuple(sorted(ends)),
        cache_key=base.cache_key,
    )
    return request, changes


OnText = Callable[[str], Awaitable[None] | None]


async def send_probe(
    store: Store,
    base: Baseline,
    variant: Variant,
    provider: Provider,
    *,
    batch: str | None = None,
    on_text: OnText | None = None,
) -> Probe:
    """Send ``variant`` of ``base`` to ``provider``, store the probe, return it. A provider
    error is the probe's answer (stored too), never raised: a batch goes on."""
    request, changes = variant_request(base, variant)
    started = time.monotonic()
    response: Response | None = None
    error: str | None = None
    try:
        # (closed however it ends: a probe cancelled while its text is shown holds no stream)
        async with aclosing(provider.stream(request)) as events:
            async for event in events:
                if isinstance(event, TextDelta) and on_text is not None:
                    said = on_text(event.text)
                    if said is not None:
                        await said
                elif isinstance(event, Completed):
                    response = event.response
        if response is None:
            error = "the stream ended without a response"
    except ProviderError as exc:
        error = str(exc)
    latency = round(time.monotonic() - started, 3)
    usage = response.usage.to_json() if response is not None and response.usage else None
    answer = Answer(
        response.text if response else "",
        response.tool_calls if response else (),
        usage,
        response.stop_reason if response else None,
        error,
    )
    model = response.model if response else provider.model
    row_id = await store.probes.add(
        NewProbe(
            run_id=base.run_id,
            step=base.step,
            request_id=base.request.id,
            batch=batch,
            variant=variant.name,
            changes=[{"variant": variant.to_json()}, *changes],
            provider=provider.describe(),
            model=model,
            messages=[m.to_json() for m in request.messages],
            tools_digest=base.request.manifest.get("tools_digest"),
            answer=answer.to_json(),
            usage=usage,
            error=error,
            latency_s=latency,
        )
    )
    row = await store.probes.get(row_id)
    assert row is not None
    return Probe(row, variant, answer, changes, cost(usage, base.prices))


def cost(usage: dict[str, Any] | None, prices: CachePrices) -> dict[str, float]:
    """What an answer cost in tokens: the prompt weighted by the cache prices (uncached, read
    and written tokens, as an uncached-token equivalent) and the answer's tokens."""
    if not usage:
        return {}
    prompt = int(usage.get("prompt_tokens", 0))
    read = int(usage.get("cache_read_tokens", 0))
    written = int(usage.get("cache_write_tokens", 0))
    weighted = (
        max(0, prompt - read - written) * prices.uncached
        + read * prices.read
        + written * prices.write
    )
    return {
        "prompt_tokens": prompt,
        "completion_tokens": int(usage.get("completion_tokens", 0)),
        "cache_read_tokens": read,
        "prompt_equivalent": round(weighted, 1),
    }


@dataclass
class Tally:
    """A batch's answers to one variant: how often the first proposed call differs from the
    recorded answer's (by tool, and by tool and arguments), and each first call's count."""

    variant: str
    answers: int = 0
    errors: int = 0
    other_tool: int = 0
    other_call: int = 0
    first_calls: Counter[str] = field(default_factory=Counter)

    def to_json(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "answers": self.answers,
            "errors": self.errors,
            "first_tool_differs": self.other_tool,
            "first_call_differs": self.other_call,
            "first_calls": dict(self.first_calls.most_common()),
        }


@dataclass(frozen=True, slots=True)
class Batch:
    id: str
    recorded: Answer
    tallies: tuple[Tally, ...]
    probes: tuple[Probe, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "batch": self.id,
            "recorded_first_call": self.recorded.first_call,
            "variants": [t.to_json() for t in self.tallies],
            "probes": [p.row.id for p in self.probes],
        }


async def send_batch(
    store: Store,
    base: Baseline,
    variants: Sequence[Variant],
    provider: Provider,
    repeat: int,
    *,
    on_probe: Callable[[Probe], None] | None = None,
) -> Batch:
    """Each of ``variants`` (the recorded request, unchanged, first: the baseline) sent
    ``repeat`` times; how often each one's first proposed call differs from the recorded one's."""
    if not 1 <= repeat <= MAX_REPEAT:
        raise ProbeError(f"a batch sends each variant 1–{MAX_REPEAT} times, not {repeat}")
    for variant in variants:
        variant_request(base, variant)  # every edit applies before anything is sent
    batch = uuid.uuid4().hex[:10]
    everything = [AS_RECORDED, *(v for v in variants if not v.empty)]
    tallies: list[Tally] = []
    probes: list[Probe] = []
    for variant in everything:
        tally = Tally(variant.name)
        for _ in range(repeat):
            probe = await send_probe(store, base, variant, provider, batch=batch)
            probes.append(probe)
            if on_probe is not None:
                on_probe(probe)
            _count(tally, probe.answer, base.answer)
        tallies.append(tally)
    return Batch(batch, base.answer, tuple(tallies), tuple(probes))


def _count(tally: Tally, answer: Answer, recorded: Answer) -> None:
    if answer.error is not None:
        tally.errors += 1
        return
    tally.answers += 1
    tally.first_calls[answer.first_call or "(no tool call)"] += 1
    if answer.first_tool != recorded.first_tool:
        tally.other_tool += 1
    if answer.first_call != recorded.first_call:
        tally.other_call += 1


async def run_provider(store: Store, run_id: int) -> Provider:
    """The provider run ``run_id`` recorded, made again (with its origin's timeout and
    retries): what a probe is sent to unless another is named."""
    from io_tui.core.providers.factory import provider_from_description
    from io_tui.core.run.origin import RunOrigin

    run = await store.runs.get(run_id)
    if run is None:
        raise ProbeError(f"no run {run_id} in the store")
    origin = RunOrigin.from_json(run.origin)
    try:
        return provider_from_description(
            run.provider, settings=origin.settings if origin is not None else None
        )
    except ValueError as exc:
        raise ProbeError(f"run {run_id}'s provider cannot be made again: {exc}") from None


async def reopen_probe(store: Store, probe_id: int) -> tuple[Probe, Baseline]:
    """A stored probe as it was sent and answered, with the recorded request it changed."""
    row = await store.probes.get(probe_id)
    if row is None:
        raise ProbeError(f"no probe {probe_id} in the store")
    base = await baseline(store, row.run_id, row.step)
    said = row.answer or {}
    answer = Answer(
        str(said.get("text", "")),
        tuple(ToolCall.from_json(c) for c in said.get("tool_calls") or ()),
        row.usage,
        said.get("stop_reason"),
        row.error,
    )
    changes = [c for c in row.changes if "op" in c]
    variant: dict[str, Any] = next(
        (c["variant"] for c in row.changes if "variant" in c), {"name": row.variant}
    )
    kept = Variant(
        variant.get("name", row.variant),
        tuple(variant.get("restore", ())),
        tuple(variant.get("drop", ())),
        dict(variant.get("edit", {})),
        variant.get("memory"),
    )
    return Probe(row, kept, answer, changes, cost(row.usage, base.prices)), base
