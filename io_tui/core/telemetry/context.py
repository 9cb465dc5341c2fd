"""A run's place in a distributed trace: its trace id, its own span id and its parent's, as W3C
trace context (``traceparent``), made and read without OpenTelemetry.

Why apart from the exporter: every run records where it sits in its trace when it starts (the
``trace`` of its ``run_started`` event), whether or not export is on, so a run resumed in another
process (``io-tui resume``, a queue worker's takeover, the cockpit's decision) continues the same
trace under the same run span, and a queued run nests under the span of whoever queued it. The
ids are random (``os.urandom``), as the W3C format asks.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

# version 00: trace id (32 hex), parent span id (16 hex), flags (2 hex); all-zero ids are invalid
_TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
TRACEPARENT_ENV = "TRACEPARENT"  # a caller's context for a command line (CI jobs, scripts)


def new_trace_id() -> str:
    while True:
        value = os.urandom(16).hex()
        if value != "0" * 32:
            return value


def new_span_id() -> str:
    while True:
        value = os.urandom(8).hex()
        if value != "0" * 16:
            return value


@dataclass(frozen=True, slots=True)
class Parent:
    """A span in some trace that a run nests under: ``traceparent``'s two ids."""

    trace_id: str
    span_id: str

    @classmethod
    def parse(cls, value: str | None) -> Parent | None:
        """A ``traceparent`` header's context, or None for a missing or malformed one."""
        match = _TRACEPARENT.match((value or "").strip().lower())
        if match is None or match[1] == "0" * 32 or match[2] == "0" * 16:
            return None
        return cls(match[1], match[2])

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Parent | None:
        return cls.parse((os.environ if env is None else env).get(TRACEPARENT_ENV))

    def header(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-01"


@dataclass(frozen=True, slots=True)
class RunTrace:
    """Where one run sits: ``trace_id``, the span id of the run itself (its first segment's
    ``invoke_agent``; a resumed segment nests under it), and the span it nests under, if any
    (a sub-agent's ``execute_tool spawn_agent``, the queuing span, a caller's ``TRACEPARENT``)."""

    trace_id: str
    span_id: str
    parent_span_id: str | None = None

    @classmethod
    def start(cls, parent: Parent | None) -> RunTrace:
        """A new run's place: under ``parent`` when given, else the root of a new trace."""
        if parent is None:
            return cls(new_trace_id(), new_span_id())
        return cls(parent.trace_id, new_span_id(), parent.span_id)

    def child(self) -> RunTrace:
        """A sub-agent's place: this trace, its parent span the exporter's (the tool call)."""
        return RunTrace(self.trace_id, new_span_id())

    def to_json(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "span_id": self.span_id,
            "parent_span_id": self.parent_span_id,
        }

    @classmethod
    def from_json(cls, data: Any) -> RunTrace | None:
        """What ``to_json`` wrote, or None for anything else (a run from before traces)."""
        if not isinstance(data, dict):
            return None
        trace_id, span_id = data.get("trace_id"), data.get("span_id")
        parent = data.get("parent_span_id")
        if not (isinstance(trace_id, str) and len(trace_id) == 32):
            return None
        if not (isinstance(span_id, str) and len(span_id) == 16):
            return None
        if not (parent is None or isinstance(parent, str)):
            return None
        return cls(trace_id, span_id, parent)
