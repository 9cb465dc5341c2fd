"""OpenTelemetry export of runs: off unless the environment turns it on (``config``), and then
the process's run events become spans and metrics (``spans``, ``metrics``) sent over OTLP.

Why a switch here: the run loop calls ``tap`` with every event and ``request`` with every
model request whether or not export is on, so each must cost nothing when it is off. The
environment is read once, at the first call, and OpenTelemetry is imported only when export is
on (``io-tui --version`` and a run without export import none of it). A process that has the
``OTEL_*`` variables but not the ``otel`` extra says so once on stderr and runs on without.
"""

from __future__ import annotations

import logging
import sys
import threading
from typing import TYPE_CHECKING, Any

from io_tui.core.telemetry.config import OtelConfig
from io_tui.core.telemetry.context import Parent, RunTrace

if TYPE_CHECKING:
    from io_tui.core.events import RunEvent
    from io_tui.core.telemetry.export import Exporter

__all__ = ["OtelConfig", "Parent", "RunTrace", "exporter", "flush", "request", "tap"]

log = logging.getLogger(__name__)
MISSING_EXTRA = (
    "io-tui: OpenTelemetry export is configured (OTEL_EXPORTER_OTLP_ENDPOINT or [otel]) but"
    " its packages are not installed: pip install 'io-tui[otel]'. Running without export.\n"
)
_lock = threading.Lock()
_state: dict[str, Any] = {}  # "exporter": the Exporter, or None once export was found off


def exporter() -> Exporter | None:
    """This process's exporter, made at the first call when the environment turns export on."""
    if "exporter" in _state:
        made: Exporter | None = _state["exporter"]
        return made
    with _lock:
        if "exporter" not in _state:
            _state["exporter"] = _make(OtelConfig.from_env())
    return _state["exporter"]  # type: ignore[no-any-return]


def _make(config: OtelConfig) -> Exporter | None:
    if not config.enabled:
        return None
    try:
        from io_tui.core.telemetry.export import Exporter
    except ImportError:
        sys.stderr.write(MISSING_EXTRA)
        return None
    try:
        return Exporter(config)
    except Exception as exc:  # a bad endpoint or header: the run goes on without export
        sys.stderr.write(f"io-tui: OpenTelemetry export is off: {exc}\n")
        return None


def tap(event: RunEvent) -> None:
    """A run event, as a span's start or end (nothing when export is off). Never raises."""
    made = _state.get("exporter", 0)
    if made is None:
        return
    target = exporter() if made == 0 else made
    if target is not None:
        target.emit(event)


def request(run_id: int, record: Any, response: Any) -> None:
    """A model request's record (``store.RequestRecord``) and its answer, if any, for its
    span: usage, manifest, cost, and contents when capture is on."""
    target = exporter()
    if target is not None:
        target.request(run_id, record, response)


def tool_result(run_id: int, call_id: str, text: str) -> None:
    """A call's whole result, exported (redacted) only when content capture is on."""
    target = exporter()
    if target is not None and target.capture_content:
        target.tool_result(run_id, call_id, text)


def enqueued(goal: str) -> Parent | None:
    """A span for a run put on the queue, its context for the run to nest under (recorded in
    its origin); None when export is off and no ``TRACEPARENT`` was given."""
    target = exporter()
    if target is None:
        return Parent.from_env()
    return target.enqueued(goal)


def flush() -> None:
    """Send what is buffered now (a command about to exit)."""
    made = _state.get("exporter")
    if made is not None:
        made.flush()


def reset() -> None:
    """Forget the exporter (tests that change the environment); flushes it first."""
    flush()
    _state.clear()
