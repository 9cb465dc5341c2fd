"""Context cost with prompt caching priced in: io-tui against four baselines on one step log.

    .venv/bin/python benchmarks/context_cost.py [--quick] [--steps 60 200 500]
                                                [--ceiling 8000 24000 64000] [--json FILE]
                                                [--breakdown]

Each session is a real run: the run loop (``start_run``) with a real SQLite store, the real
tools over a copy of ``benchmarks/fixture_repo.tar.gz`` and the scripted provider answering from a
generated script: whole and range reads, edits by ``edit_file`` and ``write_file``, edits by
``run_command`` (``sed -i`` by pattern and by line number), greps, views of a file through a
command (``grep -n -A``), repeated test runs with long output (a pytest-like check script), a
reproduction script of the agent's own (written, run, removed), memory notes, and a final
answer; one turn in three says some reasoning before its call. The last four are what real
agents' sessions do (``real_sessions.py``; docs/BENCHMARKS.md, "Real sessions"). Every 40-line
block of every file carries a unique version marker (``# rev: PATH@bK vN``); every edit bumps
the marker of what it changed.

At every request the provider records what io-tui sent and, from the store and the workspace
as they are at that moment, what the baselines would have sent (``../shared/CONTEXT-COST.md``):

- naive: the first request's frame, then every earlier step's turn and its results, verbatim;
  priced without caching (naive) and with it (naive+cache: append-only, its prefix always hits);
- last-K: the frame and the last K steps verbatim, K chosen so its mean request size is the
  closest to io-tui's;
- oracle: only live content, no ceiling — the current content of each file read (whole, once),
  each distinct search re-run now, the latest output of each distinct command, the memory block.

Reported per session and ceiling: plain input tokens (every request's system, tool schemas and
messages, estimated; io-tui's summary requests included), cost with caching (CachePrices, by
default Anthropic's: write 1.25, read 0.1), the share of requests that rewrite the prefix, stale
results carried (tool results holding a version marker older than the file's, summed over
requests; the argv a command result echoes is not content), probe recall on the final request (each block marker ever read at its current
version, each remembered value, the latest test output's session digest), and the ratios
io-tui / naive (plain), io-tui / naive+cache (cost), io-tui / oracle (plain).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import fixture_repo

from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.boundary.workspace import Workspace
from io_tui.core.context.cache import cached_prefix, message_key, request_cost, stored_tokens
from io_tui.core.context.turns import message_tokens
from io_tui.core.contract import (
    ContextBudget,
    TaskContract,
    entry_cap_chars,
    estimate_tokens as estimate,
)
from io_tui.core.ledger import StepRecord, bound_text
from io_tui.core.memory.notes import MemoryNote, render_notes
from io_tui.core.prices import CachePrices
from io_tui.core.providers.base import CompletionRequest, StreamEvent
from io_tui.core.providers.messages import Message
from io_tui.core.providers.scripted import ScriptedProvider
from io_tui.core.run.harness import Harness, harness_registry
from io_tui.core.run.loop import start_run
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store
from io_tui.core.text.numbered import GUTTER, number_lines
from io_tui.core.tools.base import ToolContext, ToolError

BLOCK_LINES = 40
MARKER = re.compile(r"rev: (\S+)@b(\d+) v(\d+)")
SESSION = re.compile(r"\(session [0-9a-f]{12}\)")
GOAL = "Make the policy checks pass without weakening any rule; keep notes of what you learn."
ORACLE_HINT = "read a narrower range"
Calls = tuple[tuple[str, dict[str, Any]], ...]
SCRATCH = "repro_check.py"  # the agent's own reproduction script, written, run and removed
REASONS = [
    "The failure points at the rule table, so the fix belongs there and not in the caller.",
    "I should keep the change minimal and leave the public interface as it is.",
    "The earlier output showed one failing check; the rest passed, so the change is local.",
    "Before editing I want to see how the surrounding code uses this value.",
    "If the marker moved, the line numbers I noted earlier are no longer right.",
    "The test output is long, but only the last lines say what failed.",
    "A sed by line number is quicker than an editor here, since I know the line.",
    "I will run the checks again after the change to be sure nothing else broke.",
]

# -- the workspace: the fixture repository with a version marker in every block ---------------


def plant_markers(text: str, path: str) -> str:
    """``text`` with ``# rev: PATH@bK v0`` before every ``BLOCK_LINES`` lines."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    for k in range(0, len(lines), BLOCK_LINES):
        out.append(f"# rev: {path}@b{k // BLOCK_LINES} v0\n")
        out += lines[k : k + BLOCK_LINES]
    return "".join(out)


