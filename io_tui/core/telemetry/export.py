"""The OpenTelemetry SDK set up for one process: a tracer and meter provider, their OTLP
exporters (HTTP or gRPC, as ``OTEL_EXPORTER_OTLP_PROTOCOL`` says), and the span builder the
run events feed.

Why its own providers rather than the global ones: io-tui is a command, not a library, but an
embedder may have set its own global provider; io-tui's spans go where its environment says
and nowhere else. The exporters read the standard variables themselves (endpoint, headers,
timeouts, certificates). Imported only when export is on.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import time
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind

from io_tui import __version__
from io_tui.core.events import RunEvent
from io_tui.core.telemetry.config import OtelConfig
from io_tui.core.telemetry.context import Parent, new_span_id
from io_tui.core.telemetry.metrics import Instruments
from io_tui.core.telemetry.spans import ChosenIds, SpanBuilder, _ns, _remote

log = logging.getLogger(__name__)
SCOPE = "io_tui"


class Exporter:
    def __init__(self, config: OtelConfig) -> None:
        self.config = config
        self.capture_content = config.capture_content
        resource = Resource.create(
            {"service.name": config.service_name, "service.version": __version__}
        )
        self.ids = ChosenIds()
        self.tracer_provider = TracerProvider(resource=resource, id_generator=self.ids)
        if config.traces:
            self.tracer_provider.add_span_processor(BatchSpanProcessor(_span_exporter(config)))
        self.meter_provider: MeterProvider | None = None
        instruments = None
        if config.metrics:
            readers: list[MetricReader] = [PeriodicExportingMetricReader(_metric_exporter(config))]
            self.meter_provider = MeterProvider(resource=resource, metric_readers=readers)
            instruments = Instruments(self.meter_provider.get_meter(SCOPE, __version__))
        self.tracer = self.tracer_provider.get_tracer(SCOPE, __version__)
        self.spans = SpanBuilder(
            self.tracer, self.ids, instruments, capture_content=config.capture_content
        )
        atexit.register(self.flush)  # before the providers' own shutdown: atexit runs last first
        quiet_sdk_logs()

    def emit(self, event: RunEvent) -> None:
        try:
            self.spans.emit(event)
        except Exception:  # a sink must never stop a run (events.EventSink)
            log.exception("OpenTelemetry export of a %s event failed", event.kind.value)

    def request(self, run_id: int, record: Any, response: Any) -> None:
        try:
            self.spans.request(run_id, record, response)
        except Exception:
            log.exception("OpenTelemetry export of a request failed")

    def tool_result(self, run_id: int, call_id: str, text: str) -> None:
        try:
            self.spans.tool_result(run_id, call_id, text)
        except Exception:
            log.exception("OpenTelemetry export of a tool result failed")

    def enqueued(self, goal: str) -> Parent:
        """A ``queue`` span (a producer's) under the caller's ``TRACEPARENT``, if any: the
        queued run's ``invoke_agent`` nests under it when a worker drives it."""
        outer = Parent.from_env()
        span_id = new_span_id()
        self.ids.span_id = int(span_id, 16)
        now = time.time()
        span = self.tracer.start_span(
            "queue io-tui run",
            context=_remote(outer.trace_id, outer.span_id) if outer else None,
            kind=SpanKind.PRODUCER,
            start_time=_ns(now),
            attributes={"io_tui.queue.goal_chars": len(goal)},
        )
        self.ids.span_id = None
        span.end(_ns(now))
        trace_id = format(span.get_span_context().trace_id, "032x")
        return Parent(trace_id, span_id)

    def flush(self) -> None:
        self.spans.end_all()
        self.tracer_provider.force_flush()
        if self.meter_provider is not None:
            self.meter_provider.force_flush()


class _FirstFailure(logging.Handler):
    """The OpenTelemetry SDK's own warnings (a retry, each batch it gives up on, a long line
    each) as one line on stderr, the first time: an unreachable collector never buries the
    run's output, and the run goes on."""

    def __init__(self, endpoint: str) -> None:
        super().__init__(logging.WARNING)
        self.endpoint = endpoint
        self.told = False

    def emit(self, record: logging.LogRecord) -> None:
        if self.told:
            return
        self.told = True
        why = " ".join(record.getMessage().split())[:160]
        sys.stderr.write(
            f"io-tui: OpenTelemetry export to {self.endpoint} is failing ({why}); the run goes"
            " on, and its trace is in the store\n"
        )


def quiet_sdk_logs() -> None:
    """Route the SDK's loggers to ``_FirstFailure`` (once per process)."""
    sdk = logging.getLogger("opentelemetry")
    if not any(isinstance(h, _FirstFailure) for h in sdk.handlers):
        endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
            "OTEL_EXPORTER_OTLP_ENDPOINT", "the OTLP endpoint"
        )
        sdk.addHandler(_FirstFailure(endpoint))
        sdk.propagate = False


def _span_exporter(config: OtelConfig) -> SpanExporter:
    if config.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # type: ignore[assignment]
            OTLPSpanExporter,
        )
    return OTLPSpanExporter()


def _metric_exporter(config: OtelConfig) -> Any:
    if config.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import (  # type: ignore[assignment]
            OTLPMetricExporter,
        )
    return OTLPMetricExporter()
