"""Context cost on real agent sessions: public trajectories replayed through io-tui's CLI.

    .venv/bin/python benchmarks/real_sessions.py [--quick] [--ceiling 24000 64000]
                                                 [--session NAME ...] [--json FILE]

The sessions are in ``benchmarks/real_sessions/``: per session the repository at the
instance's base commit (``repo.tar.xz``, a ``git archive``) and ``session.json`` (the
provenance, the task, and the converted trajectory as a script for the scripted provider;
``session_convert.py`` converts, ``real_sessions/PROVENANCE.md`` says where each came from).
Each session is replayed at each ceiling on a fresh extraction (made a git repository at its
base commit, so the agents' ``git diff`` and ``git checkout`` work) with a fresh SQLite
store: ``io-tui run --provider scripted:… --context-max-tokens C --approve all``, started by
``snapshot_cli.py`` (the same CLI; it records the workspace's tree before each working
request), in a network namespace of its own (``unshare -n``: the sessions' reproduction
scripts and test suites try to reach hosts; nothing leaves the machine) and with pip
installs refused (``PIP_NO_INDEX``). The figures are then read back from the store (the
requests as sent, the steps) and the recorded trees. Besides the sessions as converted, a
300-step session is made from the longest one by running it again after ``git stash -u``
until 300 steps (``+x3``: the agent starts over twice and redoes its work).

Per session and ceiling (``CONTEXT-COST.md`` prices: Anthropic's by default):

- finished: the run ended ``finished`` having answered every turn of the script.
- stale: summed over the working requests, the tool results that carry a copy of lines of a
  file (a ``read_file`` result, its pointer or difference form taken back to the lines it
  stands for with ``stubs.apply_echo``, or a ``grep`` hit ``path:line:text``) where some line
  differs from that line of the file as it was when the request was sent, and no later tool
  result in the same request shows that line of that file as it is (a correction). Copies
  printed by ``run_command`` (``sed -n`` through a pipe, ``grep -C``) are not counted: nothing
  says which file and lines they are.
- recall: for each step, the lines of files its action uses: the lines an ``edit_file``'s
  ``old`` spans, the range a ``read_file`` with offset or limit shows, the lines a
  ``sed -i`` addresses by number or by its ``s/X/`` pattern (the file as it was when the
  request was sent). A line is a probe when the agent has seen it as it is (its text, 8 or
  more characters stripped, is in a tool result the naive request carries); recall is the
  share of probes whose text is in the io-tui request that produced the step (in a tool
  result as it stands for, or in the agent's own turns).
- plain tokens: every request's system, tool schemas and messages (the engine's estimate),
  summary requests included; naive: the first request's frame, then every earlier step's
  turn and results verbatim; oracle+turns: the frame, only the live content (each file's
  lines any read showed, as they are now; the latest result of each distinct command and
  search) and the agent's own turns. The targets compare io-tui with both.
- cost with caching: each request's prefix identical to the previous request's at the read
  price, the rest at the write price (``context_cost.Pricer``; summary requests uncached);
  naive+cache prices the naive requests the same way (append-only: its prefix always hits).
- rewrites: the working requests whose cached prefix is shorter than their predecessor's, by
  the cause the trace gives (``core/context/cache.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from context_cost import Pricer, kind_of, step_messages
from session_convert import bre_to_python

from io_tui.core.context import message_tokens
from io_tui.core.context.cache import cached_prefix, request_cost
from io_tui.core.context.stubs import apply_echo
from io_tui.core.contract import CachePrices
from io_tui.core.ledger import StepRecord
from io_tui.core.numbered import number_lines
from io_tui.core.providers.base import Message, ToolCall
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store

HERE = Path(__file__).resolve().parent
DATA = HERE / "real_sessions"
LONG_STEPS = 300
QUICK_STEPS = 30
PROBE_CHARS = 8
RESET = {
    "text": "Starting over from a clean checkout to make the change again.",
    "tool_calls": [
        {"name": "run_command", "arguments": {"argv": ["git", "stash", "--include-untracked"]}}
    ],
}
GIT_ID = {
    f"GIT_{who}_{what}": value
    for who in ("AUTHOR", "COMMITTER")
    for what, value in (("NAME", "agent"), ("EMAIL", "agent@example.invalid"))
}


# -- the sessions -------------------------------------------------------------------------------


@dataclass
class Session:
    name: str
    meta: dict[str, Any]
    task: str
    script: dict[str, Any]
    tarball: Path
    long: bool = False

    @property
    def steps(self) -> int:
        return len(self.script["turns"])


def load(name: str) -> Session:
    data = json.loads((DATA / name / "session.json").read_text())
    return Session(name, data["meta"], data["task"], data["script"], DATA / name / "repo.tar.xz")


def all_sessions() -> list[str]:
    return sorted(p.parent.name for p in DATA.glob("*/session.json"))


def truncated(session: Session, steps: int) -> Session:
    """The first ``steps`` turns with calls, then a closing answer."""
    turns = [t for t in session.script["turns"] if t["tool_calls"]][:steps]
    turns.append({"text": "(the session is cut here)", "tool_calls": []})
    script = session.script | {"turns": turns}
    return Session(f"{session.name}[:{steps}]", session.meta, session.task, script, session.tarball)


def extended(session: Session, steps: int = LONG_STEPS) -> Session:
    """The session run again after ``git stash -u`` until it has ``steps`` turns."""
    work = [t for t in session.script["turns"] if t["tool_calls"]]
    turns = list(work)
    while len(turns) < steps - 1:
        turns += [RESET, *work][: steps - 1 - len(turns)]
    turns.append(session.script["turns"][-1])
    script = session.script | {"turns": turns}
    passes = -(-steps // (len(work) + 1))
    name = f"{session.name}+x{passes}"
    return Session(name, session.meta, session.task, script, session.tarball, long=True)


# -- one replay through the CLI -----------------------------------------------------------------


@dataclass
class Replay:
    """What one replay left: the trace, the steps, and the workspace's tree at each request."""

    session: Session
    ceiling: int
    exit_code: int
    seconds: float
    trace: dict[str, Any]
    history: list[StepRecord]
    trees: list[str]
    snapshots: Path
    output: str
    base: Path


