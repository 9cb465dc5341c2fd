"""The fixed frame: system prompt, tool schemas, the task contract, project instructions and,
for a run that continues an earlier one, that run's progress ledger.

Never elided; counted and reported beside the ceiling, not inside it (DESIGN §3.2, step 1).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from io_tui.core.context.labels import (
    HARNESS,
    MCP_PREFIX,
    OPERATOR,
    Role,
    digest,
    mcp_tool_parts,
)
from io_tui.core.context.manifest import Omission, Section
from io_tui.core.contract import TaskContract, estimate_tokens
from io_tui.core.providers.base import ToolSpec
from io_tui.core.providers.messages import Message


@dataclass(frozen=True, slots=True)
class InstructionFile:
    """A project instruction file (AGENTS.md, CLAUDE.md, the user's own), carried whole."""

    name: str
    source: str
    text: str


@dataclass(frozen=True, slots=True)
class Withheld:
    """An instruction file found but not sent, and why (the read policy denies it)."""

    name: str
    source: str
    version: str  # its content digest
    why: str


@dataclass(frozen=True, slots=True)
class Frame:
    """The fixed frame: never elided, counted and reported beside the ceiling, not inside it."""

    system_prompt: str
    tools: tuple[ToolSpec, ...]
    contract: TaskContract
    instructions: tuple[InstructionFile, ...] = ()
    withheld: tuple[Withheld, ...] = ()


def _schemas(tools: tuple[ToolSpec, ...]) -> str:
    return json.dumps(
        [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]
    )


def schema_tokens(tools: tuple[ToolSpec, ...]) -> int:
    """What sending ``tools`` beside a request's messages is counted as (the frame's section)."""
    return estimate_tokens(_schemas(tools)) if tools else 0


def frame_messages(frame: Frame) -> tuple[tuple[Message, ...], tuple[Section, ...]]:
    """System prompt, contract and instruction files as messages; tool schemas are counted here
    and sent beside the messages (``CompletionRequest.tools``)."""
    contract = frame.contract
    task = [f"Goal: {contract.goal}", f"Success criterion: {contract.success_criterion()}"]
    task += [f"Constraint: {c}" for c in contract.constraints]
    task_text = "\n".join(task)
    schemas = _schemas(frame.tools)
    sections = [
        Section(
            "system", "harness", estimate_tokens(frame.system_prompt), role=Role.INSTRUCTION,
            authority=HARNESS, source_ref="system prompt", digest=digest(frame.system_prompt),
            reason="the harness's system prompt and skill catalogue: the head of every request",
        ),
        # no tools: none are sent (``CompletionRequest.tools``), so none are counted
        Section(
            "tools", f"{len(frame.tools)} tool schemas",
            estimate_tokens(schemas) if frame.tools else 0, role=Role.INSTRUCTION,
            authority=_tool_authority(frame.tools), source_ref="tool schemas",
            digest=digest(schemas) if frame.tools else "",
            reason=f"the schemas of the {len(frame.tools)} tools offered to the model"
            if frame.tools else "no tool is offered: none is sent",
        ),
        Section(
            "contract", "task", estimate_tokens(task_text), role=Role.OPERATOR,
            authority=OPERATOR, source_ref="task contract", digest=digest(task_text),
            reason="the run's task contract (goal, success criterion, constraints): the"
            " operator's task, in every request",
        ),
    ]  # fmt: skip
    messages = [Message("system", frame.system_prompt), Message("user", task_text)]
    for inst in frame.instructions:
        body = f"Project instructions from {inst.name}:\n{inst.text}"
        messages.append(Message("user", body))
        sections.append(
            Section(
                inst.name, inst.source, estimate_tokens(body), role=Role.INSTRUCTION,
                authority=f"{inst.name} file", source_ref=inst.source,
                source_version=digest(inst.text), digest=digest(body),
                reason=f"{inst.name} found at {inst.source}: project instructions, carried whole",
            )
        )  # fmt: skip
    for held in frame.withheld:  # nothing sent: the section says only what was left out
        sections.append(
            Section(
                held.name, held.source, 0, role=Role.INSTRUCTION, authority=f"{held.name} file",
                source_ref=held.source, source_version=held.version,
                reason=f"{held.name} found at {held.source}, not sent: {held.why}",
                omitted=(Omission(held.source, held.why),),
            )
        )  # fmt: skip
    carried = contract.continues
    if carried is not None:  # the earlier run's progress ledger: runtime evidence, after them
        messages.append(Message("user", carried.text))
        source = f"run {carried.run_id} ledger revision {carried.revision} ({carried.digest})"
        sections.append(
            Section(
                "ledger", source, estimate_tokens(carried.text), role=Role.EVIDENCE,
                authority=HARNESS, source_ref=f"run {carried.run_id} progress ledger",
                source_version=f"revision {carried.revision} {carried.digest}",
                digest=digest(carried.text),
                reason=f"this run continues run {carried.run_id}: its progress ledger, the"
                " state it left",
            )
        )  # fmt: skip
    return tuple(messages), tuple(sections)


def _tool_authority(tools: tuple[ToolSpec, ...]) -> str:
    """The harness, and the MCP servers whose tools it offers (their descriptions are theirs)."""
    servers = sorted({mcp_tool_parts(t.name)[0] for t in tools if t.name.startswith(MCP_PREFIX)})
    return HARNESS + "".join(f", MCP server {s}" for s in servers)
