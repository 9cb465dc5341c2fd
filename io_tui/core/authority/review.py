"""A reviewer model in the approver's chair (DESIGN §3.4): which model a policy names to review
its asks (``ReviewerSpec``), and what it said on one ask (``Review``).

Data only, so the policy can carry the spec and the store can read reviews back; the reviewer
that asks the model is ``core/review/``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

OPTION_PREFIX = "model:"
DECIDED_BY_PREFIX = "reviewer "  # a decision's ``decided_by`` when a reviewer made it
DEFAULT_TIMEOUT_S = 60.0
SCRIPTED = "scripted"


class ReviewerSpecError(ValueError):
    """A reviewer spec that does not validate; the message names what and where."""


@dataclass(frozen=True, slots=True)
class ReviewerSpec:
    """The model that reviews a run's asks, recorded with the run's policy so that every process
    that drives it (a resume, ``decide``, a queue worker) asks the same model.

    ``model`` is ``PRESET:MODEL`` (``llamacpp:smollm2``, ``ollama:qwen2.5:7b``: the model
    name is everything after the first colon) or ``scripted:FILE`` (an absolute path; tests).
    ``base_url`` overrides the preset's; ``timeout_s`` bounds one review, after which it
    escalates. A key comes from the environment of the process that asks, never from here.
    """

    model: str
    base_url: str | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        preset, _, name = self.model.partition(":")
        if not preset or not name.strip():
            raise ReviewerSpecError(
                f"reviewer model {self.model!r}: expected PRESET:MODEL (e.g. llamacpp:smollm2,"
                " ollama:qwen2.5:7b) or scripted:FILE"
            )
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise ReviewerSpecError(f"reviewer timeout_s must be above 0, got {self.timeout_s}")
        if self.base_url is not None and not self.base_url.startswith(("http://", "https://")):
            raise ReviewerSpecError(
                f"reviewer base_url must start with http:// or https://, got {self.base_url!r}"
            )

    @property
    def preset(self) -> str:
        return self.model.partition(":")[0]

    @property
    def model_name(self) -> str:
        return self.model.partition(":")[2]

    @classmethod
    def from_option(
        cls, value: str, *, base_url: str | None = None, timeout_s: float | None = None
    ) -> ReviewerSpec:
        """``--approver model:PRESET:MODEL`` (or ``model:scripted:FILE``, made absolute)."""
        if not value.startswith(OPTION_PREFIX):
            raise ReviewerSpecError(
                f"{value!r}: expected model:PRESET:MODEL"
                " (e.g. model:llamacpp:smollm2, model:ollama:qwen2.5:7b)"
            )
        return cls(
            _absolute_script(value.removeprefix(OPTION_PREFIX)),
            base_url=base_url,
            timeout_s=DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s,
        )

    @classmethod
    def from_json(cls, data: object, *, source: str = "policy") -> ReviewerSpec:
        """The ``[reviewer]`` table of a policy file (or its recorded JSON)."""
        where = f"{source}: reviewer"
        if not isinstance(data, dict):
            raise ReviewerSpecError(f"{where}: expected a table")
        unknown = set(data) - {"model", "base_url", "timeout_s"}
        if unknown:
            raise ReviewerSpecError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
        model = data.get("model")
        if not isinstance(model, str) or not model:
            raise ReviewerSpecError(f'{where}: model = "PRESET:MODEL" is required')
        base_url = data.get("base_url")
        if base_url is not None and not isinstance(base_url, str):
            raise ReviewerSpecError(f"{where}.base_url: expected a string")
        timeout = data.get("timeout_s", DEFAULT_TIMEOUT_S)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float):
            raise ReviewerSpecError(f"{where}.timeout_s: expected a number of seconds")
        try:
            return cls(_absolute_script(model), base_url=base_url, timeout_s=float(timeout))
        except ReviewerSpecError as exc:
            raise ReviewerSpecError(f"{where}: {exc}") from None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"model": self.model, "timeout_s": self.timeout_s}
        if self.base_url is not None:
            out["base_url"] = self.base_url
        return out


def _absolute_script(model: str) -> str:
    """A ``scripted:FILE`` spec with its file made absolute: a run resumed elsewhere finds it."""
    preset, _, rest = model.partition(":")
    if preset != SCRIPTED or not rest:
        return model
    return f"{SCRIPTED}:{Path(os.path.expanduser(rest)).resolve()}"


def by_reviewer(decided_by: str) -> bool:
    """Whether a decision recorded as made by ``decided_by`` is a reviewer model's."""
    return decided_by.startswith(DECIDED_BY_PREFIX)


class ReviewVerdict(StrEnum):
    APPROVE = "approve"
    DENY = "deny"
    ESCALATE = "escalate"


class ReviewCause(StrEnum):
    """Why the verdict is what it is: the model's own answer, or why no answer of its counted
    (each of those escalates)."""

    MODEL = "model"  # a well-formed answer: its verdict stands
    GUARD = "guard"  # a deterministic guard held the ask before the model was asked
    FORMAT = "format"  # the answer was not exactly the two lines asked for
    TIMEOUT = "timeout"  # no answer within the spec's timeout_s
    ERROR = "error"  # the reviewer could not be built or asked (the provider's error)


@dataclass(frozen=True, slots=True)
class Review:
    """A reviewer's verdict on one ask: who (``reviewer``: ``provider:model``), what, why, at
    what cost. ``answer`` is the model's own text, bounded (empty when it was not asked);
    tokens are the provider's report (None: it reported none, or the model was not asked)."""

    approval_id: int
    reviewer: str
    verdict: ReviewVerdict
    reason: str
    cause: ReviewCause
    answer: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    at: float = 0.0

    @property
    def tokens(self) -> int | None:
        if self.prompt_tokens is None and self.completion_tokens is None:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)

    def describe(self) -> str:
        """One line: ``reviewer llamacpp:smollm2: escalate — reason (412 tokens, 1.3 s)``."""
        cost = f"{self.tokens:,} tokens, " if self.tokens is not None else ""
        return (
            f"reviewer {self.reviewer}: {self.verdict.value} — {self.reason}"
            f" ({cost}{self.latency_s:.1f} s)"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "approval_id": self.approval_id,
            "reviewer": self.reviewer,
            "verdict": self.verdict.value,
            "reason": self.reason,
            "cause": self.cause.value,
            "answer": self.answer,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_s": round(self.latency_s, 3),
            "at": self.at,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Review:
        return cls(
            approval_id=int(data["approval_id"]),
            reviewer=str(data.get("reviewer", "")),
            verdict=ReviewVerdict(data["verdict"]),
            reason=str(data.get("reason", "")),
            cause=ReviewCause(data.get("cause", ReviewCause.MODEL.value)),
            answer=str(data.get("answer", "")),
            prompt_tokens=data.get("prompt_tokens"),
            completion_tokens=data.get("completion_tokens"),
            latency_s=float(data.get("latency_s", 0.0)),
            at=float(data.get("at", 0.0)),
        )