def prepare(session: Session, base: Path) -> Path:
    workspace = base / "ws"
    workspace.mkdir(parents=True)
    with tarfile.open(session.tarball) as tar:
        tar.extractall(workspace, filter="tar")
    git = ["git", "-C", str(workspace)]
    env = os.environ | GIT_ID
    subprocess.run([*git, "init", "-q"], check=True, env=env)
    subprocess.run([*git, "add", "-A"], check=True, env=env)
    subprocess.run([*git, "commit", "-qm", "base commit"], check=True, env=env)
    return workspace


def isolation() -> list[str]:
    """``unshare -n`` where this user may (a network namespace with no way out), else none."""
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True)
    return ["unshare", "-n", "--"] if probe.returncode == 0 else []


def replay(session: Session, ceiling: int) -> Replay:
    # A fixed path, not a random one: it shows up in tool output (tracebacks), and so in the
    # token estimate.
    slug = re.sub(r"[^\w.-]", "_", session.name)
    base = Path(tempfile.gettempdir()) / f"io-tui-real-{slug}-{ceiling}"
    shutil.rmtree(base, ignore_errors=True)
    workspace = prepare(session, base)
    script = base / "script.json"
    script.write_text(json.dumps(session.script))
    store = base / "store.db"
    log = base / "snapshots.jsonl"
    venv_bin = str(Path(sys.executable).parent)
    env = (
        os.environ
        | GIT_ID
        | {
            "PATH": venv_bin + os.pathsep + os.environ.get("PATH", ""),
            "PIP_NO_INDEX": "1",
            "XDG_CONFIG_HOME": str(base / "config"),
            "XDG_DATA_HOME": str(base / "data"),
            "XDG_CACHE_HOME": str(base / "cache"),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
    )
    argv = [
        *isolation(), sys.executable, str(HERE / "snapshot_cli.py"), str(log), str(workspace),
        "--", "run", "--provider", f"scripted:{script}", "--context-max-tokens", str(ceiling),
        "--approve", "all", "--store", str(store), "--workspace", str(workspace),
        "--max-steps", str(session.steps + 5), session.task,
    ]  # fmt: skip
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=base)
    seconds = time.perf_counter() - started
    trace, history = asyncio.run(read_store(store))
    trees = [json.loads(line)["tree"] for line in log.read_text().splitlines()]
    output = done.stdout[-2000:] + done.stderr[-2000:]
    return Replay(
        session, ceiling, done.returncode, seconds, trace, history, trees,
        log.with_suffix(".git"), output, base,
    )  # fmt: skip