CHECK_SCRIPT = '''"""A pytest-like check of the workspace: one line per function, one failure, long output."""
import hashlib, pathlib, re
root = pathlib.Path(".")
files = sorted(p for p in root.rglob("*.py") if "rev:" in p.read_text())
text = "".join(p.read_text() for p in files)
digest = hashlib.sha1(text.encode()).hexdigest()[:12]
print("=" * 30, "test session starts", "=" * 30)
print(f"platform linux -- Python 3.11, pytest-8.3 (session {digest})")
tests = [(p, m.group(1)) for p in files for m in re.finditer(r"^\\s*def (\\w+)", p.read_text(), re.M)]
print(f"collected {len(tests)} items\\n")
bad = int(digest, 16) % len(tests)
for i, (p, name) in enumerate(tests):
    verdict = "FAILED" if i == bad else "PASSED"
    print(f"tests/test_{p.stem}.py::test_{name} {verdict}  [{100 * (i + 1) // len(tests):3d}%]")
p, name = tests[bad]
src = [l for l in p.read_text().splitlines() if "rev:" not in l]
at = next(i for i, l in enumerate(src) if re.match(rf"\\s*def {name}\\b", l))
print("\\n" + "=" * 35, "FAILURES", "=" * 35)
print(f"{'_' * 25} test_{name} {'_' * 25}\\n")
for l in src[at : at + 14]:
    print(f"    {l}")
print(f"E   AssertionError: {name} returned a value the rule did not expect")
print(f"\\n{p}:{at + 1}: AssertionError")
print("=" * 28, "short test summary info", "=" * 28)
print(f"FAILED tests/test_{p.stem}.py::test_{name} - AssertionError")
print(f"{'=' * 20} 1 failed, {len(tests) - 1} passed in 0.{int(digest, 16) % 97:02d}s "
      f"(session {digest}) {'=' * 20}")
'''


class World:
    """The workspace as the script generator tracks it, to write edits that apply exactly."""

    def __init__(self) -> None:
        fixture = fixture_repo.files()
        self.pyproject = fixture.pop("pyproject.toml")
        self.files = {rel: plant_markers(text, rel) for rel, text in fixture.items()}

    def write_to(self, root: Path) -> None:
        for rel, text in self.files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        (root / "pyproject.toml").write_text(self.pyproject)

    def markers(self, path: str) -> list[str]:
        return [m.group(0) for m in MARKER.finditer(self.files[path])]

    def line_count(self, path: str) -> int:
        return len(self.files[path].splitlines())

    def bump(self, path: str, block: int) -> tuple[str, str]:
        old = next(m for m in self.markers(path) if m.startswith(f"rev: {path}@b{block} "))
        version = int(old.rsplit("v", 1)[1])
        new = f"rev: {path}@b{block} v{version + 1}"
        self.files[path] = self.files[path].replace(f"# {old}\n", f"# {new}\n")
        return old, new


# -- the session script ----------------------------------------------------------------------

PATTERNS = [
    (r"def \w+\(self", None),
    (r"^class ", None),
    (r"rev: ", "src/harness/tools"),
    (r"raise \w+Error", None),
    (r"@dataclass", None),
    (r"rev: ", "tests"),
    (r"import re$", None),
    (r"Effect\.", "src/harness"),
]


