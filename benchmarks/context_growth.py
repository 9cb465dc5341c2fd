"""Context growth: what four context strategies send over three scripted workloads.

    .venv/bin/python benchmarks/context_growth.py [--ceiling 24000] [--workload a|b|c]

The workloads are synthetic step histories over a real fixture repository
(``benchmarks/fixture_repo.tar.gz``, real source text held in memory and edited there), as the run loop
would record them: every result bounded at entry to the entry cap. After every step each strategy
builds the next request:

- naive: every turn and every result, whole, every time;
- truncate-oldest: the newest whole steps that fit under the ceiling, older ones dropped;
- compaction-only: past 80% of the ceiling, all but the newest 8 results are folded into a
  summary (no supersession, no refresh, no fit);
- io-tui: ``ContextEngine`` (supersession, stale-read refresh, fit, stubs, collapse, compaction)
  with the remembered decisions as its memory block.

Both summarising strategies get the same summarizer: the deterministic digest answering the
summary request, whose input tokens are counted as spent. Printed per workload and strategy:
total input tokens (frame included), the largest request, requests whose observed part passed the
ceiling (and the worst ratio), stale file contents carried (summed over requests), and probe
recall (the mean over requests of the fraction of probes present: the latest read of each file,
at its current content, and the latest result of each grep, whole or behind a stub that says how
to get it back; each remembered decision, verbatim).
"""

from __future__ import annotations

import argparse
import asyncio
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import fixture_repo

from io_tui.core.context.compaction import fold, fold_boundary as compaction_boundary
from io_tui.core.context.digest import digest_request
from io_tui.core.context.engine import ContextEngine
from io_tui.core.context.frame import Frame
from io_tui.core.context.refresh import RefreshFailed
from io_tui.core.context.summary import FoldResult, FoldStep, Summary
from io_tui.core.context.turns import message_tokens
from io_tui.core.contract import Compaction, TaskContract, entry_cap_chars
from io_tui.core.ledger import Observation, ObsKind, StepRecord, bound_text
from io_tui.core.memory.notes import MemoryNote
from io_tui.core.providers.base import CompletionRequest
from io_tui.core.providers.messages import Message, ToolCall
from io_tui.core.run.harness import SYSTEM_PROMPT
from io_tui.core.text.numbered import number_lines
from io_tui.core.tools.registry import default_registry

HOW_TO_REST = "ask for a narrower range"
HANDFUL = [f"src/harness/{n}.py" for n in ("contract", "ledger", "policy", "approvals", "events")]


# -- the simulated workspace -------------------------------------------------------------------


class World:
    """The fixture repository in memory: reads, greps and edits of real source text."""

    def __init__(self) -> None:
        self.files = {rel: t for rel, t in fixture_repo.files().items() if rel.endswith(".py")}
        self.version = dict.fromkeys(self.files, 0)

    def read(self, path: str, span: str = "") -> str:
        lines = self.files[path].splitlines()
        first, last = 1, len(lines)
        if span:
            a, _, b = span.removeprefix("lines ").partition("-")
            first, last = int(a), min(len(lines), int(b))
        return number_lines(lines[first - 1 : last], first, len(lines))

    def edit(self, path: str, n: int) -> tuple[str, str, int]:
        lines = self.files[path].splitlines(keepends=True)
        code = [i for i, line in enumerate(lines) if line.strip() and "#" not in line]
        index = code[(n * 7_919) % len(code)]
        old = lines[index].rstrip("\n")
        new = f"{old}  # edit {n}"
        lines[index] = new + "\n"
        self.files[path] = "".join(lines)
        self.version[path] += 1
        return old, new, index + 1

    def grep(self, pattern: str) -> str:
        rx = re.compile(pattern)
        hits = [
            f"{path}:{no}: {line.strip()}"
            for path, text in self.files.items()
            for no, line in enumerate(text.splitlines(), 1)
            if rx.search(line)
        ]
        return "\n".join(hits) or "(no matches)"

    def pytest(self, n: int, path: str, line_no: int) -> str:
        lines = self.files[path].splitlines()
        around = lines[max(0, line_no - 12) : line_no + 3]
        src = "\n".join(("> " if i == 11 else "  ") + f"  {text}" for i, text in enumerate(around))
        return (
            "============================= test session starts ==============================\n"
            f"collected 48 items\n\ntests/test_policy.py ..........F{'.' * (n % 9)}   [ 60%]\n\n"
            "=================================== FAILURES ===================================\n"
            f"_________________________ test_case_{n} _________________________\n\n{src}\n"
            f"E       AssertionError: expected the rule of cycle {n} to match\n"
            f"E       assert False\n\n{path}:{line_no}: AssertionError\n"
            "=========================== short test summary info ============================\n"
            f"FAILED tests/test_policy.py::test_case_{n} - AssertionError\n"
            f"========================= 1 failed, 47 passed in 0.{n % 10}s ========================"
        )


