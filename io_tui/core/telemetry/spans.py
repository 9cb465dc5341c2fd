"""Run events as OpenTelemetry spans and metrics, after the GenAI semantic conventions:
``invoke_agent io-tui`` per run (a resumed run's segment nests under its first), ``step N``
under it, ``chat {model}`` per model request and ``execute_tool {name}`` per tool call under
their step, a sub-agent's run under the ``execute_tool spawn_agent`` call that started it, and
a hook's run (``hook {event}``) under what it was run for; io-tui's own attributes under
``io_tui.``.

Why built from events: every run announces what it does as ``RunEvent``s (DESIGN §1), in the
process that drives it, so the exporter sees the TUI's runs, the CLI's, ACP's and a queue
worker's alike without a line in their hosts. Each span is opened and closed at its events'
times. This module imports OpenTelemetry, and is imported only when export is on.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.trace import (
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    Tracer,
    set_span_in_context,
)

from io_tui.core.boundary.untrusted import redact
from io_tui.core.events import EventKind, RunEvent
from io_tui.core.telemetry import attributes as attrs
from io_tui.core.telemetry.context import RunTrace

if TYPE_CHECKING:
    from io_tui.core.telemetry.metrics import Instruments

AGENT_NAME = "io-tui"
_FAILED = frozenset({"failed", "cancelled"})


class ChosenIds(RandomIdGenerator):
    """Random ids, except the next one asked for when one was chosen: a run's first span takes
    the span id (and, at a trace's root, the trace id) its ``run_started`` recorded."""

    def __init__(self) -> None:
        self.span_id: int | None = None
        self.trace_id: int | None = None

    def generate_span_id(self) -> int:
        chosen, self.span_id = self.span_id, None
        return chosen if chosen is not None else super().generate_span_id()

    def generate_trace_id(self) -> int:
        chosen, self.trace_id = self.trace_id, None
        return chosen if chosen is not None else super().generate_trace_id()


@dataclass
class _Call:
    span: Span
    name: str
    asked_at: float | None = None


@dataclass
class _Run:
    """The spans one run has open in this process."""

    run_id: int
    trace: RunTrace
    agent: Span
    conversation: str
    provider: str
    model: str
    step: int = 0
    step_span: Span | None = None
    chat: Span | None = None
    chat_at: float = 0.0
    chat_record: bool = False  # the open request's record was seen (usage set)
    calls: dict[str, _Call] = field(default_factory=dict)
    approvals: dict[int, str] = field(default_factory=dict)  # approval id → call id
    last_call: str | None = None
    counts: dict[str, int] = field(
        default_factory=lambda: {"requests": 0, "tool_calls": 0, "input": 0, "output": 0}
    )
    cost: dict[str, attrs.AttributeValue] = field(default_factory=dict)


def _ns(at: float) -> int:
    return int(at * 1_000_000_000)


class SpanBuilder:
    """Turns each run's events into spans as they come (``emit``), with what the events do not
    carry handed in beside them: a request's record (``request``), a call's result text
    (``tool_result``, with content capture)."""

    def __init__(
        self,
        tracer: Tracer,
        ids: ChosenIds,
        instruments: Instruments | None,
        *,
        capture_content: bool,
    ) -> None:
        self.tracer = tracer
        self.ids = ids
        self.instruments = instruments
        self.capture = capture_content
        self.runs: dict[int, _Run] = {}
        self.children: dict[int, tuple[Context, str]] = {}  # sub-agent → its call's span, conv.

    # -- events --

    def emit(self, event: RunEvent) -> None:
        handler = self._handlers.get(event.kind)
        if handler is not None:
            handler(self, event)

    def _started(self, event: RunEvent) -> None:
        detail = event.detail
        trace = RunTrace.from_json(detail.get("trace"))
        if trace is None or event.run_id in self.runs:
            return
        resumed = event.kind is EventKind.RUN_RESUMED
        linked = self.children.get(event.run_id)
        parent: Context | None
        if linked is not None:
            parent, conversation = linked
        else:
            conversation = str(detail.get("session") or f"io-tui-run-{event.run_id}")
            parent = _remote(trace.trace_id, trace.span_id if resumed else trace.parent_span_id)
        if not resumed:
            self.ids.span_id = int(trace.span_id, 16)
            if parent is None:
                self.ids.trace_id = int(trace.trace_id, 16)
        provider, model = str(detail.get("provider") or ""), str(detail.get("model") or "")
        span = self.tracer.start_span(
            f"invoke_agent {AGENT_NAME}",
            context=parent,
            kind=SpanKind.INTERNAL,
            start_time=_ns(event.at),
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": AGENT_NAME,
                "gen_ai.agent.id": str(event.run_id),
                "gen_ai.conversation.id": conversation,
                "gen_ai.provider.name": provider,
                "gen_ai.request.model": model,
                "io_tui.run.id": event.run_id,
                "io_tui.run.parent_id": int(detail.get("parent_run_id") or 0),
                "io_tui.run.resumed": resumed,
                "io_tui.workspace": str(detail.get("workspace") or ""),
            },
        )
        self.ids.span_id = self.ids.trace_id = None
        if self.capture and detail.get("goal"):
            span.set_attribute("io_tui.run.goal", redact(str(detail["goal"])))
        self.runs[event.run_id] = _Run(event.run_id, trace, span, conversation, provider, model)

    def _finished(self, event: RunEvent) -> None:
        run = self.runs.pop(event.run_id, None)
        self.children.pop(event.run_id, None)
        if run is None:
            return
        end = _ns(event.at)
        status = str(event.detail.get("status") or "")
        for call in run.calls.values():  # a call a pause or interrupt left open
            call.span.set_attribute("io_tui.call.pending", True)
            call.span.end(end)
            if call.asked_at is not None and self.instruments is not None:
                self.instruments.approvals_waiting.add(-1)
        if run.chat is not None:
            run.chat.set_status(Status(StatusCode.ERROR, "the run ended mid-request"))
            run.chat.end(end)
        if run.step_span is not None:
            run.step_span.end(end)
        agent = run.agent
        agent.set_attributes(
            {
                "io_tui.run.status": status,
                "io_tui.run.outcome": str(event.detail.get("outcome") or ""),
                "io_tui.run.steps": run.step,
                "io_tui.run.requests": run.counts["requests"],
                "io_tui.run.tool_calls": run.counts["tool_calls"],
                "gen_ai.usage.input_tokens": run.counts["input"],
                "gen_ai.usage.output_tokens": run.counts["output"],
                **{k.replace("io_tui.cost.", "io_tui.run.cost."): v for k, v in run.cost.items()},
            }
        )
        error = event.detail.get("error")
        if error:
            agent.set_attribute("io_tui.run.error", redact(str(error)))
        if status in _FAILED:
            agent.set_attribute("error.type", status)
            agent.set_status(Status(StatusCode.ERROR, str(error or status)))
        agent.end(end)
        if self.instruments is not None:
            self.instruments.runs.add(1, {"io_tui.run.status": status})

    def _step(self, run: _Run, event: RunEvent) -> Context:
        """The context of ``event``'s step span, opening it (and closing the last) as steps
        go by."""
        if run.step_span is None or event.step != run.step:
            if run.step_span is not None:
                run.step_span.end(_ns(event.at))
            run.step = event.step
            run.step_span = self.tracer.start_span(
                f"step {event.step}",
                context=set_span_in_context(run.agent),
                start_time=_ns(event.at),
                attributes={"io_tui.step": event.step, "io_tui.run.id": run.run_id},
            )
        return set_span_in_context(run.step_span)

    def _request_started(self, event: RunEvent) -> None:
        run = self.runs.get(event.run_id)
        if run is None:
            return
        parent = self._step(run, event)
        detail = event.detail
        run.chat = self.tracer.start_span(
            f"chat {run.model or run.provider}",
            context=parent,
            kind=SpanKind.CLIENT,
            start_time=_ns(event.at),
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": run.provider,
                "gen_ai.request.model": run.model,
                "gen_ai.conversation.id": run.conversation,
                "io_tui.step": event.step,
                "io_tui.request.attempt": int(detail.get("attempt") or 1),
                "io_tui.request.ceiling_tokens": int(detail.get("ceiling_tokens") or 0),
                "io_tui.request.est_tokens": int(detail.get("est_tokens") or 0),
                "io_tui.request.rung": str(detail.get("rung") or ""),
                **(
                    {"gen_ai.request.max_tokens": int(detail["max_output_tokens"])}
                    if detail.get("max_output_tokens")
                    else {}
                ),
            },
        )
        run.chat_at = event.at
        run.chat_record = False

    def request(self, run_id: int, record: Any, response: Any) -> None:
        """The open request's record (``store.RequestRecord``) and, when it answered, the
        ``providers.Response``: usage, response model, manifest summary, cost; contents only
        with capture on."""
        run = self.runs.get(run_id)
        if run is None or run.chat is None:
            return
        span = run.chat
        usage = attrs.usage_attributes(record.usage)
        span.set_attributes(usage)
        span.set_attributes(attrs.manifest_attributes(str(record.manifest or "")))
        span.set_attribute("gen_ai.response.model", str(record.model or run.model))
        cost = {k: v for k, v in attrs.manifest_attributes(str(record.manifest or "")).items()
                if k.startswith("io_tui.cost.run")}  # fmt: skip
        run.cost.update(cost)
        if self.capture:
            system, messages = attrs.input_messages(record.messages)
            span.set_attribute("gen_ai.system_instructions", system)
            span.set_attribute("gen_ai.input.messages", messages)
            if response is not None:
                calls = [(c.id, c.name, c.arguments) for c in response.tool_calls]
                span.set_attribute(
                    "gen_ai.output.messages",
                    attrs.output_messages(response.text, calls, response.stop_reason),
                )
        run.chat_record = True
        run.counts["requests"] += 1
        if record.usage:
            run.counts["input"] += int(record.usage.get("prompt_tokens") or 0)
            run.counts["output"] += int(record.usage.get("completion_tokens") or 0)
            if self.instruments is not None:
                self.instruments.tokens(run.provider, record.model or run.model, usage)

    def _request_finished(self, event: RunEvent) -> None:
        run = self.runs.get(event.run_id)
        if run is None or run.chat is None:
            return
        detail = event.detail
        span, run.chat = run.chat, None
        reason = detail.get("stop_reason") or detail.get("raw_stop_reason")
        span.set_attribute("gen_ai.response.finish_reasons", [str(reason or "stop")])
        span.set_attribute("io_tui.request.tool_calls", int(detail.get("tool_calls") or 0))
        span.set_attribute("io_tui.request.attempts", int(detail.get("attempts") or 1))
        span.end(_ns(event.at))
        if self.instruments is not None:
            self.instruments.duration(run.provider, run.model, event.at - run.chat_at, None)

    def _request_failed(self, event: RunEvent) -> None:
        run = self.runs.get(event.run_id)
        if run is None or run.chat is None:
            return
        detail = event.detail
        span, run.chat = run.chat, None
        kind = str(detail.get("kind") or "error")
        span.set_attribute("error.type", kind)
        span.set_attribute("io_tui.request.refused_locally", bool(detail.get("local")))
        span.set_status(Status(StatusCode.ERROR, redact(str(detail.get("error") or kind))))
        span.end(_ns(event.at))
        if self.instruments is not None:
            self.instruments.duration(run.provider, run.model, event.at - run.chat_at, kind)

    def _tool_called(self, event: RunEvent) -> None:
        run = self.runs.get(event.run_id)
        if run is None:
            return
        detail = event.detail
        call_id, name = str(detail.get("call_id") or ""), str(detail.get("name") or "")
        span = self.tracer.start_span(
            f"execute_tool {name}",
            context=self._step(run, event),
            kind=SpanKind.INTERNAL,
            start_time=_ns(event.at),
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.type": "function",
                "io_tui.step": event.step,
            },
        )
        if self.capture:
            span.set_attribute(
                "gen_ai.tool.call.arguments", attrs.redacted_json(detail.get("arguments"))
            )
        run.calls[call_id] = _Call(span, name)
        run.last_call = call_id
        run.counts["tool_calls"] += 1

    def _observed(self, event: RunEvent) -> None:
        run = self.runs.get(event.run_id)
        call = run.calls.pop(str(event.detail.get("call_id")), None) if run else None
        if call is None:
            return
        detail = event.detail
        call.span.set_attributes(
            {
                "io_tui.observation.kind": str(detail.get("kind") or ""),
                "io_tui.observation.chars": int(detail.get("chars") or 0),
                "io_tui.observation.target": redact(str(detail.get("target") or "")),
            }
        )
        if detail.get("is_error"):
            call.span.set_attribute("error.type", "tool_error")
            call.span.set_status(Status(StatusCode.ERROR))
        call.span.end(_ns(event.at))

    def tool_result(self, run_id: int, call_id: str, text: str) -> None:
        run = self.runs.get(run_id)
        call = run.calls.get(call_id) if run else None
        if call is not None and self.capture:
            call.span.set_attribute("gen_ai.tool.call.result", redact(text))

    def _refused(self, event: RunEvent) -> None:
        run = self.runs.get(event.run_id)
        call = run.calls.get(str(event.detail.get("call_id"))) if run else None
        if call is None:
            return
        detail = event.detail
        call.span.set_attributes(
            {
                "io_tui.approval.decision": "deny",
                "io_tui.approval.decided_by": "policy",
                "io_tui.policy.rule": str(detail.get("rule") or ""),
                "io_tui.policy.layer": str(detail.get("layer") or ""),
            }
        )

    def _asked(self, event: RunEvent) -> None:
        run = self.runs.get(event.run_id)
        if run is None or run.last_call not in run.calls:
            return
        assert run.last_call is not None
        call = run.calls[run.last_call]
        detail = event.detail
        run.approvals[int(detail.get("approval_id") or 0)] = run.last_call
        call.asked_at = event.at
        call.span.set_attributes(
            {
                "io_tui.approval.id": int(detail.get("approval_id") or 0),
                "io_tui.approval.act": str(detail.get("act") or ""),
                "io_tui.policy.rule": str(detail.get("rule") or ""),
                "io_tui.policy.layer": str(detail.get("layer") or ""),
            }
        )
        call.span.add_event("approval_requested", timestamp=_ns(event.at))
        if self.instruments is not None:
            self.instruments.approvals_waiting.add(1)

    def _decided(self, event: RunEvent) -> None:
        run = self.runs.get(event.run_id)
        detail = event.detail
        if run is None:
            return
        call_id = run.approvals.get(int(detail.get("approval_id") or 0))
        call = run.calls.get(call_id) if call_id else None
        if call is None:  # asked before this process took the run: the call goes on here
            call = self._continued(run, event)
            if call is None:
                return
        decision = str(detail.get("decision") or "")
        values: dict[str, attrs.AttributeValue] = {
            "io_tui.approval.decision": decision,
            "io_tui.approval.decided_by": str(detail.get("decided_by") or ""),
        }
        if call.asked_at is not None:
            values["io_tui.approval.wait_s"] = round(event.at - call.asked_at, 3)
            if self.instruments is not None:
                self.instruments.approvals_waiting.add(-1)
            call.asked_at = None
        if detail.get("reason"):
            values["io_tui.approval.reason"] = redact(str(detail["reason"]))
        call.span.set_attributes(values)
        call.span.add_event("approval_decided", {"decision": decision}, _ns(event.at))

    def _continued(self, run: _Run, event: RunEvent) -> _Call | None:
        """A call whose approval was asked in an earlier segment of the run (another process),
        decided now: its span in this segment, waiting since it was asked."""
        detail = event.detail
        call_id, name = str(detail.get("call_id") or ""), str(detail.get("tool") or "")
        if not call_id:
            return None
        span = self.tracer.start_span(
            f"execute_tool {name}",
            context=self._step(run, event),
            start_time=_ns(event.at),
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.type": "function",
                "io_tui.step": event.step,
                "io_tui.call.resumed": True,
                "io_tui.approval.id": int(detail.get("approval_id") or 0),
            },
        )
        asked = detail.get("asked_at")
        call = _Call(span, name)
        if isinstance(asked, int | float):
            span.set_attribute("io_tui.approval.wait_s", round(event.at - asked, 3))
        run.calls[call_id] = call
        return call

    def _sub_agent(self, event: RunEvent) -> None:
        run = self.runs.get(event.run_id)
        call = run.calls.get(str(event.detail.get("call_id"))) if run else None
        if run is None or call is None:
            return
        child = int(event.detail.get("run_id") or 0)
        call.span.set_attribute("io_tui.sub_agent.run_id", child)
        self.children[child] = (set_span_in_context(call.span), run.conversation)

    def _compacted(self, event: RunEvent) -> None:
        run = self.runs.get(event.run_id)
        if run is not None:
            span = run.step_span or run.agent
            span.add_event(
                "io_tui.compacted",
                {k: v for k, v in event.detail.items() if isinstance(v, str | int | float)},
                _ns(event.at),
            )

    def _hook(self, event: RunEvent) -> None:
        run = self.runs.get(event.run_id)
        if run is None:
            return
        detail = event.detail
        call = run.calls.get(str(detail.get("call_id") or ""))
        parent = call.span if call else (run.step_span or run.agent)
        took = float(detail.get("duration_s") or 0.0)
        span = self.tracer.start_span(
            f"hook {detail.get('event', '')}",
            context=set_span_in_context(parent),
            start_time=_ns(event.at - took),
            attributes={
                "io_tui.hook.event": str(detail.get("event") or ""),
                "io_tui.hook.command": redact(str(detail.get("command") or "")),
                "io_tui.hook.source": str(detail.get("source") or ""),
                "io_tui.hook.exit_code": int(detail.get("exit_code") or 0),
                "io_tui.hook.decision": str(detail.get("decision") or ""),
                "io_tui.hook.timed_out": bool(detail.get("timed_out")),
            },
        )
        if detail.get("error"):
            span.set_status(Status(StatusCode.ERROR, redact(str(detail["error"]))))
        span.end(_ns(event.at))

    _handlers: dict[EventKind, Any] = {
        EventKind.RUN_STARTED: _started,
        EventKind.RUN_RESUMED: _started,
        EventKind.RUN_FINISHED: _finished,
        EventKind.REQUEST_STARTED: _request_started,
        EventKind.REQUEST_FINISHED: _request_finished,
        EventKind.REQUEST_FAILED: _request_failed,
        EventKind.TOOL_CALLED: _tool_called,
        EventKind.OBSERVATION: _observed,
        EventKind.TOOL_REFUSED: _refused,
        EventKind.APPROVAL_REQUESTED: _asked,
        EventKind.APPROVAL_DECIDED: _decided,
        EventKind.SUB_AGENT: _sub_agent,
        EventKind.COMPACTED: _compacted,
        EventKind.HOOK: _hook,
    }

    def end_all(self) -> None:
        """Every span still open ends now (the process exits with runs unfinished)."""
        now = time.time()
        for run_id in list(self.runs):
            self._finished(
                RunEvent(run_id, 0, EventKind.RUN_FINISHED, {"status": "interrupted"}, now)
            )


def _remote(trace_id: str, span_id: str | None) -> Context | None:
    if span_id is None:
        return None
    context = SpanContext(
        int(trace_id, 16), int(span_id, 16), is_remote=True, trace_flags=TraceFlags(1)
    )
    return set_span_in_context(NonRecordingSpan(context))