@dataclass
class Session:
    """The script of one session, written against the world it will meet."""

    steps: int
    cap: int  # the entry cap: what one observation holds
    world: World = field(default_factory=World)
    turns: list[dict[str, Any]] = field(default_factory=list)
    rng: random.Random = field(default_factory=lambda: random.Random(13))

    def turn(self, text: str, *calls: tuple[str, dict[str, Any]]) -> None:
        self.turns.append(
            {
                "text": self.thought(text) if calls else text,
                "tool_calls": [{"name": n, "arguments": a} for n, a in calls],
            }
        )

    def read(self, path: str) -> tuple[tuple[str, dict[str, Any]], ...]:
        """The whole file: one read when it fits one observation, else reads of parts that do
        (what the read tool's refusal tells an agent to do)."""
        total = self.world.line_count(path)
        if self.fitting(path, 1, total) == total:
            return (("read_file", {"path": path}),)
        calls, first = [], 1
        while first <= total:
            limit = self.fitting(path, first, total - first + 1)
            calls.append(("read_file", {"path": path, "offset": first, "limit": limit}))
            first += limit
        return tuple(calls)

    def range_read(self, path: str, block: int) -> tuple[str, dict[str, Any]]:
        first = max(1, block * (BLOCK_LINES + 1) + 1 - self.rng.randrange(6))
        limit = self.fitting(path, first, self.rng.randrange(30, 61))
        return "read_file", {"path": path, "offset": first, "limit": limit}

    def fitting(self, path: str, first: int, limit: int) -> int:
        """How many of ``limit`` lines from ``first`` one observation holds (with a margin for
        the range's closing line)."""
        lines = self.world.files[path].splitlines()
        width = max(4, len(str(len(lines))))
        used = 0
        for n, line in enumerate(lines[first - 1 : first - 1 + limit]):
            used += width + len(GUTTER) + len(line) + 1
            if used > self.cap - 40:
                return max(1, n)
        return min(limit, len(lines) - first + 1)

    def block(self, path: str) -> int:
        return self.rng.randrange(len(self.world.markers(path)))

    def edit(self, path: str) -> tuple[str, dict[str, Any]]:
        old, new = self.world.bump(path, self.block(path))
        return "edit_file", {"path": path, "old": f"# {old}\n", "new": f"# {new}\n"}

    def sed(self, path: str, by_number: bool = False) -> tuple[str, dict[str, Any]]:
        """``sed -i`` by pattern, or (``by_number``) at the line number the agent saw, the way
        real agents edit a file they read once."""
        old, new = self.world.bump(path, self.block(path))
        if not by_number:
            return "run_command", {"argv": ["sed", "-i", f"s|{old}$|{new}|", path]}
        line = self.world.files[path].splitlines().index(f"# {new}") + 1
        return "run_command", {"argv": ["sed", "-i", f"{line}s|{old}$|{new}|", path]}

    def shell_view(self, path: str) -> tuple[str, dict[str, Any]]:
        """A view of a file through a command (``grep -n -A``): its lines in a command's
        output, which nothing ties to the file."""
        return "run_command", {"argv": ["grep", "-n", "-A", "12", "^# rev: ", path]}

    def thought(self, text: str) -> str:
        """``text`` with, one turn in three, the reasoning real agents write before acting
        (their turns' text has a median of about 100 characters and a mean of 650)."""
        if self.rng.randrange(3):
            return text
        return text + " " + " ".join(self.rng.sample(REASONS, 3))

    def rewrite(self, path: str) -> tuple[str, dict[str, Any]]:
        for block in range(len(self.world.markers(path))):
            self.world.bump(path, block)
        return "write_file", {"path": path, "content": self.world.files[path]}

    def check(self, script: str) -> tuple[str, dict[str, Any]]:
        return "run_command", {"argv": [sys.executable, script]}

    def scratch(self, path: str) -> tuple[str, dict[str, Any]]:
        """A reproduction script of the agent's own, outside the world's files (no marker)."""
        code = f"import pathlib\nprint(pathlib.Path({path!r}).read_text().count('def '))\n"
        return "write_file", {"path": SCRATCH, "content": code}

    def generate(self, check_script: str) -> dict[str, Any]:
        cycle = 0
        while len(self.turns) < self.steps - 1:
            for text, calls in self.cycle(cycle, check_script):  # the next is made if taken
                self.turn(text, *calls)
                if len(self.turns) >= self.steps - 1:
                    break
            cycle += 1
        self.turn("Done: the checks were run and the notes are kept.")
        return {"model": "scripted", "turns": self.turns}

    def cycle(self, cycle: int, check_script: str) -> Iterator[tuple[str, Calls]]:
        """One cycle's turns, each made when it is taken: an edit changes the world the next
        turn is written against, and a turn cut at the session's end changes nothing."""
        files = list(self.world.files)
        small = min(files, key=lambda path: len(self.world.files[path]))
        focus = files[(cycle // 3) % len(files)]
        other = files[(cycle * 3 + 1) % len(files)]
        if other == focus:
            other = files[(files.index(focus) + 1) % len(files)]
        pattern, scope = PATTERNS[cycle % len(PATTERNS)]
        grep: dict[str, Any] = {"pattern": pattern} | ({"path": scope} if scope else {})
        yield f"Reading {focus}.", self.read(focus) + (self.read(other) if cycle % 2 else ())
        yield f"Searching for /{pattern}/.", (("grep", grep),)
        yield f"Looking at part of {other}.", (self.range_read(other, self.block(other)),)
        yield f"Changing {focus}.", (self.edit(focus),)
        yield "Running the checks.", (self.check(check_script),)
        yield f"Checking the change in {focus}.", (self.range_read(focus, self.block(focus)),)
        if cycle % 3 == 0:  # the agent's own script: written, run, later removed
            yield f"Writing a script to reproduce it on {focus}.", (self.scratch(focus),)
            yield "Running my script.", (("run_command", {"argv": [sys.executable, SCRATCH]}),)
        if cycle % 4 == 3:
            yield f"Rewriting {small}.", (self.rewrite(small),)
        else:
            yield f"Fixing {other} with sed.", (self.sed(other, by_number=cycle % 2 == 0),)
        if cycle % 3 == 1:
            yield f"Looking at {focus} with grep.", (self.shell_view(focus),)
        yield "Running the checks again.", (self.check(check_script),)
        if cycle % 3 == 2:
            yield "Removing my script.", (("run_command", {"argv": ["rm", "-f", SCRATCH]}),)
        if cycle % 2:
            value = f"cycle {cycle}: {focus} keeps its retry limit at {self.rng.randrange(99)}"
            yield "Noting what I learnt.", (("remember", {"key": f"fact-{cycle}", "value": value}),)
        else:
            yield "Listing the Python files.", (("find", {"pattern": "**/*.py"}),)
        yield f"Reading {focus} again.", self.read(focus)


# -- what each request carried, recorded as the run goes -------------------------------------


@dataclass
class Shot:
    """One working request of io-tui, with the baselines' view of the same moment."""

    io_tui: list[Message]
    history_steps: int  # steps committed before this request
    oracle: list[Message]
    current: dict[str, int]  # "PATH@bK" -> its current version
    notes: tuple[str, ...]
    latest_session: str | None


class Measuring:
    """The scripted provider, recording every working request and the baselines' view of it."""

    name = "scripted"

    def __init__(self, inner: ScriptedProvider, store: Store, root: Path, ceiling: int) -> None:
        self.inner, self.store, self.root, self.ceiling = inner, store, root, ceiling
        self.model = inner.model
        self.shots: list[Shot] = []
        self.tools_tokens = 0
        self.history: list[StepRecord] = []
        self._tool_cache: dict[tuple[str, str], str] = {}
        self.registry = harness_registry()

    def describe(self) -> dict[str, Any]:
        return self.inner.describe()

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def stream(self, request: CompletionRequest) -> AsyncIterator[StreamEvent]:
        if request.purpose != "summary":
            if not self.tools_tokens:
                self.tools_tokens = estimate(_tools_text(request))
            await self._record(request)
        async for event in self.inner.stream(request):
            yield event

    async def _record(self, request: CompletionRequest) -> None:
        self.history = await self.store.runs.history(1)
        digest, current = self._disk()
        notes = await self.store.notes.notes_for(str(self.root))
        self.shots.append(
            Shot(
                io_tui=list(request.messages),
                history_steps=len(self.history),
                oracle=await self._oracle(digest, notes),
                current=current,
                notes=tuple(n.value for n in notes),
                latest_session=self._latest_session(),
            )
        )

    def _disk(self) -> tuple[str, dict[str, int]]:
        text = "".join(p.read_text() for p in sorted(self.root.rglob("*.py")))
        current = {f"{p}@b{b}": int(v) for p, b, v in MARKER.findall(text)}
        return hashlib.sha1(text.encode()).hexdigest(), current

    def _latest_session(self) -> str | None:
        for record in reversed(self.history):
            for o in record.observations:
                found = SESSION.search(o.text)
                if found:
                    return found.group(0)
        return None

    async def _oracle(self, digest: str, notes: Sequence[MemoryNote]) -> list[Message]:
        """Only live content: the lines of each file any read showed, as they are now, each
        distinct search re-run now, the latest output of each distinct command, the memory
        block."""
        lines_read: dict[str, list[tuple[int, int]]] = {}
        searches: dict[str, tuple[str, dict[str, Any]]] = {}
        commands: dict[str, str] = {}
        for record in self.history:
            results = {o.call_id: o for o in record.observations}
            for call in record.tool_calls:
                result = results.get(call.id)
                if result is None or result.is_error:
                    continue
                args = call.arguments
                if call.name == "read_file":
                    first = args.get("offset") or 1
                    last = first + args["limit"] - 1 if args.get("limit") else 1 << 30
                    lines_read.setdefault(args["path"], []).append((first, last))
                elif call.name in ("grep", "find"):
                    searches[json.dumps([call.name, args])] = (call.name, args)
                elif call.name == "run_command":
                    commands[json.dumps(args["argv"])] = result.text
        out = [Message("user", self._lines(p, wanted)) for p, wanted in lines_read.items()]
        for name, args in searches.values():
            out.append(Message("user", await self._search(name, args, digest)))
        out += [Message("user", text) for text in commands.values()]
        memory = render_notes(notes, max_chars=self.ceiling).text
        return out + ([Message("user", memory)] if memory else [])

    def _lines(self, path: str, spans: list[tuple[int, int]]) -> str:
        """The current text of the lines of ``path`` in ``spans``, numbered as the read tool
        does."""
        lines = (self.root / path).read_text().splitlines()
        wanted = {n for a, b in spans for n in range(a, min(b, len(lines)) + 1)}
        runs: list[str] = []
        first: int | None = None
        for n in range(1, len(lines) + 2):
            inside = n in wanted and n <= len(lines)
            if inside and first is None:
                first = n
            elif not inside and first is not None:
                runs.append(number_lines(lines[first - 1 : n - 1], first, len(lines)))
                first = None
        return f"{path}\n" + "\n…\n".join(runs)

    async def _search(self, name: str, arguments: dict[str, Any], digest: str) -> str:
        key = (json.dumps([name, arguments]), digest)
        if key not in self._tool_cache:
            tool = self.registry.get(name)
            cap = entry_cap_chars(self.ceiling)
            ctx = ToolContext(Workspace(self.root), 1, 0, cap, {})
            try:
                text = (await tool.run(tool.parse(arguments), ctx)).text
            except ToolError as exc:
                text = str(exc)
            self._tool_cache[key] = bound_text(text, cap, ORACLE_HINT)
        return self._tool_cache[key]


def _tools_text(request: CompletionRequest) -> str:
    return json.dumps(
        [{"name": t.name, "description": t.description, "parameters": t.parameters}
         for t in request.tools]
    )  # fmt: skip


# -- pricing and checking each strategy's requests -------------------------------------------


def step_messages(record: StepRecord) -> list[Message]:
    out = [Message("user", f"[operator] {m}") for m in record.operator_messages]
    if record.text or record.tool_calls:
        out.append(Message("assistant", record.text, record.tool_calls))
    out += [Message("tool", o.text, tool_call_id=o.call_id) for o in record.observations]
    return out


@dataclass
class Tally:
    requests: int = 0
    plain: int = 0
    cost: float = 0.0
    rewrites: int = 0
    stale: int = 0
    recall: float = 0.0
    probes: int = 0
    largest: int = 0


class Pricer:
    """Serializes and prices messages once each (consecutive requests share most of them)."""

    def __init__(self, tools_tokens: int, prices: CachePrices) -> None:
        self.tools_tokens, self.prices = tools_tokens, prices
        self._keys: dict[int, tuple[Message, str, int]] = {}

    def item(self, message: Message) -> tuple[str, int]:
        hit = self._keys.get(id(message))
        if hit is None or hit[0] is not message:
            hit = (message, message_key(message.to_json()), message_tokens(message))
            self._keys[id(message)] = hit
        return hit[1], hit[2]

    def items(self, messages: Sequence[Message]) -> tuple[list[str], list[int]]:
        """The request's items in wire order: the system message, the tool schemas, the rest."""
        pairs = [self.item(m) for m in messages]
        pairs.insert(1, ("<tools>", self.tools_tokens))
        return [key for key, _ in pairs], [cost for _, cost in pairs]

    def tally(self, requests: Sequence[list[Message]], shots: Sequence[Shot]) -> Tally:
        t = Tally()
        previous: list[str] | None = None
        for messages, shot in zip(requests, shots, strict=True):
            keys, tokens = self.items(messages)
            total = sum(tokens)
            prefix = cached_prefix(previous, keys, tokens)
            t.requests += 1
            t.plain += total
            t.largest = max(t.largest, total)
            t.cost += request_cost(total, prefix.tokens, self.prices)
            t.rewrites += prefix.rewrote
            t.stale += stale_results(messages, shot.current)
            previous = keys
        t.recall, t.probes = recall(requests[-1], shots)
        return t


def summary_costs(
    requests: Sequence[dict[str, Any]], tools_tokens: int, prices: CachePrices
) -> tuple[int, float]:
    """The plain tokens and the cost of a run's summary requests, from its trace's
    ``requests`` (in the order sent): one that repeated the working request before it
    (``shared``) is priced against that request's cached prefix, the tool schemas with it;
    one of its own is sent uncached."""
    plain, cost = 0, 0.0
    before: list[str] | None = None
    for q in requests:
        keys = [message_key(m) for m in q["messages"]]
        keys.insert(1, "<tools>")
        if q["purpose"] == "work":
            before = keys
            continue
        tokens = [stored_tokens(m) for m in q["messages"]]
        if q.get("shared"):
            tokens.insert(1, tools_tokens)
            prefix = cached_prefix(before, keys, tokens)
            cost += request_cost(sum(tokens), prefix.tokens, prices)
        else:
            cost += sum(tokens) * prices.uncached
        plain += sum(tokens)
    return plain, cost


ECHO = re.compile(r"^\$ .*\n?", re.M)  # run_command's echo of its argv (a sed's markers)
SOURCE = re.compile(r"^\[untrusted data from .*\]\n?", re.M)  # the line naming the call (argv)
STUB = re.compile(r"\[step \d+ \w+ ")  # a stub: names the call (a sed's argv), shows nothing
DIFF = re.compile(r"\[step \d+ \w+ [^\n]*: step \d+'s result above, with these lines changed")


def shown(message: Message) -> str:
    """What a message shows of the workspace: its text without the commands it echoes (a
    stub shows none of it; a result sent as the difference from an earlier one shows the
    lines it adds, the rest being in that one)."""
    if message.role != "tool":
        return message.content
    if DIFF.match(message.content):
        added = [line[1:] for line in message.content.splitlines()[1:] if line.startswith("+")]
        return ECHO.sub("", SOURCE.sub("", "\n".join(added)))
    return "" if STUB.match(message.content) else ECHO.sub("", SOURCE.sub("", message.content))


def stale_results(messages: Sequence[Message], current: dict[str, int]) -> int:
    """Tool results holding a version marker older than the file's current one."""
    count = 0
    for m in messages:
        if m.role == "tool" and "rev: " in m.content:
            count += any(
                int(v) < current.get(f"{p}@b{b}", 0) for p, b, v in MARKER.findall(shown(m))
            )
    return count


def recall(final: Sequence[Message], shots: Sequence[Shot]) -> tuple[float, int]:
    """The probes on the final request: every block marker any read showed, at its current
    version; every remembered value; the latest test output's session digest."""
    last = shots[-1]
    seen = {
        f"{p}@b{b}"
        for shot in shots
        for m in shot.io_tui
        if m.role == "tool"
        for p, b, _ in MARKER.findall(shown(m))
    }
    text = "\n".join(shown(m) for m in final if m.role != "assistant")
    everything = "\n".join(json.dumps(m.to_json()) for m in final)
    probes = [f"rev: {block} v{last.current[block]}" in text for block in seen]
    probes += [json.dumps(note)[1:-1] in everything for note in last.notes]
    if last.latest_session:
        probes.append(last.latest_session in text)
    return (sum(probes) / len(probes) if probes else 1.0), len(probes)


# -- one session at one ceiling --------------------------------------------------------------


@dataclass
class Result:
    steps: int
    ceiling: int
    k: int
    seconds: float
    outcome: str
    oracle_final: int
    tallies: dict[str, Tally]
    breaks: list[
        tuple[str, int]
    ]  # why io-tui's prefix broke (core/context/cache.py), most common first
    # where io-tui's tokens went, summed over its working requests (``breakdown``)
    parts: dict[str, int] = field(default_factory=dict)


async def measure(steps: int, ceiling: int, prices: CachePrices) -> Result:
    started = time.perf_counter()
    # A fixed path, not a random temporary name: the path shows up in tool output, and its
    # characters move the token estimate and so the plan's decisions between runs.
    base = Path(tempfile.gettempdir()) / f"io-tui-cost-{steps}x{ceiling}"
    shutil.rmtree(base, ignore_errors=True)
    base.mkdir()
    try:
        root = base / "repo"
        session = Session(steps, entry_cap_chars(ceiling))
        session.world.write_to(root)
        check = base / "check.py"
        check.write_text(CHECK_SCRIPT)
        script = base / "script.json"
        script.write_text(json.dumps(session.generate(str(check))))
        store = await Store.open(base / "store.db")
        provider = Measuring(ScriptedProvider.from_file(script), store, root, ceiling)
        contract = TaskContract(
            GOAL,
            root,
            max_steps=steps + 1,
            context=ContextBudget(max_tokens=ceiling),
            cache=prices,
        )
        try:
            result = await start_run(Harness(store, provider, ApproveAll()), contract)
            history = await store.runs.history(1)
            trace = await build_trace(store, 1)
        finally:
            await store.close()
        drift = [p for p, t in session.world.files.items() if (root / p).read_text() != t]
        if drift:
            raise SystemExit(f"the workspace drifted from the script's world: {drift} ({result})")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    shots = provider.shots
    frame = shots[0].io_tui
    per_step = [step_messages(r) for r in history]

    def naive_at(shot: Shot, k: int | None = None) -> list[Message]:
        first = 0 if k is None else max(0, shot.history_steps - k)
        return frame + [m for s in per_step[first : shot.history_steps] for m in s]

    pricer = Pricer(provider.tools_tokens, prices)
    tallies = {"io-tui": pricer.tally([s.io_tui for s in shots], shots)}
    summary_plain, summary_cost = summary_costs(trace["requests"], provider.tools_tokens, prices)
    tallies["io-tui"].plain += summary_plain
    tallies["io-tui"].cost += summary_cost
    naive = pricer.tally([naive_at(s) for s in shots], shots)
    tallies["naive"] = Tally(**{**asdict(naive), "cost": naive.plain * prices.uncached})
    tallies["naive+cache"] = naive
    target = tallies["io-tui"].plain / len(shots)
    k = best_k(pricer, shots, naive_at, target)
    tallies[f"last-{k}"] = pricer.tally([naive_at(s, k) for s in shots], shots)
    oracle = pricer.tally([frame + s.oracle for s in shots], shots)
    tallies["oracle"] = oracle
    oracle_final = sum(message_tokens(m) for m in shots[-1].oracle)
    work = [r for r in trace["requests"] if r["purpose"] == "work"]
    breaks = Counter(kind_of(r["cache"]["why"]) for r in work if r["cache"]["broke_at"] is not None)
    if sum(breaks.values()) != tallies["io-tui"].rewrites:  # two readings of one definition
        raise SystemExit(f"the trace counts {sum(breaks.values())} prefix breaks, the benchmark "
                         f"{tallies['io-tui'].rewrites}")  # fmt: skip
    parts = breakdown([s.io_tui for s in shots], provider.tools_tokens)
    parts["oracle: its live content (no frame)"] = sum(
        message_tokens(m) for s in shots for m in s.oracle
    )
    return Result(
        steps, ceiling, k, time.perf_counter() - started, result.outcome.value, oracle_final,
        tallies, breaks.most_common(), parts,
    )  # fmt: skip


REREAD = re.compile(r"^\[step \d+'s \w+ re-(?:read|run) now: [^\n]*\]\n")
FRAMED = re.compile(r"^\[untrusted data from ([^\s;]+)[^\n]*\]\n?")
STUBBED = re.compile(r"^\[step \d+ (\w+) ")
RECEIPTS = ("edited ", "created ", "overwrote ")  # a file write's receipt (``tools/files.py``)


def breakdown(requests: Sequence[list[Message]], tools_tokens: int) -> dict[str, int]:
    """Where io-tui's tokens went, over every working request: the frame (system, task,
    tool schemas), the model's turns by the tool they call, the headers a result carries (the
    untrusted-data frame, the line saying it was re-read), the results by tool, the stubs by
    tool, and the harness's own user messages (memory block, collapse line, notices)."""
    parts: Counter[str] = Counter()
    for messages in requests:
        parts["frame: tool schemas"] += tools_tokens
        called = {c.id: c.name for m in messages for c in m.tool_calls}
        for i, m in enumerate(messages):
            tokens = message_tokens(m)
            if m.role == "system" or i == 1:
                parts["frame: system and task"] += tokens
            elif m.role == "assistant":
                tool = m.tool_calls[0].name if m.tool_calls else "no call"
                parts[f"turn: {tool}"] += tokens
            elif m.role == "tool":
                text = m.content
                reread = REREAD.match(text)
                if reread:
                    parts["header: re-read/re-run line"] += estimate(reread.group(0))
                    tokens -= estimate(reread.group(0))
                    text = text[reread.end() :]
                framed, stub = FRAMED.match(text), STUBBED.match(text)
                if framed:
                    parts["header: untrusted-data frame"] += estimate(framed.group(0))
                    parts[f"result: {framed.group(1)}"] += tokens - estimate(framed.group(0))
                elif stub:
                    parts[f"stub: {stub.group(1)}"] += tokens
                elif text.startswith(RECEIPTS):  # a write's receipt: the harness's words
                    parts[f"result: {called.get(m.tool_call_id or '', '?')} (receipt)"] += tokens
                else:
                    parts["result: other (a difference, an error)"] += tokens
            else:
                parts["harness messages (memory, collapse line, notices)"] += tokens
    return dict(parts)


def kind_of(why: str) -> str:
    """A prefix break's reason without its step numbers, targets and details."""
    why = re.sub(r"step \d+", "step N", why.split(": ", 1)[0])
    return re.sub(r"'s (\w+) of .+? (became|was|changed|is) ", r"'s \1 of F \2 ", why)


def best_k(pricer: Pricer, shots: Sequence[Shot], naive_at: Any, target: float) -> int:
    """The window whose mean request size is the closest to ``target`` (binary search: the
    mean grows with the window)."""

    def mean(k: int) -> float:
        return sum(sum(pricer.items(naive_at(s, k))[1]) for s in shots) / len(shots)

    lo, hi = 1, max(1, shots[-1].history_steps)
    while lo < hi:
        mid = (lo + hi) // 2
        if mean(mid) < target:
            lo = mid + 1
        else:
            hi = mid
    candidates = [k for k in (lo - 1, lo) if k >= 1]
    return min(candidates, key=lambda k: abs(mean(k) - target))


# -- reporting --------------------------------------------------------------------------------


def report(r: Result) -> None:
    io, naive, cached, oracle = (r.tallies[n] for n in ("io-tui", "naive", "naive+cache", "oracle"))
    print(
        f"\n{r.steps} steps, ceiling {r.ceiling:,} — run {r.outcome}, {io.requests} requests, "
        f"live content at the end {r.oracle_final:,} tokens "
        f"({'fits' if r.oracle_final <= r.ceiling else 'does not fit'}), {r.seconds:.1f} s"
    )
    print(
        f"{'strategy':<12} {'plain tokens':>13} {'cost w/ cache':>14} {'rewrites':>9} "
        f"{'stale':>6} {'recall':>7} {'largest':>8}"
    )
    for name, t in r.tallies.items():
        cost, rewrites = f"{t.cost:,.0f}", f"{t.rewrites / t.requests:.0%}"
        if name == "oracle":  # rebuilt from scratch each request: its prefix is not a design
            cost = rewrites = "—"
        print(
            f"{name:<12} {t.plain:>13,} {cost:>14} {rewrites:>9} "
            f"{t.stale:>6} {t.recall:>7.2f} {t.largest:>8,}"
        )
    print(
        f"io-tui / naive {io.plain / naive.plain:.2f}×   io-tui / naive+cache (cost) "
        f"{io.cost / cached.cost:.2f}×   io-tui / oracle {io.plain / oracle.plain:.2f}×"
    )
    print("io-tui's prefix broke: " + "; ".join(f"{n}× {why}" for why, n in r.breaks[:4]))
    print("targets: " + "  ".join(f"{'✓' if ok else '✗'} {name}" for name, ok in targets(r)))


def report_parts(r: Result) -> None:
    """The breakdown (``--breakdown``): tokens and share of io-tui's plain total, largest first."""
    total = r.tallies["io-tui"].plain
    print(f"where io-tui's {total:,} tokens went ({r.steps} × {r.ceiling:,}), beside the oracle's")
    for name, tokens in sorted(r.parts.items(), key=lambda kv: -kv[1]):
        print(f"  {tokens:>12,}  {tokens / total:>6.1%}  {name}")


def targets(r: Result) -> list[tuple[str, bool]]:
    """Issue 13's targets for this session and ceiling."""
    io, cached, oracle = (r.tallies[n] for n in ("io-tui", "naive+cache", "oracle"))
    cost_target = 1.0 if r.steps < 200 else 0.5
    out = [
        ("0 stale", io.stale == 0),
        ("≤ 1.2× oracle", io.plain <= 1.2 * oracle.plain),
        (f"cost ≤ {cost_target}× naive+cache", io.cost <= cost_target * cached.cost),
        ("≤ 25% rewrites", io.rewrites <= 0.25 * io.requests),
    ]
    if r.oracle_final <= r.ceiling:
        out.insert(1, ("full recall (live content fits)", io.recall == 1.0))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="60-step sessions only")
    parser.add_argument("--steps", type=int, nargs="+", default=[60, 200, 500])
    parser.add_argument("--ceiling", type=int, nargs="+", default=[8_000, 24_000, 64_000])
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument(
        "--breakdown", action="store_true", help="also print where io-tui's tokens went"
    )
    args = parser.parse_args()
    steps = [60] if args.quick else args.steps
    prices = CachePrices()
    print(
        f"prices per input token: uncached {prices.uncached}, cache write {prices.write}, "
        f"cache read {prices.read}"
    )
    results = []
    for n in steps:
        for ceiling in args.ceiling:
            results.append(asyncio.run(measure(n, ceiling, prices)))
            report(results[-1])
            if args.breakdown:
                report_parts(results[-1])
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