# -- recording a run the way the run loop does -------------------------------------------------


@dataclass
class Run:
    """A growing history, plus what the probes need to know about it."""

    world: World
    cap: int
    history: list[StepRecord] = field(default_factory=list)
    notes: list[MemoryNote] = field(default_factory=list)
    read_version: dict[str, tuple[str, int]] = field(default_factory=dict)  # call id -> file
    latest_read: dict[str, tuple[str, str]] = field(default_factory=dict)  # path -> (id, span)
    latest_grep: dict[str, str] = field(default_factory=dict)  # pattern -> call id
    texts: dict[str, str] = field(default_factory=dict)  # call id -> text as recorded

    def _obs(
        self, call: ToolCall, kind: ObsKind, target: str, text: str, span: str = ""
    ) -> Observation:
        step = len(self.history) + 1
        bounded = bound_text(text, self.cap, HOW_TO_REST)
        self.texts[call.id] = bounded
        return Observation(step, call.id, call.name, kind, target, bounded, span, len(text))

    def _call(self, name: str, n: int, **arguments: object) -> ToolCall:
        return ToolCall(f"s{len(self.history) + 1}_{n}", name, dict(arguments))

    def read(self, path: str, span: str = "", n: int = 1) -> tuple[ToolCall, Observation]:
        args: dict[str, object] = {"path": path}
        if span:
            a, _, b = span.removeprefix("lines ").partition("-")
            args |= {"offset": int(a), "limit": int(b) - int(a) + 1}
        call = self._call("read_file", n, **args)
        self.read_version[call.id] = (path, self.world.version[path])
        self.latest_read[path] = (call.id, span)
        return call, self._obs(call, ObsKind.READ, path, self.world.read(path, span), span)

    def edit(self, path: str, cycle: int, n: int = 1) -> tuple[ToolCall, Observation]:
        old, new, line = self.world.edit(path, cycle)
        call = self._call("edit_file", n, path=path, old=old, new=new)
        return call, self._obs(call, ObsKind.WRITE, path, f"edited {path}: line {line} replaced")

    def grep(self, pattern: str, n: int = 1) -> tuple[ToolCall, Observation]:
        call = self._call("grep", n, pattern=pattern)
        self.latest_grep[pattern] = call.id
        return call, self._obs(call, ObsKind.GREP, pattern, self.world.grep(pattern))

    def test(self, cycle: int, path: str, line: int, n: int = 1) -> tuple[ToolCall, Observation]:
        call = self._call("run_command", n, argv=["pytest", "-x", "-q"])
        return call, self._obs(call, ObsKind.EXEC, "pytest", self.world.pytest(cycle, path, line))

    def remember(self, key: str, value: str, n: int = 2) -> tuple[ToolCall, Observation]:
        call = self._call("remember", n, key=key, value=value)
        step = len(self.history) + 1
        self.notes.append(MemoryNote(key, value, run_id=1, step=step))
        return call, self._obs(call, ObsKind.MEMORY, key, f"remembered {key}: {value}")

    def commit(self, said: str, *pairs: tuple[ToolCall, Observation]) -> None:
        calls = tuple(c for c, _ in pairs)
        observations = tuple(o for _, o in pairs)
        self.history.append(StepRecord(len(self.history) + 1, said, calls, observations))


# -- the three workloads -----------------------------------------------------------------------

Workload = Callable[[Run], Iterator[None]]