async def read_store(path: Path) -> tuple[dict[str, Any], list[StepRecord]]:
    store = await Store.open(path)
    try:
        return await build_trace(store, 1), await store.runs.history(1)
    finally:
        await store.close()


class Files:
    """The workspace's files as each recorded tree holds them."""

    def __init__(self, snapshots: Path) -> None:
        self.git = ["git", "--git-dir", str(snapshots)]
        self._trees: dict[str, dict[str, str]] = {}
        self._blobs: dict[str, list[str]] = {}

    def lines(self, tree: str, path: str) -> list[str] | None:
        """``path``'s lines in ``tree``; None where it has no such file."""
        if tree not in self._trees:
            listing = subprocess.run(
                [*self.git, "ls-tree", "-r", "-z", tree], capture_output=True, check=True
            ).stdout.decode(errors="replace")
            entries = (e.split("\t", 1) for e in listing.split("\0") if e)
            self._trees[tree] = {p: meta.split()[2] for meta, p in entries}
        blob = self._trees[tree].get(os.path.normpath(path))
        if blob is None:
            return None
        if blob not in self._blobs:
            raw = subprocess.run([*self.git, "cat-file", "blob", blob], capture_output=True)
            self._blobs[blob] = raw.stdout.decode(errors="replace").splitlines()
        return self._blobs[blob]


# -- what a request carries of the files --------------------------------------------------------

FRAME = re.compile(r"^\[untrusted data from [^\n]*\]\n?", re.M)
REREAD = re.compile(r"^\[step \d+'s \w+ re-(?:read|run) now: [^\n]*\]\n")
ECHO = re.compile(
    r"^\[step \d+ \w+ [^\n]*?(?:step (\d+)'s result above|in step (\d+)'s read above"
    r"|the same result as step (\d+)'s, above)"
)
STUB = re.compile(r"^\[step \d+ \w+ ")
NUMBERED = re.compile(r"^ *(\d+)│(.*)$")
HIT = re.compile(r"^([^\s:][^:]*):(\d+):(.*)$")


def message_of(data: dict[str, Any]) -> Message:
    calls = tuple(
        ToolCall(str(c.get("id", "")), str(c.get("name", "")), c.get("arguments") or {})
        for c in data.get("tool_calls") or ()
    )
    return Message(data["role"], data.get("content", ""), calls, data.get("tool_call_id"))


@dataclass(frozen=True)
class Copy:
    """Lines of one file a tool result shows: line number → text."""

    path: str
    lines: dict[int, str]


