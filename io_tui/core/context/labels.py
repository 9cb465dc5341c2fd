"""The labels every manifest entry and section carries: what it is and on whose authority.

``role`` is what the piece is to the model (the vocabulary of DESIGN §3.2):

- ``instruction``: the harness's system prompt and tool schemas, the project instruction files;
- ``operator input``: the task contract, the operator's messages;
- ``runtime evidence``: what the harness itself states (receipts of writes, refusals and errors,
  the progress ledger, the collapse line, memory the operator wrote or verified);
- ``untrusted data``: what came from the world (file contents, command output, search hits, MCP
  results, skills), a failed MCP call, whose message quotes the server's own words (its error
  text, its stderr) after the harness's sentence, and a sub-agent's answer (its run read the
  same world): framed as data (``untrusted.frame``), always a tool result, never a system or
  instruction section;
- ``model output``: the model's own turns, summaries, unverified inferences.

``authority`` says who stands behind it (the harness, the operator, ``AGENTS.md file``, a memory
tier by verification, a tool, an MCP server, a sub-agent run); ``source_ref`` and
``source_version`` which source and which version of it (path + content digest, command + exit
code, server + tool, a sub-agent's goal); ``digest`` is of the text this request sent (empty
when nothing of its own was sent).

An observation's role comes from its kind alone, so no tool's output can ask to be promoted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from enum import StrEnum

from io_tui.core.ledger import Observation, ObsKind, content_digest


class Role(StrEnum):
    INSTRUCTION = "instruction"
    OPERATOR = "operator input"
    EVIDENCE = "runtime evidence"
    UNTRUSTED = "untrusted data"
    MODEL = "model output"


Labels = tuple[str, str, str, str]  # role, authority, source_ref, source_version (a plain
# tuple: a long run labels every observation, and a named tuple takes 20 times as long to make)


HARNESS = "harness"
OPERATOR = "operator"
MODEL = "model"

# What an observation of each kind is. Nothing maps to ``instruction``: a tool result is data or
# evidence, whatever its text says.
_ROLES = {
    ObsKind.READ: Role.UNTRUSTED,
    ObsKind.LIST: Role.UNTRUSTED,
    ObsKind.FIND: Role.UNTRUSTED,
    ObsKind.GREP: Role.UNTRUSTED,
    ObsKind.EXEC: Role.UNTRUSTED,
    ObsKind.MCP: Role.UNTRUSTED,  # a server's answer, or its failure quoting it (``calls.py``)
    ObsKind.SKILL: Role.UNTRUSTED,
    ObsKind.WRITE: Role.EVIDENCE,  # the harness's receipt of what it wrote
    ObsKind.MEMORY: Role.EVIDENCE,  # the store's receipt of a remember / forget
    ObsKind.ERROR: Role.EVIDENCE,  # the harness's refusal or error
    ObsKind.MESSAGE: Role.EVIDENCE,  # the harness's note on a call it did not run
    ObsKind.AGENT: Role.UNTRUSTED,  # a sub-agent's answer: made from what its run read
}
_EXIT_MARKS = ("\nexit code ", "\ntimed out after ")  # how ``run_command`` heads its output
MCP_PREFIX = "mcp__"


def digest(text: str) -> str:
    """The digest of text as sent (``content_digest`` of its UTF-8)."""
    return content_digest(text.encode("utf-8", "surrogatepass"))


# an enum member read off its class takes ten times as long as a global: read them once
_ERROR, _MESSAGE, _MCP, _EXEC = ObsKind.ERROR, ObsKind.MESSAGE, ObsKind.MCP, ObsKind.EXEC
_AGENT = ObsKind.AGENT
_UNTRUSTED = Role.UNTRUSTED


def observation_labels(obs: Observation) -> Labels:
    """An observation's labels, from its kind, tool, target and what it was made from."""
    kind = obs.kind
    role = _ROLES.get(kind, _UNTRUSTED)
    if kind is _ERROR or kind is _MESSAGE:
        return (role, HARNESS, obs.target, "")
    if kind is _MCP:
        server, tool = _mcp_parts(obs)
        return (role, f"MCP server {server}", f"{server} {tool}" if tool else obs.target, "")
    if kind is _EXEC:
        return (role, obs.tool, obs.target, _exit_status(obs))
    if kind is _AGENT:  # its span names the child run (``run N``), set by the harness
        return (role, f"sub-agent {obs.span}" if obs.span else "sub-agent", obs.target, "")
    return (role, obs.tool, obs.target, _seen_version(obs) if obs.seen else "")


def _exit_status(obs: Observation) -> str:
    """``exit code N`` or ``timed out after …``: the line after the command's ``$ argv``."""
    text, near = obs.text, len(obs.target) + 200  # the frame's head, then ``$ <argv>``
    for mark in _EXIT_MARKS:
        start = text.find(mark, 0, near)
        if start >= 0:
            end = text.find("\n", start + 1)
            return text[start + 1 : end if end >= 0 else len(text)].split(";")[0]
    return ""


def _mcp_parts(obs: Observation) -> tuple[str, str]:
    """(server, tool or resource URI) of an MCP result: ``mcp__server__tool`` calls, and
    ``mcp:server:uri`` resource reads and listings."""
    if obs.target.startswith("mcp:"):
        _, server, uri = obs.target.split(":", 2)
        return server, uri
    return mcp_tool_parts(obs.tool)


def mcp_tool_parts(name: str) -> tuple[str, str]:
    """(server, tool) of an MCP tool's exposed name, ``mcp__<server>__<tool>``."""
    server, _, tool = name.removeprefix(MCP_PREFIX).partition("__")
    return server, tool


def _seen_version(obs: Observation) -> str:
    """The content digest of the file a result was made from, or one digest over the files
    (paths and digests) of a search."""
    seen = obs.seen
    if not seen:
        return ""
    if len(seen) == 1:
        return seen[0].digest
    h = hashlib.blake2b(digest_size=12)
    for s in seen:
        h.update(f"{s.path}\0{s.digest}\0".encode())
    return f"{len(seen)} paths {h.hexdigest()}"


def summary_labels(source: str, steps: str) -> Labels:
    """The compaction summary: the model's (or the harness's digest of) earlier work."""
    if source == "provider":
        return (Role.MODEL, MODEL, steps, source)
    return (Role.EVIDENCE, HARNESS, steps, source)


def memory_labels(provenance: Iterable[str]) -> tuple[Role, str]:
    """The memory block's role and authority from its notes' provenance labels
    (``MemoryNote.label``): any unverified note makes it model output, only confirmed
    preferences operator input, verified notes runtime evidence; every label is counted."""
    counts: dict[str, int] = {}
    for label in provenance:
        counts[label] = counts.get(label, 0) + 1
    if any(not k.startswith(("verified", "confirmed")) for k in counts):
        role = Role.MODEL  # an unverified note is only the model's (or a writer's) claim
    elif counts and set(counts) <= {"confirmed preference"}:
        role = Role.OPERATOR
    else:
        role = Role.EVIDENCE
    named = ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    return role, f"long-term memory: {named}" if named else "long-term memory"


ROLES = tuple(r.value for r in Role)
