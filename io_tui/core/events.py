"""Run events: what the harness tells the world. Notifications, never authority (DESIGN §1)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

# What an interrupt from the operator says: the reason a run's task is cancelled with
# (``task.cancel(OPERATOR_CANCEL)``), recorded as the run's error and on its ``run_finished``.
OPERATOR_CANCEL = "cancelled by the operator"
# a worker that hands its runs back (``task.cancel(HAND_BACK)``): the run ends ``interrupted``,
# for another worker to take over
HAND_BACK = "handed back by its worker"
# the reader of a headless run's output went away (``io-tui run --json | head -1``): the run
# ends ``interrupted`` too, for ``io-tui resume`` (``task.cancel(READER_GONE)``)
READER_GONE = "its output's reader went away"
# the run's lease was found taken over (``task.cancel(LEASE_LOST)``): the run stops where it
# is and writes nothing more; its new owner drives it
LEASE_LOST = "its lease was taken over"


class EventKind(StrEnum):
    RUN_STARTED = "run_started"
    RUN_RESUMED = "run_resumed"
    REQUEST_STARTED = "request_started"
    TEXT_DELTA = "text_delta"
    REQUEST_FINISHED = "request_finished"
    REQUEST_FAILED = "request_failed"
    REQUEST_RETRY = "request_retry"  # one attempt failed; the provider tries again after a wait
    TOOL_CALLED = "tool_called"
    TOOL_REFUSED = "tool_refused"
    TOOL_PROGRESS = "tool_progress"  # a call in flight reported progress (MCP notifications)
    APPROVAL_REQUESTED = "approval_requested"
    APPROVAL_DECIDED = "approval_decided"
    # the policy's reviewer model said approve, deny or escalate on a request (``Review``):
    # the record of every verdict, read back with the request (``ApprovalRecord.reviews``)
    APPROVAL_REVIEWED = "approval_reviewed"
    OBSERVATION = "observation"
    STEP_COMMITTED = "step_committed"
    COMPACTED = "compacted"
    MEMORY = "memory"
    OPERATOR_MESSAGE = "operator_message"
    VERIFY = "verify"
    WARNING = "warning"
    RECONCILED = "reconciled"  # a call in flight at a crash, re-run, marked done or skipped
    SUB_AGENT = "sub_agent"  # a spawn_agent call handed to its child run (call_id, run_id)
    # a derived part of the context (skills, tools, instructions, memory) whose dependencies
    # moved, and what its rebuild did (``core/derived/parts.py``)
    INVALIDATED = "invalidated"
    # a hook ran (``core/hooks``): its event, command, exit code, decision and how long it took
    HOOK = "hook"
    RUN_FINISHED = "run_finished"
    # a checkpoint of the workspace, before or after a step's calls that may change files
    # (``core/checkpoints``): its phase, commit, how many paths changed, what it left out
    CHECKPOINT = "checkpoint"
    # the operator rewound the run's workspace to before a step (or undid a rewind): what
    # changed, the checkpoints it went from and to; the run's history stays as it was
    REWOUND = "rewound"
    # a new run started from one of this run's steps (``io-tui fork``): its id and the step
    FORKED = "forked"
    # the operator cancelled runs no process drove (paused, interrupted): the audit event of
    # run 0, the operator's (``core/steering/cancel.py``); each run says so in its own ``run_finished``
    RUN_CANCELLED = "run_cancelled"


# shown as they come and never stored: the step's text and the call's result are what last
LIVE_ONLY = frozenset({EventKind.TEXT_DELTA, EventKind.TOOL_PROGRESS})


@dataclass(frozen=True, slots=True)
class RunEvent:
    run_id: int
    step: int
    kind: EventKind
    detail: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "step": self.step,
            "kind": self.kind.value,
            "detail": self.detail,
            "at": self.at,
        }


class EventSink(Protocol):
    """Receives events. Must not block; must not raise (a failing sink never stops a run)."""

    def emit(self, event: RunEvent) -> None: ...


class NullSink:
    def emit(self, event: RunEvent) -> None:
        return None
