"""The messages between the app and the harness worker: one JSON object per line.

App → worker (``op``):

- ``hello``   ``settings``: the app's settings (their ``RunSettings``: the worker's defaults for
  new runs)
- ``start``   ``tag``, ``request`` (a ``NewRunRequest``), ``approve`` (``None``: ask the app,
  or a name from ``FIXED_APPROVERS``)
- ``run``     ``tag``, ``contract`` (``contract_to_json``), ``provider`` (its ``describe()``),
  ``policy`` (``Policy.to_json``), ``approve``: a run from parts the app made (the demo's)
- ``decide``  ``tag``, ``approval_id``, ``decision``: decide a *paused* run's request and resume it
- ``answer``  ``approval_id``, ``decision``: the answer to an ``ask`` of a live run
- ``cancel``  ``run_id``: interrupt a live run (it ends ``cancelled``, its error ``OPERATOR_CANCEL``)
- ``mcp_prompts``   ``tag``, ``workspace``, ``timeout_s``: the prompts of the MCP servers a run
  there gets
- ``mcp_prompt``    ``tag``, ``workspace``, ``server``, ``name``, ``arguments``, ``timeout_s``: a
  prompt's text
- ``mcp_resources`` ``tag``, ``workspace``, ``timeout_s``: their resources and resource templates
- ``mcp_read``      ``tag``, ``workspace``, ``server``, ``uri``, ``timeout_s``: a resource's text

  Each ``mcp_*`` ask gets its ``reply`` within ``timeout_s`` (waiting for servers still starting
  included): the answer, or an error saying it did not come (a hung server).

Closing the worker's stdin cancels every live run (asks still open are deferred: those runs
pause durably) and the worker exits.

Worker → app (``t``):

- ``event``   ``e``: a ``RunEvent`` (``RunEvent.as_json``)
- ``started`` ``tag``, ``run_id``: the run a ``start`` / ``run`` / ``decide`` drives
- ``ask``     ``request``: an ``ApprovalRequest`` waiting for an ``answer``
- ``ended``   ``tag``, ``result``: a ``RunResult``, or ``null`` after a deferring ``decide``
- ``failed``  ``tag``, ``error``: the run could not start, or its task failed (the message)
- ``notice``  ``text``, optional ``title``: something the user should know (an MCP server that
  did not start; titled, a run the store stopped: full, unreachable, or taken over)
- ``reply``   ``tag``, and ``value`` (an ``mcp_*`` ask's answer: ``Offered.to_json`` for a
  listing, the text for a prompt or a read) or ``error`` (why not, one line)

The worker owns the app's MCP servers (``core.run.mcp_hubs.McpHubs``): it starts the ``hello``
settings' servers once and gives their tools to every run it drives (new, demo and resumed
alike), and answers the operator's ``mcp_*`` asks from the same hubs, so the app itself starts
no server.

The worker exits 0 once its stdin closes; 2 when its store cannot be opened; and
``EXIT_STORE_DAMAGED`` when its store is damaged (found by the ``quick_check`` of its open, or by
any statement later: its runs stop where they are, as nothing more can be written), its last
line on stderr the ``StoreDamaged`` message, with which the app ends (exit 2).
"""

from __future__ import annotations

import json
from typing import Any

from io_tui.core.events import EventKind, RunEvent

READ_CHUNK = 1 << 16  # bytes read from the pipe at a time, on either side
EXIT_STORE_DAMAGED = 4


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, default=str, separators=(",", ":")) + "\n").encode()


def event_message(event: RunEvent) -> dict[str, Any]:
    return {"t": "event", "e": event.as_json()}


def event_from(data: dict[str, Any]) -> RunEvent:
    return RunEvent(
        run_id=data["run_id"],
        step=data["step"],
        kind=EventKind(data["kind"]),
        detail=data["detail"],
        at=data["at"],
    )


class LineBuffer:
    """Splits a byte stream into decoded JSON messages; keeps a partial line for the next chunk.

    A line that is not a JSON object is returned as ``{"t": "garbage", "line": ...}`` so the
    reader can report it instead of dying on it.
    """

    def __init__(self) -> None:
        self._partial = b""

    def feed(self, chunk: bytes) -> list[dict[str, Any]]:
        lines = (self._partial + chunk).split(b"\n")
        self._partial = lines.pop()
        out: list[dict[str, Any]] = []
        for line in lines:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                message = None
            if not isinstance(message, dict):
                message = {"t": "garbage", "line": line.decode(errors="replace")[:200]}
            out.append(message)
        return out