def results(messages: Sequence[Message]) -> list[tuple[ToolCall | None, str]]:
    """Each tool result with its call and the text it stands for: a difference or a pointer
    taken back to the lines it names (``apply_echo``), the re-read line and the untrusted-data
    frame taken off, a stub (which shows nothing) empty."""
    calls = {c.id: c for m in messages for c in m.tool_calls}
    by_step: dict[int, str] = {}
    out: list[tuple[ToolCall | None, str]] = []
    for m in messages:
        if m.role != "tool":
            continue
        call = calls.get(m.tool_call_id or "")
        text = REREAD.sub("", m.content)
        echo = ECHO.match(text)
        if echo:
            base = by_step.get(int(next(g for g in echo.groups() if g)))
            text = apply_echo(base, text) if base is not None else ""
        elif STUB.match(text):
            text = ""
        step = step_of(m.tool_call_id)
        if step is not None and text:
            by_step[step] = text
        out.append((call, FRAME.sub("", text, count=1)))
    return out


def step_of(call_id: str | None) -> int | None:
    found = re.fullmatch(r"call_(\d+)_\d+", call_id or "")
    return int(found.group(1)) if found else None


def copies(messages: Sequence[Message]) -> list[Copy]:
    """The copies of file lines the request's tool results carry, in order."""
    out: list[Copy] = []
    for call, text in results(messages):
        if call is None or not text:
            continue
        if call.name == "read_file":
            lines = {int(n): t for n, t in (NUMBERED.match(x).groups() for x in _numbered(text))}
            if lines:
                out.append(Copy(os.path.normpath(call.arguments["path"]), lines))
        elif call.name == "grep":
            hits: dict[str, dict[int, str]] = {}
            for line in text.splitlines():
                hit = HIT.match(line)
                if hit:
                    hits.setdefault(os.path.normpath(hit[1]), {})[int(hit[2])] = hit[3]
            out += [Copy(path, lines) for path, lines in hits.items()]
    return out


def _numbered(text: str) -> Iterable[str]:
    return (line for line in text.splitlines() if NUMBERED.match(line))


def stale_count(messages: Sequence[Message], tree: str, files: Files) -> int:
    """Copies that differ from the file as it is, with no later correction (module doc)."""
    found = copies(messages)
    count = 0
    for i, copy in enumerate(found):
        current = files.lines(tree, copy.path)
        wrong = {
            n for n, text in copy.lines.items()
            if current is None or n > len(current) or current[n - 1] != text
        }  # fmt: skip
        for later in found[i + 1 :]:
            if later.path == copy.path and current is not None:
                wrong -= {
                    n for n in wrong if n <= len(current) and later.lines.get(n) == current[n - 1]
                }
        count += bool(wrong)
    return count


def visible(messages: Sequence[Message]) -> str:
    """Everything of the workspace a request shows: its results as they stand for, and the
    agent's own turns (their text and their calls' arguments)."""
    parts = [text for _, text in results(messages)]
    for m in messages:
        if m.role == "assistant":
            parts.append(m.content)
            parts += [str(v) for c in m.tool_calls for v in _strings(c.arguments)]
    return "\n".join(parts)


def seen_by_tools(messages: Sequence[Message]) -> str:
    return "\n".join(text for _, text in results(messages))


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


# -- the lines an action uses -------------------------------------------------------------------

SED_I = re.compile(r"sed -i (['\"])(.*?)\1 (\S+)")
SED_LINES = re.compile(r"^(\d+)(?:,(\d+))?[dcaip]")
SED_SUB = re.compile(r"^s(.)(.*?)(?<!\\)\1")


def used_lines(call: ToolCall, tree: str, files: Files) -> list[str]:
    """The text of the lines ``call`` uses, the files as they are in ``tree`` (module doc)."""
    args = call.arguments
    if call.name == "edit_file":
        lines = files.lines(tree, args["path"])
        old = args.get("old")
        at = "\n".join(lines).find(old) if lines is not None and old else -1
        if at < 0:
            return []
        text = "\n".join(lines or [])
        first = text.count("\n", 0, at)
        return (lines or [])[first : first + args["old"].count("\n") + 1]
    if call.name == "read_file" and (args.get("offset") or args.get("limit")):
        lines = files.lines(tree, args["path"]) or []
        first = (args.get("offset") or 1) - 1
        return lines[first : first + args["limit"]] if args.get("limit") else lines[first:]
    if call.name == "run_command" and args["argv"][:2] == ["bash", "-c"]:
        out: list[str] = []
        for _, expr, path in SED_I.findall(args["argv"][2]):
            lines = files.lines(tree, path) or []
            if by_number := SED_LINES.match(expr):
                first = int(by_number[1])
                out += lines[first - 1 : int(by_number[2] or first)]
            elif sub := SED_SUB.match(expr):
                try:
                    pattern = re.compile(bre_to_python(sub[2]))
                except re.error:
                    continue
                out += [line for line in lines if pattern.search(line)]
        return out
    return []


