"""The messages of a conversation, wire-neutral: what a request carries and a response returns
(``Message``, the ``ToolCall``s an assistant's turn makes). Kept apart from the provider contract
(``base``) because the ledger, the store and the context engine hold them too, and read the
trace without loading the rest of the contract."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Role = Literal["system", "user", "assistant", "tool"]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One call the model asked for. ``arguments_error`` is set when the arguments were not JSON."""

    id: str
    name: str
    arguments: dict[str, Any]
    arguments_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ToolCall:
        return cls(data["id"], data["name"], data.get("arguments") or {})


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_json() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Message:
        """A message as a request recorded it (``to_json``): the same message again."""
        return cls(
            data["role"],
            data["content"],
            tuple(ToolCall.from_json(c) for c in data.get("tool_calls") or ()),
            data.get("tool_call_id"),
        )
