"""What the app's new-run dialog or a follow-up prompt asks for: plain data that crosses into the
harness process as JSON (``core.hosts.process``) and is built into a run there (``core.run.launch``)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True, slots=True)
class NewRunRequest:
    """What the new-run dialog (or a follow-up prompt) asks for."""

    task: str
    workspace: Path
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None  # None: the config's, when ``provider`` is the config's
    max_steps: int | None = None
    token_budget: int | None = None
    context_max_tokens: int | None = None
    max_output_tokens: int | None = None  # the longest answer a request asks for
    context_window: int | None = None  # the model's window, over the model table's and server's
    seed_run_id: int | None = None
    continue_run_id: int | None = None  # a fresh run carrying that run's progress ledger
    queue: bool = False  # put it on the run queue for a worker (``io-tui worker``) to drive
    labels: tuple[str, ...] = ()  # with ``queue``: only a worker serving all of them takes it

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "workspace": str(self.workspace), "labels": list(self.labels)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> NewRunRequest:
        return cls(
            **{
                **data,
                "workspace": Path(data["workspace"]),
                "labels": tuple(data.get("labels", ())),
            }
        )