# -- the baselines ------------------------------------------------------------------------------


def oracle(
    frame: list[Message], history: Sequence[StepRecord], tree: str, files: Files
) -> list[Message]:
    """The frame, the live content and the agent's own turns (module doc)."""
    spans: dict[str, list[tuple[int, int]]] = {}
    latest: dict[str, str] = {}
    turns: list[Message] = []
    for record in history:
        turns.append(Message("assistant", record.text, record.tool_calls))
        results_by_id = {o.call_id: o for o in record.observations}
        for call in record.tool_calls:
            result = results_by_id.get(call.id)
            if result is None or result.is_error:
                continue
            args = call.arguments
            if call.name == "read_file":
                first = args.get("offset") or 1
                last = first + args["limit"] - 1 if args.get("limit") else 1 << 30
                spans.setdefault(os.path.normpath(args["path"]), []).append((first, last))
            elif call.name in ("grep", "find", "run_command"):
                latest[json.dumps([call.name, args], sort_keys=True)] = result.text
    live = [
        Message("user", live_lines(path, wanted, tree, files)) for path, wanted in spans.items()
    ]
    live += [Message("user", text) for text in latest.values()]
    return frame + live + turns


def live_lines(path: str, spans: list[tuple[int, int]], tree: str, files: Files) -> str:
    lines = files.lines(tree, path) or []
    wanted = sorted({n for a, b in spans for n in range(a, min(b, len(lines)) + 1)})
    runs: list[list[int]] = []
    for n in wanted:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    shown = [number_lines(lines[r[0] - 1 : r[-1]], r[0], len(lines)) for r in runs]
    return f"{path}\n" + "\n…\n".join(shown)


# -- the figures of one replay ------------------------------------------------------------------


@dataclass
class Strategy:
    plain: int = 0
    cost: float = 0.0
    rewrites: int = 0
    stale: int = 0


@dataclass
class Figures:
    session: str
    system: str
    model: str
    ceiling: int
    steps: int
    requests: int
    finished: bool
    outcome: str
    seconds: float
    recall: float
    probes: int
    strategies: dict[str, Strategy]
    breaks: list[tuple[str, int]]
    summary_requests: int = 0
    long: bool = False  # made longer than the trajectory (``extended``)


