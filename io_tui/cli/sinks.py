"""Event sinks for the terminal: JSON lines for machines, one readable line per fact for people."""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TextIO

from io_tui.cli.terminal import exact
from io_tui.core import READER_GONE, EventKind, EventSink, RunEvent, invalidation_line


class UntilReaderGone:
    """``sink`` while its reader reads: the first write that finds the pipe closed (``io-tui run
    --json | head -1``) stops the run as a hang-up would, ``interrupted`` and resumable
    (``READER_GONE``), and nothing more is written: a reader that stops early is not a failure
    of the run."""

    def __init__(self, sink: EventSink) -> None:
        self.sink = sink
        self.run: asyncio.Task[object] | None = None  # the run to stop: set once it starts
        self.run_id: int | None = None
        self.gone = False

    def emit(self, event: RunEvent) -> None:
        if self.gone:
            return
        self.run_id = self.run_id or event.run_id
        try:
            self.sink.emit(event)
        except BrokenPipeError:
            self.gone = True
            if self.run is not None:
                self.run.cancel(READER_GONE)


class JsonLinesSink:
    """One JSON object per event, each carrying ``run_id``: every request attempt, retry and
    streamed text delta included."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or exact(sys.stdout)

    def emit(self, event: RunEvent) -> None:
        self.out.write(json.dumps(event.as_json(), default=str) + "\n")
        self.out.flush()


class HumanSink:
    """Readable progress on stderr: the model's words and each tool call's fate."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stderr
        self._streaming = False

    def emit(self, event: RunEvent) -> None:
        d = event.detail
        line: str | None = None
        if event.kind is EventKind.TEXT_DELTA:
            if not self._streaming:
                self.out.write(f"  step {event.step} · ")
                self._streaming = True
            self.out.write(d.get("text", ""))
            self.out.flush()
            return
        if self._streaming:
            self.out.write("\n")
            self._streaming = False
        match event.kind:
            case EventKind.RUN_STARTED | EventKind.RUN_RESUMED:
                verb = "started" if event.kind is EventKind.RUN_STARTED else "resumed"
                line = f"run {event.run_id} {verb}: {d.get('goal')}"
            case EventKind.TOOL_CALLED:
                line = f"  step {event.step} → {d.get('name')} {_args(d.get('arguments'))}"
            case EventKind.TOOL_REFUSED:
                line = f"  step {event.step} ✗ refused: {d.get('act')} {d.get('target')} ({d.get('rule')}, {d.get('layer')})"
            case EventKind.APPROVAL_REQUESTED:
                line = f"  step {event.step} ? asks: {d.get('act')} {d.get('target')} (request {d.get('approval_id')})"
            case EventKind.APPROVAL_DECIDED:
                line = f"  step {event.step} ! {d.get('decision')} request {d.get('approval_id')}"
            case EventKind.APPROVAL_REVIEWED:
                line = (
                    f"  step {event.step} ⚖ reviewer {d.get('reviewer')}: {d.get('verdict')}"
                    f" request {d.get('approval_id')} — {d.get('reason')}"
                )
            case EventKind.OBSERVATION if d.get("is_error"):
                line = f"  step {event.step} ✗ {d.get('name')} failed"
            case EventKind.VERIFY:
                line = f"  verify {'passed' if d.get('passed') else 'failed'} (exit {d.get('exit_code')})"
            case EventKind.REQUEST_RETRY:
                line = (
                    f"  step {event.step} attempt {d.get('attempt')} failed: {d.get('error')};"
                    f" retrying in {d.get('delay_s')}s"
                )
            case EventKind.REQUEST_FAILED:
                line = f"  step {event.step} provider error: {d.get('error')}"
                if d.get("partial"):
                    line += f" (partial output kept: {len(d['partial'].get('text', '')):,} chars)"
            case EventKind.TOOL_PROGRESS:
                total = f"/{d['total']:g}" if d.get("total") else ""
                note = f" · {d['message']}" if d.get("message") else ""
                line = f"  step {event.step} ↻ {d.get('name')} {d.get('progress'):g}{total}{note}"
            case EventKind.WARNING:
                line = f"  step {event.step} ! {d.get('message')}"
            case EventKind.INVALIDATED:
                line = f"  step {event.step} {invalidation_line(d)}"
            case EventKind.RUN_FINISHED:
                line = f"run {event.run_id} {d.get('status')}: {d.get('outcome')}" + (
                    f" ({d['error']})" if d.get("error") else ""
                )
        if line:
            self.out.write(line + "\n")
            self.out.flush()


def _args(arguments: object) -> str:
    text = json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= 100 else text[:97] + "…"
