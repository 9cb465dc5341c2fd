"""An MCP server's sampling request (``sampling/createMessage``), as what it asks the model.

The server asks the client's model in the middle of one of its tool calls; the run whose call
it is answers it through its own provider once the operator approves it
(``core.run.server_asks``). This module holds only what the server asked, and the text the
operator reviews.
"""

from __future__ import annotations

from dataclasses import dataclass

SAMPLING = "sampling"  # the policy target's last part: mcp__<server>__sampling


@dataclass(frozen=True, slots=True)
class SamplingAsk:
    """What a server asked the model: its messages as (role, text), a system prompt, a limit."""

    server: str
    target: str  # what the policy checks: ``mcp__<server>__sampling``
    messages: tuple[tuple[str, str], ...]
    system_prompt: str | None = None
    max_tokens: int | None = None
    wait_s: float | None = None  # how long the operator may take (what is left of the call)

    def text(self) -> str:
        """The request as the operator reads it in the approval."""
        head = f"MCP server '{self.server}' asks the model"
        limit = f" (at most {self.max_tokens:,} tokens)" if self.max_tokens else ""
        lines = [head + limit + ":"]
        if self.system_prompt:
            lines.append(f"[system] {self.system_prompt}")
        lines += [f"[{role}] {text}" for role, text in self.messages]
        return "\n".join(lines)