def measure(r: Replay, prices: CachePrices) -> Figures:
    files = Files(r.snapshots)
    work = [q for q in r.trace["requests"] if q["purpose"] == "work"]
    summaries = [q for q in r.trace["requests"] if q["purpose"] != "work"]
    if len(work) != len(r.trees):
        raise SystemExit(f"{r.session.name}: {len(work)} working requests, {len(r.trees)} trees")
    tools_tokens = next(s["est_tokens"] for s in work[0]["sections"] if s["name"] == "tools")
    pricer = Pricer(tools_tokens, prices)
    requests = [[message_of(m) for m in q["messages"]] for q in work]
    frame = requests[0][:2]
    per_step = {h.step: step_messages(h) for h in r.history}

    def before(q: dict[str, Any]) -> list[StepRecord]:
        return [h for h in r.history if h.step < q["step"]]

    naive = [frame + [m for h in before(q) for m in per_step[h.step]] for q in work]
    oracles = [oracle(frame, before(q), tree, files) for q, tree in zip(work, r.trees, strict=True)]

    s = {name: Strategy() for name in ("io-tui", "naive", "naive+cache", "oracle+turns")}
    tally(pricer, requests, s["io-tui"])
    tally(pricer, naive, s["naive+cache"])
    s["naive"] = Strategy(s["naive+cache"].plain, s["naive+cache"].plain * prices.uncached)
    s["oracle+turns"].plain = sum(sum(pricer.items(o)[1]) for o in oracles)
    summary_tokens = sum(message_tokens(message_of(m)) for q in summaries for m in q["messages"])
    s["io-tui"].plain += summary_tokens
    s["io-tui"].cost += summary_tokens * prices.uncached
    for name, sent in (("io-tui", requests), ("naive", naive)):
        s[name].stale = sum(stale_count(m, t, files) for m, t in zip(sent, r.trees, strict=True))

    hits = probes = 0
    for q, messages, tree, sent_naive in zip(work, requests, r.trees, naive, strict=True):
        record = next((h for h in r.history if h.step == q["step"]), None)
        if record is None:
            continue
        lines = [x.strip() for c in record.tool_calls for x in used_lines(c, tree, files)]
        known = seen_by_tools(sent_naive)
        wanted = [x for x in lines if len(x) >= PROBE_CHARS and x in known]
        if wanted:
            shown = visible(messages)
            probes += len(wanted)
            hits += sum(x in shown for x in wanted)

    breaks = Counter(kind_of(q["cache"]["why"]) for q in work if q["cache"]["broke_at"] is not None)
    run = r.trace["run"]
    steps = len(r.history)
    finished = run.get("status") == "finished" and steps == r.session.steps
    return Figures(
        r.session.name, r.session.meta["system"], r.session.meta["model"], r.ceiling, steps,
        len(work), finished, str(run.get("status")), r.seconds,
        hits / probes if probes else 1.0, probes, s, breaks.most_common(), len(summaries),
        r.session.long,
    )  # fmt: skip


def tally(pricer: Pricer, requests: Sequence[list[Message]], into: Strategy) -> None:
    previous: list[str] | None = None
    for messages in requests:
        keys, tokens = pricer.items(messages)
        total = sum(tokens)
        prefix = cached_prefix(previous, keys, tokens)
        into.plain += total
        into.cost += request_cost(total, prefix.tokens, pricer.prices)
        into.rewrites += prefix.rewrote
        previous = keys


# -- reporting ----------------------------------------------------------------------------------


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "—"


def report(ceiling: int, rows: Sequence[Figures]) -> None:
    print(f"\nceiling {ceiling:,}")
    print(
        f"{'session':<30} {'steps':>5} {'fin':>3} {'stale':>9} {'recall':>11} "
        f"{'io-tui plain':>12} {'/naive':>6} {'/orc+t':>6} "
        f"{'io-tui cost':>11} {'/naive+c':>8} {'rewrites':>8}"
    )
    for f in rows:
        s = f.strategies
        io = s["io-tui"]
        print(
            f"{f.session:<30} {f.steps:>5} {'yes' if f.finished else 'NO':>3} "
            f"{io.stale:>4}/{s['naive'].stale:<4} {f.recall:>5.2f} ({f.probes:>3}) "
            f"{io.plain:>12,} {ratio(io.plain, s['naive'].plain):>6} "
            f"{ratio(io.plain, s['oracle+turns'].plain):>6} {io.cost:>11,.0f} "
            f"{ratio(io.cost, s['naive+cache'].cost):>8} {io.rewrites / f.requests:>8.0%}"
        )
    real = [f for f in rows if not f.long]
    costs = sorted(cost_ratio(f) for f in real)
    if costs:
        print(
            f"cost / naive+cache over the {len(real)} real sessions: mean "
            f"{sum(costs) / len(costs):.2f}, median {costs[len(costs) // 2]:.2f}, "
            f"range {costs[0]:.2f}–{costs[-1]:.2f}"
        )
    print("targets: " + "  ".join(f"{'✓' if ok else '✗'} {what}" for what, ok in targets(rows)))
    print("prefix rewrites by cause (all sessions):")
    causes: Counter[str] = Counter()
    for f in rows:
        causes.update(dict(f.breaks))
    for why, n in causes.most_common(8):
        print(f"  {n:>5}  {why}")