def edit_loop(run: Run) -> Iterator[None]:
    """(a) 60 steps over a handful of files: read a file with its neighbour, edit it, then read
    both back to check (reads in parallel, as agents do; four reads to an edit)."""
    for cycle in range(20):
        path = HANDFUL[cycle % len(HANDFUL)]
        neighbour = HANDFUL[(cycle + 1) % len(HANDFUL)]
        run.commit(f"Reading {path} and {neighbour}.", run.read(path), run.read(neighbour, n=2))
        yield
        run.commit(f"Changing {path} (cycle {cycle}).", run.edit(path, cycle))
        yield
        pairs = [run.read(path), run.read(neighbour, n=2)]
        if cycle % 4 == 3:
            pairs.append(run.remember(f"decision-{cycle}", f"cycle {cycle}: keep {path} pure", 3))
        run.commit(f"Checking the change to {path}.", *pairs)
        yield


PATTERNS = [
    r"\bdef \w+",
    r"^class ",
    r"\breturn\b",
    r"^from ",
    r"^import ",
    r"Observation",
    r"ObsKind",
    r"\bpolicy\b",
    r"async def",
    r"\braise\b",
    r"self\.",
    r"ToolError",
    r"ToolOutcome",
    r"Effect\.",
    r"Act\.",
    r"\bLayer\b",
    r"fnmatch",
    r"@dataclass",
    r"frozen=True",
    r"slots=True",
    r"Field\(",
    r"\bargs\.",
    r"workspace",
    r"estimate_tokens",
    r"MemoryNote",
    r"Decision",
    r"Approver",
    r"RunEvent",
    r"\btarget\b",
    r"\bpath\b",
    r"ceiling",
    r"max_chars",
    r"timeout",
    r"json\.",
    r"\bassert\b",
    r"pytest",
    r"TODO|FIXME",
    r"__all__",
    r"Protocol",
    r"\bNone\b",
]


def grep_storm(run: Run) -> Iterator[None]:
    """(b) 400 greps over 40 patterns, each pattern asked ten times."""
    for i in range(400):
        pattern = PATTERNS[(i * 7) % len(PATTERNS)]
        pairs = [run.grep(pattern)]
        if i % 80 == 79:
            pairs.append(run.remember(f"finding-{i}", f"grep {i}: {pattern} is the hot spot"))
        run.commit(f"Searching for {pattern}.", *pairs)
        yield


