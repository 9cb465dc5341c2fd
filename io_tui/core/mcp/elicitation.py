"""An MCP server's elicitation (``elicitation/create``): it asks the operator for input through a
form built from a flat JSON schema, in the middle of one of its tool calls.

This module holds what the server asked (``ElicitAsk``), the form's fields, and how a decision
answers it; the run whose call it is asks it (``core.run.server_asks``) as it asks any act
(``core.run.ask``), checked as ``exec`` on ``mcp__<server>__elicitation``: a policy deny
declines it, anything else puts it to the operator (a policy allow cannot fill a form). The
operator's answer maps onto the protocol's three (``ElicitAsk.answer_for``):

- **accept**: an approval that carries the filled form (``Decision.arguments``), checked against
  the server's schema;
- **decline**: a deny (its reason recorded), or an approval without a form: an approver that
  cannot show one (``io-tui run``'s terminal, ``--approve all``) declines, saying so;
- **cancel**: a defer, or no answer within what is left of the call's ``call_timeout_s``.

The outcome is recorded with the request (``performed``: action, content or reason).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from io_tui.core.authority.approvals import APPROVING, ApprovalRequest, Decision, DecisionKind

Action = Literal["accept", "decline", "cancel"]
ELICITATION = "elicitation"  # the policy target's last part: mcp__<server>__elicitation


@dataclass(frozen=True, slots=True)
class FormField:
    """One field of an elicitation form, from its schema property."""

    name: str
    kind: str  # "string", "integer", "number", "boolean", "choice" or "choices" (multi-select)
    title: str
    description: str = ""
    required: bool = False
    default: Any = None
    options: tuple[tuple[str, str], ...] = ()  # (value, label) of a choice
    format: str | None = None  # a string's: email, uri, date, date-time
    minimum: float | None = None
    maximum: float | None = None


def form_fields(schema: dict[str, Any]) -> list[FormField]:
    """The fields of a requested schema (flat: top-level properties only), in its order."""
    required = set(schema.get("required") or ())
    fields = []
    for name, spec in (schema.get("properties") or {}).items():
        if not isinstance(spec, dict):
            continue
        kind = str(spec.get("type") or "string")
        options = _options(spec)
        if kind == "array":
            items = spec.get("items")
            options = _options(items) if isinstance(items, dict) else ()
            kind = "choices"
        elif options:
            kind = "choice"
        fields.append(
            FormField(
                name,
                kind,
                str(spec.get("title") or name),
                str(spec.get("description") or ""),
                name in required,
                spec.get("default"),
                options,
                spec.get("format"),
                spec.get("minimum"),
                spec.get("maximum"),
            )
        )
    return fields


def _options(spec: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """A choice's (value, label): ``enum`` (with ``enumNames``), or ``oneOf``/``anyOf`` consts."""
    if isinstance(spec.get("enum"), list):
        names = spec.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(spec["enum"]) else None
        return tuple(
            (str(v), str(labels[i]) if labels else str(v)) for i, v in enumerate(spec["enum"])
        )
    for key in ("oneOf", "anyOf"):
        found = spec.get(key)
        if isinstance(found, list):
            return tuple(
                (str(o["const"]), str(o.get("title") or o["const"]))
                for o in found
                if isinstance(o, dict) and "const" in o
            )
    return ()


def form_problems(schema: dict[str, Any], content: dict[str, Any]) -> str:
    """What is wrong with ``content`` against the requested schema ('' when nothing)."""
    from io_tui.core.mcp.tools import _validator, schema_problems

    return schema_problems(_validator(schema), content, top="form")


@dataclass(frozen=True, slots=True)
class ElicitAnswer:
    """The protocol's answer: the action, the form's content when accepted, and why not."""

    action: Action
    content: dict[str, Any] | None = None
    reason: str = ""


@dataclass(frozen=True, slots=True)
class ElicitAsk:
    """What a server asked the operator: its message and the schema of the form to fill."""

    server: str
    target: str  # what the policy checks: ``mcp__<server>__elicitation``
    message: str
    schema: dict[str, Any] = field(default_factory=dict)
    wait_s: float | None = None  # how long the operator may take (what is left of the call)

    def text(self) -> str:
        """The request as the operator reads it (the approval's content, the inbox)."""
        lines = [f"MCP server '{self.server}' asks you to fill in a form: {self.message}"]
        for f in form_fields(self.schema):
            what = f.kind if not f.options else f"one of {', '.join(v for v, _ in f.options)}"
            about = f": {f.description}" if f.description else ""
            lines.append(f"  {f.name}{'*' if f.required else ''} ({what}){about}")
        return "\n".join(lines)

    def answer_for(self, decision: Decision) -> ElicitAnswer:
        """The protocol's answer to this request, from the decision that stands on it."""
        if decision.kind in APPROVING and decision.arguments is not None:
            problems = form_problems(self.schema, decision.arguments)
            if problems:
                return ElicitAnswer(
                    "decline", reason=f"the form does not match the request: {problems}"
                )
            return ElicitAnswer("accept", dict(decision.arguments))
        if decision.kind in APPROVING:
            return ElicitAnswer(
                "decline",
                reason=f"approved by {decision.decided_by} without a filled form (a form is "
                "filled in the TUI's approval)",
            )
        if decision.kind is DecisionKind.DENY:
            return ElicitAnswer("decline", reason=decision.reason or "declined by the operator")
        return ElicitAnswer("cancel", reason=f"not answered ({decision.decided_by})")


def is_elicitation(request: ApprovalRequest) -> bool:
    """Whether an approval request is a server's form for the operator to fill."""
    return request.tool.endswith(f"__{ELICITATION}") and "requested_schema" in request.arguments