def cost_ratio(f: Figures) -> float:
    return f.strategies["io-tui"].cost / f.strategies["naive+cache"].cost


def targets(rows: Sequence[Figures]) -> list[tuple[str, bool]]:
    """Issue 28's targets at one ceiling, each over every session it names."""
    real = [f for f in rows if not f.long]
    long = [f for f in rows if f.long]

    def io(f: Figures) -> Strategy:
        return f.strategies["io-tui"]

    out = [
        ("finishes", all(f.finished for f in rows)),
        ("0 stale", all(io(f).stale == 0 for f in rows)),
        ("full recall", all(f.recall == 1.0 for f in rows)),
        ("≤ 1.0× naive", all(io(f).plain <= f.strategies["naive"].plain for f in rows)),
        (
            "≤ 1.1× oracle+turns",
            all(io(f).plain <= 1.1 * f.strategies["oracle+turns"].plain for f in rows),
        ),
        ("cost ≤ 1.0× naive+cache", all(cost_ratio(f) <= 1.0 for f in real)),
    ]
    if real:
        out.append(("mean ≤ 0.85×", sum(map(cost_ratio, real)) / len(real) <= 0.85))
    if long:
        out.append((f"{long[0].steps} steps ≤ 0.5×", all(cost_ratio(f) <= 0.5 for f in long)))
    return out


def load_figures(path: Path) -> list[Figures]:
    """Figures a ``--json`` run wrote, to print again (``--report``)."""
    rows = json.loads(path.read_text())
    for row in rows:
        row["strategies"] = {k: Strategy(**v) for k, v in row["strategies"].items()}
        row["breaks"] = [tuple(b) for b in row["breaks"]]
    return [Figures(**row) for row in rows]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"each session's first {QUICK_STEPS} steps, no 300-step session")  # fmt: skip
    parser.add_argument("--ceiling", type=int, nargs="+", default=[24_000, 64_000])
    parser.add_argument("--session", nargs="+", help=f"of: {', '.join(all_sessions())}")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument("--no-long", action="store_true", help="leave out the 300-step session")
    parser.add_argument("--report", type=Path, help="print the tables of a --json file again")
    args = parser.parse_args()
    if args.report:
        saved = load_figures(args.report)
        for ceiling in dict.fromkeys(f.ceiling for f in saved):
            report(ceiling, [f for f in saved if f.ceiling == ceiling])
        return
    sessions = [load(n) for n in (args.session or all_sessions())]
    if args.quick:
        sessions = [truncated(s, QUICK_STEPS) for s in sessions]
    elif not args.no_long:
        sessions.append(extended(max(sessions, key=lambda s: s.steps)))
    prices = CachePrices()
    print(f"prices per input token: uncached {prices.uncached}, cache write {prices.write}, "
          f"cache read {prices.read}")  # fmt: skip
    if not isolation():
        print("warning: no network namespace (unshare -n) here; commands run unisolated")
    figures: list[Figures] = []
    for ceiling in args.ceiling:
        rows = []
        for session in sessions:
            replayed = replay(session, ceiling)
            rows.append(measure(replayed, prices))
            shutil.rmtree(replayed.base, ignore_errors=True)
            print(f"  {session.name} at {ceiling:,}: {rows[-1].seconds:.0f} s", file=sys.stderr)
        report(ceiling, rows)
        figures += rows
    if args.json:
        args.json.write_text(json.dumps([asdict(f) for f in figures], indent=1) + "\n")


if __name__ == "__main__":
    main()