def fix_loop(run: Run) -> Iterator[None]:
    """(c) 40 cycles of edit → run the tests → read the failing region."""
    targets = ["src/harness/policy.py", "src/harness/memory.py", "src/harness/tools/search.py"]
    for cycle in range(40):
        path = targets[cycle % len(targets)]
        call, result = run.edit(path, cycle)
        line = int(result.text.rsplit("line ", 1)[1].split()[0])
        run.commit(f"Fixing {path}.", (call, result))
        yield
        run.commit("Running the tests.", run.test(cycle, path, line))
        yield
        first = max(1, (line // 20) * 20 - 10)
        pairs = [run.read(path, f"lines {first}-{first + 39}")]
        if cycle % 10 == 9:
            pairs.append(run.remember(f"fix-{cycle}", f"cycle {cycle}: the failure is in {path}"))
        run.commit(f"Reading the failure around line {line}.", *pairs)
        yield


WORKLOADS: dict[str, tuple[str, Workload]] = {
    "a": ("(a) edit loop: 60 steps re-reading and editing 5 files", edit_loop),
    "b": ("(b) grep storm: 400 greps over 40 patterns", grep_storm),
    "c": ("(c) fix loop: 40 × edit → run tests → read failure (120 steps)", fix_loop),
}


# -- the strategies ----------------------------------------------------------------------------


class Summarizer:
    """The digest answering each summary request; its input is counted as spent tokens."""

    def __init__(self) -> None:
        self.calls = 0
        self.tokens = 0

    async def __call__(self, request: CompletionRequest) -> str:
        self.calls += 1
        self.tokens += sum(message_tokens(m) for m in request.messages)
        return digest_request(request, request.max_output_tokens * 4)


def step_messages(record: StepRecord) -> list[Message]:
    out = [Message("user", f"[operator] {m}") for m in record.operator_messages]
    out.append(Message("assistant", record.text, record.tool_calls))
    out += [Message("tool", o.text, tool_call_id=o.call_id) for o in record.observations]
    return out


class Strategy:
    name = ""

    def __init__(self, frame: Frame, ceiling: int, run: Run) -> None:
        self.frame, self.ceiling, self.run = frame, ceiling, run
        self.summarizer = Summarizer()
        self._cost: dict[int, int] = {}

    def cost(self, record: StepRecord) -> int:
        if record.step not in self._cost:
            self._cost[record.step] = sum(message_tokens(m) for m in step_messages(record))
        return self._cost[record.step]

    async def body(self) -> list[Message]:
        raise NotImplementedError


class Naive(Strategy):
    name = "naive"

    async def body(self) -> list[Message]:
        return [m for r in self.run.history for m in step_messages(r)]


class TruncateOldest(Strategy):
    name = "truncate-oldest"

    async def body(self) -> list[Message]:
        kept: list[StepRecord] = []
        used = 0
        for record in reversed(self.run.history):
            used += self.cost(record)
            if used > self.ceiling and kept:
                break
            kept.append(record)
        return [m for r in reversed(kept) for m in step_messages(r)]


class CompactionOnly(Strategy):
    name = "compaction-only"
    summary: Summary | None = None

    async def body(self) -> list[Message]:
        history = self.run.history
        through = self.summary.through_step if self.summary else 0
        live = history[through:]
        head = self._summary_message()
        demand = sum(self.cost(r) for r in live) + (message_tokens(head) if head else 0)
        counts = [len(r.observations) for r in reversed(live)]
        boundary = compaction_boundary(counts, len(live), Compaction().keep_newest)
        if demand > 0.8 * self.ceiling and boundary:
            folded = [_fold_step(r) for r in live[:boundary]]
            self.summary = await fold(
                goal=self.frame.contract.goal, previous=self.summary, steps=folded,
                first_step=1, through_step=live[boundary - 1].step,
                ceiling_tokens=self.ceiling, summarize=self.summarizer,
            )  # fmt: skip
            live, head = live[boundary:], self._summary_message()
        return ([head] if head else []) + [m for r in live for m in step_messages(r)]

    def _summary_message(self) -> Message | None:
        if self.summary is None:
            return None
        return Message(
            "user",
            f"[Summary of steps 1–{self.summary.through_step}. Call a tool again to see the "
            f"current state of anything it names.]\n{self.summary.text}",
        )


def _fold_step(record: StepRecord) -> FoldStep:
    results = tuple(
        FoldResult(o.tool, o.kind.value, o.target, "full", o.text, o.is_error)
        for o in record.observations
    )
    return FoldStep(record.step, (), record.text, (), results)


class IoTui(Strategy):
    name = "io-tui"

    def __init__(self, frame: Frame, ceiling: int, run: Run) -> None:
        super().__init__(frame, ceiling, run)
        self.engine = ContextEngine(frame, refresh=self.refresh, summarize=self.summarizer)

    async def refresh(self, observation: Observation) -> str:
        world = self.run.world
        if observation.target not in world.files:
            raise RefreshFailed(f"{observation.target} is gone")
        text = world.read(observation.target, observation.span)
        if len(text) > self.run.cap:
            raise RefreshFailed("no longer fits the entry cap")
        return text

    async def body(self) -> list[Message]:
        assembly = await self.engine.build(
            self.run.history, ceiling_tokens=self.ceiling, notes=self.run.notes
        )
        return list(assembly.messages[2:])  # past the system prompt and the contract


STRATEGIES: list[type[Strategy]] = [Naive, TruncateOldest, CompactionOnly, IoTui]


# -- measuring ----------------------------------------------------------------------------------


@dataclass
class Tally:
    requests: int = 0
    total: int = 0
    largest: int = 0
    over: int = 0
    worst: float = 0.0
    stale: int = 0
    recall: float = 0.0
    folds: int = 0


def stale_count(run: Run, messages: Sequence[Message]) -> int:
    """Tool results carrying a file version older than the file's latest write."""
    count = 0
    for m in messages:
        if m.role != "tool" or m.tool_call_id not in run.read_version:
            continue
        path, version = run.read_version[m.tool_call_id]
        if version < run.world.version[path] and m.content == run.texts[m.tool_call_id]:
            count += 1
    return count


def recall(run: Run, messages: Sequence[Message]) -> float:
    by_id = {m.tool_call_id: m.content for m in messages if m.tool_call_id}
    stubs = [  # the strategy's own notes (stubs, collapse line, summary) that say how to get
        m.content  # things back; never tool output that happens to contain the word
        for m in messages
        if m.content.startswith("[")
        and (m.role == "user" or len(m.content) <= 1_000)
        and "again" in m.content.split("]\n", 1)[0]
    ]
    hits = total = 0

    def stubbed(name: str) -> bool:
        return any(name in s for s in stubs)

    for path, (call_id, span) in run.latest_read.items():
        total += 1
        current = bound_text(run.world.read(path, span), run.cap, HOW_TO_REST)
        hits += current in by_id.get(call_id, "") or stubbed(path)
    for pattern, call_id in run.latest_grep.items():
        total += 1
        hits += by_id.get(call_id) == run.texts[call_id] or stubbed(pattern)
    if run.notes:
        text = "\n".join(m.content for m in messages)
        for note in run.notes:
            total += 1
            hits += note.value in text
    return hits / total if total else 1.0


def make_frame() -> Frame:
    contract = TaskContract(
        "Make the policy tests pass without weakening any rule.",
        Path("fixture_repo"),
        verify=("pytest", "-q"),
        constraints=("touch only src/",),
    )
    return Frame(SYSTEM_PROMPT, default_registry().specs(), contract)


async def measure(workload: Workload, ceiling: int) -> dict[str, Tally]:
    frame = make_frame()
    run = Run(World(), entry_cap_chars(ceiling))
    strategies = [cls(frame, ceiling, run) for cls in STRATEGIES]
    frame_tokens = sum(s.est_tokens for s in ContextEngine(frame).frame_parts()[1])
    tallies = {s.name: Tally() for s in strategies}
    for _ in workload(run):
        for strategy in strategies:
            body = await strategy.body()
            observed = sum(message_tokens(m) for m in body)
            t = tallies[strategy.name]
            t.requests += 1
            t.total += frame_tokens + observed
            t.largest = max(t.largest, frame_tokens + observed)
            t.over += observed > ceiling
            t.worst = max(t.worst, observed / ceiling)
            t.stale += stale_count(run, body)
            t.recall += recall(run, body)
    for strategy in strategies:
        tallies[strategy.name].total += strategy.summarizer.tokens
        tallies[strategy.name].folds = strategy.summarizer.calls
    return tallies


def report(title: str, ceiling: int, tallies: dict[str, Tally]) -> None:
    naive = tallies["naive"].total
    print(f"\n{title} — ceiling {ceiling:,} tokens")
    print(
        f"{'strategy':<16} {'total input':>12} {'vs naive':>8} {'largest':>8} {'over':>5} "
        f"{'worst':>6} {'stale':>6} {'recall':>7} {'folds':>6}"
    )
    for name, t in tallies.items():
        print(
            f"{name:<16} {t.total:>12,} {t.total / naive:>8.1%} {t.largest:>8,} {t.over:>5} "
            f"{t.worst:>6.0%} {t.stale:>6} {t.recall / t.requests:>7.3f} {t.folds:>6}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ceiling", type=int, default=24_000)
    parser.add_argument("--workload", choices=sorted(WORKLOADS), action="append")
    args = parser.parse_args()
    for key in args.workload or sorted(WORKLOADS):
        title, workload = WORKLOADS[key]
        report(title, args.ceiling, asyncio.run(measure(workload, args.ceiling)))
    print(
        "\ntotal input: every request's frame + observed tokens (estimate_tokens), plus summary"
        " requests; over: requests whose observed part passed the ceiling; worst: the largest"
        " observed part / ceiling; stale: results carrying a file version older than its latest"
        " write, summed over requests; recall: mean fraction of probes present; folds: summary"
        " requests (their input is in total input)."
    )


if __name__ == "__main__":
    main()
