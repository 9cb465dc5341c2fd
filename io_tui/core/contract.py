"""What a run is asked to do, and the budgets it must live within (DESIGN §3.1)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from io_tui.core.prices import CachePrices
from io_tui.core.tokens import estimate_tokens as estimate_tokens  # re-exported

# Chars per token where a token budget becomes a char cap (the entry cap, summary and collapse
# limits); token figures themselves come from ``estimate_tokens``.
CHARS_PER_TOKEN = 4
MIN_CEILING_TOKENS = 2_000
MIN_ENTRY_CAP_CHARS = 2_000
# the smallest ceiling whose newest result, cut to the entry cap, fits beside the memory block (a
# quarter of it) and the stubs of older steps (an eighth): the request always carries that result
MIN_WORKING_CEILING = 800


@dataclass(frozen=True, slots=True)
class ContextBudget:
    """How large one request may grow.

    The effective ceiling is ``min(max_tokens, max(2_000, floor(remaining * share)))``, or
    ``max_tokens`` when the run has no token budget. A smaller explicit ``max_tokens`` is never
    raised by the 2,000 floor.
    """

    max_tokens: int = 24_000
    share: float = 0.5

    def __post_init__(self) -> None:
        if self.max_tokens <= 0:
            raise ValueError("context max_tokens must be positive")
        if self.max_tokens < MIN_WORKING_CEILING:
            c = self.max_tokens
            entry = MIN_ENTRY_CAP_CHARS // CHARS_PER_TOKEN
            raise ValueError(
                f"a context ceiling of {c:,} tokens cannot hold one result at the entry cap "
                f"({MIN_ENTRY_CAP_CHARS:,} chars, ~{entry:,} tokens) beside the memory block (a "
                f"quarter: {c // 4:,}) and the stubs of older steps (an eighth: {c // 8:,}); "
                f"use at least {MIN_WORKING_CEILING:,}"
            )
        if not 0 < self.share <= 1:
            raise ValueError("context share must be in (0, 1]")

    def ceiling(self, remaining_run_tokens: int | None) -> int:
        if remaining_run_tokens is None:
            return self.max_tokens
        floor_share = math.floor(max(0, remaining_run_tokens) * self.share)
        return min(self.max_tokens, max(MIN_CEILING_TOKENS, floor_share))


def entry_cap_chars(ceiling_tokens: int) -> int:
    """One observation may take an eighth of the effective budget (in chars)."""
    return max(MIN_ENTRY_CAP_CHARS, ceiling_tokens * CHARS_PER_TOKEN // 8)


@dataclass(frozen=True, slots=True)
class Compaction:
    """The last rung: fold old observations into a summary past ``threshold`` of the ceiling."""

    enabled: bool = True
    threshold: float = 0.8
    keep_newest: int = 8


@dataclass(frozen=True, slots=True)
class MemoryLimits:
    """Caps per memory scope (DESIGN §3.3)."""

    max_entries: int = 64
    max_chars: int = 16_000
    max_entry_chars: int = 2_000


@dataclass(frozen=True, slots=True)
class CheckpointLimits:
    """What a run's workspace checkpoints keep (``core/checkpoints``): whether they are taken,
    the largest file kept, and how large a directory the workspace's ignore files exclude may
    be and still be kept whole (a build output yes, ``node_modules`` no). What is left out is
    recorded with each checkpoint. Pruning (``checkpoints/pruning.py``) keeps the checkpoints
    of a workspace's newest ``keep_runs`` runs, of every run newer than ``keep_days``, and of
    every run that has not ended."""

    enabled: bool = True
    max_file_bytes: int = 5_000_000
    ignored_dir_files: int = 2_000
    ignored_dir_bytes: int = 50_000_000
    keep_runs: int = 20
    keep_days: float = 14.0

    def __post_init__(self) -> None:
        figures = (self.max_file_bytes, self.ignored_dir_files, self.ignored_dir_bytes)
        if min(*figures, self.keep_runs, self.keep_days) < 0:
            raise ValueError("checkpoint limits must not be negative")


@dataclass(frozen=True, slots=True)
class Continuation:
    """The earlier run a run continues (``io-tui run --continue RUN``): that run's progress
    ledger as of ``revision`` (``digest``), rendered; the frame carries ``text`` whole."""

    run_id: int
    revision: int
    digest: str
    text: str


@dataclass(frozen=True, slots=True)
class TaskContract:
    """The goal and the rules of one run. The contract is never elided from a request."""

    goal: str
    workspace: Path
    verify: tuple[str, ...] | None = None
    max_steps: int = 12
    token_budget: int | None = None
    constraints: tuple[str, ...] = ()
    context: ContextBudget = field(default_factory=ContextBudget)
    compaction: Compaction = field(default_factory=Compaction)
    memory: MemoryLimits = field(default_factory=MemoryLimits)
    cache: CachePrices = field(default_factory=CachePrices)
    env_allow: tuple[str, ...] = ()  # variables its commands see besides the harmless defaults
    continues: Continuation | None = None  # the earlier run's ledger it starts from
    checkpoints: CheckpointLimits = field(default_factory=CheckpointLimits)

    def success_criterion(self) -> str:
        if self.verify:
            return f"`{' '.join(self.verify)}` exits 0 in the workspace"
        return "the goal is met and you stop calling tools"


def contract_to_json(contract: TaskContract) -> dict[str, object]:
    extra: dict[str, object] = {"env_allow": list(contract.env_allow)} if contract.env_allow else {}
    if contract.continues is not None:
        extra["continues"] = asdict(contract.continues)
    if contract.checkpoints != CheckpointLimits():
        extra["checkpoints"] = asdict(contract.checkpoints)
    return {
        "goal": contract.goal,
        "workspace": str(contract.workspace),
        "verify": list(contract.verify) if contract.verify else None,
        "max_steps": contract.max_steps,
        "token_budget": contract.token_budget,
        "constraints": list(contract.constraints),
        "context": {"max_tokens": contract.context.max_tokens, "share": contract.context.share},
        "compaction": {
            "enabled": contract.compaction.enabled,
            "threshold": contract.compaction.threshold,
            "keep_newest": contract.compaction.keep_newest,
        },
        "memory": {
            "max_entries": contract.memory.max_entries,
            "max_chars": contract.memory.max_chars,
            "max_entry_chars": contract.memory.max_entry_chars,
        },
        "cache": {
            "uncached": contract.cache.uncached,
            "write": contract.cache.write,
            "read": contract.cache.read,
            "min_prefix_tokens": contract.cache.min_prefix_tokens,
        },
        **extra,
    }


def contract_from_json(data: dict[str, Any]) -> TaskContract:
    return TaskContract(
        goal=data["goal"],
        workspace=Path(data["workspace"]),
        verify=tuple(data["verify"]) if data.get("verify") else None,
        max_steps=data.get("max_steps", 12),
        token_budget=data.get("token_budget"),
        constraints=tuple(data.get("constraints", ())),
        context=ContextBudget(**data.get("context", {})),
        compaction=Compaction(**data.get("compaction", {})),
        memory=MemoryLimits(**data.get("memory", {})),
        cache=CachePrices(**data.get("cache", {})),
        env_allow=tuple(data.get("env_allow", ())),
        continues=Continuation(**data["continues"]) if data.get("continues") else None,
        checkpoints=CheckpointLimits(**data.get("checkpoints", {})),
    )
