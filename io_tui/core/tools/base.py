"""What every built-in tool is: validated arguments, a gate for the policy, an async body."""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from io_tui.core.authority.policy import Act, Policy, Rule
from io_tui.core.boundary.safe_text import escape_surrogates
from io_tui.core.boundary.untrusted import redact
from io_tui.core.contract import MemoryLimits
from io_tui.core.errors import ToolError as ToolError  # what a tool raises, from its leaf
from io_tui.core.ledger import Observation, ObsKind, Seen
from io_tui.core.providers.base import ToolSpec

if TYPE_CHECKING:
    from io_tui.core.boundary.sandbox import Denial
    from io_tui.core.boundary.workspace import Workspace
    from io_tui.core.store.notes import NoteRepo


class ToolArgs(BaseModel):
    """Base for argument models: unknown keys are refused, so typos surface to the model."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True, slots=True)
class Gate:
    """What the policy must check before a call runs.

    ``content`` is exactly what would be performed, shown to a human and persisted with a pending
    approval: the new file text for a write, the argv as JSON for exec.
    """

    act: Act
    target: str
    content: str = ""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """A tool's result, before it is bounded into an Observation. ``seen``: the files it was
    made from, as they were (``Observation.seen``). Its text and target are redacted as it is
    made (``untrusted.redact``): no secret it shows goes further."""

    text: str
    kind: ObsKind
    target: str
    span: str = ""
    is_error: bool = False
    data: dict[str, Any] = field(default_factory=dict)
    seen: tuple[Seen, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", redact(escape_surrogates(self.text)))
        object.__setattr__(self, "target", redact(escape_surrogates(self.target)))


@dataclass(frozen=True, slots=True)
class Recorded:
    """A tool result as the trace keeps it: the run that made it, the observation (bounded
    where it entered) and the tool's whole output."""

    run_id: int
    observation: Observation
    full_text: str


@dataclass(frozen=True, slots=True)
class SubTask:
    """What ``spawn_agent`` hands the harness: a child run's goal, step cap (None: the default),
    the deny/ask rules that narrow its policy, and the call it carries out."""

    goal: str
    max_steps: int | None = None
    rules: tuple[Rule, ...] = ()
    call_id: str = ""


Spawner = Callable[[SubTask], Awaitable[ToolOutcome]]
Emit = Callable[[str, dict[str, Any]], None]  # (kind, detail): records a trace event


@dataclass
class ToolContext:
    """What a tool may touch while it runs. The harness's hooks are None where the run offers
    none (a tool's own tests; ``spawn`` at the sub-agents' nesting limit)."""

    workspace: Workspace
    run_id: int
    step: int
    cap_chars: int
    policy: Policy | None = None  # the run's policy, for tools that check reads themselves
    notes: NoteRepo | None = None  # the store's notes, for remember / forget
    memory_limits: MemoryLimits = field(default_factory=MemoryLimits)
    emit: Emit | None = None
    spawn: Spawner | None = None  # runs a sub-agent to an outcome
    call_id: str = ""  # the call being carried out
    # an MCP server's request during the call, (call id, ask) → its answer: sampling (the
    # model's answer) or elicitation (the operator's form), asked as any act
    # (``core.run.server_asks``)
    sample: Callable[[str, Any], Awaitable[Any]] | None = None
    # a handle (a call id of this run, or a progress ledger's ``r<run>.s<step>.<call id>``) →
    # its recorded result, whole (``tools.recall``)
    recall: Callable[[str], Awaitable[Recorded | None]] | None = None
    # a command the sandbox refused (call id, argv, what it refused) → whether the operator
    # approves a rerun outside the sandbox, asked as its own decision (``core.run.escalate``)
    escalate: Callable[[str, list[str], list[Denial]], Awaitable[bool]] | None = None


@functools.cache
def args_schema(args: type[ToolArgs]) -> dict[str, Any]:
    """The JSON Schema the model is shown for ``args``, without pydantic's titles: made once a
    class (every run asks it of each of its tools) and shared, so never changed by a reader."""
    schema = args.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


class Tool(ABC):
    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[ToolArgs]]
    # whether a call may change the workspace's files: a run takes a checkpoint before a step
    # with such a call (``core/checkpoints``); a tool that only reads says False
    changes_files: ClassVar[bool] = True
    # whether a call has no effect at all (no file, store or server changed): one in flight at
    # a crash is simply run again, so its intent is written with its result, not before it
    # (``store/intents.py``)
    only_reads: ClassVar[bool] = False

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, args_schema(self.Args))

    def parse(self, raw: dict[str, Any]) -> ToolArgs:
        try:
            return self.Args.model_validate(raw)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}"
                for err in exc.errors()
            )
            raise ToolError(f"invalid arguments for {self.name}: {problems}") from None

    async def gate(self, args: Any, ctx: ToolContext) -> Gate | None:
        """The act to check, or None for tools that need no policy check."""
        return None

    @abstractmethod
    async def run(self, args: Any, ctx: ToolContext) -> ToolOutcome: ...
