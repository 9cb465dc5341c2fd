"""The metrics a run exports, read back from what arrived over OTLP/HTTP: a receiver on
127.0.0.1 that decodes each ``ExportMetricsServiceRequest`` with the protocol's own protobuf
definitions (``opentelemetry-proto``, which the ``otel`` extra brings), fed by a real headless
demo run in its own process. Phoenix, the export tests' receiver, takes traces only.
Skipped, with the reason, when the ``otel`` extra is not installed."""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cli_process import io_tui, user_env

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("opentelemetry.proto") is None,
    reason="the otel extra is not installed: pip install -e '.[otel]'",
)


class Receiver(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.metrics: list[Any] = []  # each ExportMetricsServiceRequest, decoded
        self.paths: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2

        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.server.paths.append(self.path)
        if self.path == "/v1/metrics":
            request = metrics_service_pb2.ExportMetricsServiceRequest()
            request.ParseFromString(body)
            self.server.metrics.append(request)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *_: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def points(receiver: Receiver) -> dict[str, list[tuple[dict[str, Any], Any]]]:
    """Each metric's data points as the last export had them, by metric name: (attributes,
    point). The SDK's default temporality is cumulative, and a process exports at its
    flush and again at its shutdown: the last point of each series is its total."""
    last: dict[tuple[str, str], tuple[dict[str, Any], Any]] = {}
    for request in receiver.metrics:
        for resource in request.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    data = getattr(metric, metric.WhichOneof("data"))
                    for point in data.data_points:
                        labels = {a.key: _value(a.value) for a in point.attributes}
                        key = (metric.name, json.dumps(labels, sort_keys=True))
                        last[key] = (labels, point)
    out: dict[str, list[tuple[dict[str, Any], Any]]] = {}
    for (name, _), found in last.items():
        out.setdefault(name, []).append(found)
    return out


def _value(any_value: Any) -> Any:
    return getattr(any_value, any_value.WhichOneof("value"))


def test_a_run_exports_token_usage_durations_and_its_status(receiver, tmp_path: Path) -> None:
    env = user_env(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
         "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
        drop=["OTEL_METRICS_EXPORTER", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED"],
    )  # fmt: skip
    store = tmp_path / "s.db"
    done = io_tui("demo", "--headless", "--store", str(store), env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "/v1/traces" in receiver.paths  # the spans went too
    trace = json.loads(io_tui("trace", "1", "--json", "--store", str(store)).stdout)
    work = [r for r in trace["requests"] if r["purpose"] == "work" and r.get("usage")]
    got = points(receiver)

    tokens = got["gen_ai.client.token.usage"]
    by_type = {labels["gen_ai.token.type"]: point for labels, point in tokens}
    assert by_type["input"].sum == sum(r["usage"]["prompt_tokens"] for r in work)
    assert by_type["output"].sum == sum(r["usage"]["completion_tokens"] for r in work)
    assert by_type["input"].count == len(work)
    (labels, _) = tokens[0]
    assert labels["gen_ai.operation.name"] == "chat"
    assert labels["gen_ai.request.model"] == "scripted-demo"

    (_, duration), *_ = got["gen_ai.client.operation.duration"]
    assert sum(p.count for _, p in got["gen_ai.client.operation.duration"]) == len(work)
    assert duration.sum >= 0

    runs = {labels["io_tui.run.status"]: point.as_int for labels, point in got["io_tui.runs"]}
    assert runs == {"finished": 1}
    waiting = [point.as_int for _, point in got["io_tui.approvals.waiting"]]
    assert waiting == [0]  # the demo's one ask was asked and answered
