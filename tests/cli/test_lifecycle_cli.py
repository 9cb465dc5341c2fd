"""``io-tui trace RUN --lifecycle CALL_ID|TEXT``, plain and ``--json``, as a user meets it: a real
scripted run in a real store, then the command in its own process."""

from __future__ import annotations

import json
import sys
from typing import Any

from test_cli import io_tui


def read(path: str, offset: int) -> dict[str, Any]:
    args = {"path": path, "offset": offset, "limit": 10}
    return {"tool_calls": [{"name": "read_file", "arguments": args}]}


def run_turns(turns, workspace, write_script, store_path, *, ceiling: int) -> tuple[str, str]:
    """A scripted run of ``turns`` (then "done") under ``ceiling``; the ``--store`` option."""
    script = write_script([*turns, {"text": "done"}])
    store = ("--store", str(store_path))
    run = io_tui(
        "run", "look around", "-w", str(workspace), "--provider", f"scripted:{script}",
        "--approve", "all", "--context-max-tokens", str(ceiling), "--max-steps", "100", *store,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    return store


def test_lifecycle_follows_an_entry_into_the_summaries(workspace, write_script, store_path):
    for i in range(12):
        body = "".join(f"def f{i}_{j}(x):\n    return x + {j}\n" for j in range(120))
        (workspace / f"m{i}.py").write_text(body)
    (workspace / "notes.txt").write_text("the parser needs the v2 grammar\n" + "filler\n" * 40)
    turns = [{"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]}]
    turns += [read(f"m{i % 12}.py", 101 + 10 * (i // 12)) for i in range(1, 80)]
    store = run_turns(turns, workspace, write_script, store_path, ceiling=8000)

    plain = io_tui("trace", "1", "--lifecycle", "V2 GRAMMAR", *store)  # text in a result
    assert plain.returncode == 0, plain.stdout + plain.stderr
    lines = plain.stdout.splitlines()
    assert lines[0] == "run 1 · 'V2 GRAMMAR': 1 entry"
    assert lines[2] == "call_1_1 · step 1 · read_file (read) notes.txt (matched by result)"
    assert lines[3].startswith("  full → ") and "folded into summary" in lines[3]
    assert "── compaction ledger" in plain.stdout
    assert "replaced: step 1 read notes.txt, step 2 read m1.py" in plain.stdout

    report = json.loads(io_tui("trace", "1", "--lifecycle", "call_1_1", "--json", *store).stdout)
    (entry,) = report["matches"]
    assert entry["matched"] == "call id" and entry["phases"][0]["first_request"] == 2
    assert entry["story"] == lines[3].strip()
    first = report["compaction_ledger"][0]
    assert first["rewrote"] is None and first["replaced"][0]["call_id"] == "call_1_1"
    folded = [p for p in entry["phases"] if p["state"] == "summary"]
    assert folded[0]["summary"] == first["through_step"]

    missing = io_tui("trace", "1", "--lifecycle", "nowhere in this run", *store)
    assert (
        missing.returncode == 1 and "has no entry matching 'nowhere in this run'" in missing.stderr
    )
    assert "Traceback" not in missing.stdout + missing.stderr


def test_a_fold_s_summary_shares_the_prompt_cache_of_the_request_before_it(
    workspace, write_script, store_path
):
    """Through a real run: the summary request repeats the working request before it, byte for
    byte, and asks after it; the trace prices it against that request's cached prefix and says
    so, and the run's running cost counts it."""
    for i in range(8):
        (workspace / f"m{i}.py").write_text("".join(f"x{j} = {j}\n" for j in range(400)))
    turns = [read(f"m{i % 8}.py", 1 + 40 * (i // 8)) for i in range(40)]
    store = run_turns(turns, workspace, write_script, store_path, ceiling=6000)

    trace = json.loads(io_tui("trace", "1", "--json", *store).stdout)
    requests = trace["requests"]
    folds = [i for i, q in enumerate(requests) if q["purpose"] == "summary"]
    assert folds
    for i in folds:
        summary = requests[i]
        before = next(q for q in reversed(requests[:i]) if q["purpose"] == "work")
        after = next(q for q in requests[i:] if q["purpose"] == "work")
        assert summary["shared"] and summary["messages"][:-1] == before["messages"]
        assert summary["messages"][-1]["content"].startswith("[io-tui harness: compaction]")
        cost = summary["cost"]
        assert cost["read"] > cost["written"] > 0 and cost["uncached"] == 0
        spent = after["cost"]["run_cost"] - before["cost"]["run_cost"]
        assert spent >= cost["cost"] + after["cost"]["cost"] - 0.2  # rounded to 0.1 each

    plain = io_tui("trace", "1", *store).stdout
    assert "summary: asked after the working request before it, sharing its prompt cache" in plain


def test_a_large_command_output_ages_out_and_the_trace_says_when(
    workspace, write_script, store_path
):
    """A listing printed at step 1 is acted on at step 2, then cleared by a rewrite that pays
    for itself: ``--lifecycle`` tells the story, and ``--context`` shows the stub and why."""
    listing = "print('\\n'.join(f'src/pkg/module_{i}.py' for i in range(500)))"
    command = {"name": "run_command", "arguments": {"argv": [sys.executable, "-c", listing]}}
    (workspace / "a.txt").write_text("a\n")
    turns = [{"tool_calls": [command]}] + [read("a.txt", 1) for _ in range(6)]
    store = run_turns(turns, workspace, write_script, store_path, ceiling=64_000)

    plain = io_tui("trace", "1", "--lifecycle", "call_1_1", *store)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    story = plain.stdout.splitlines()[3].strip()
    # the request that opened step 3 cleared it: the listing small steps follow pays at once
    assert story == "full → cleared (aged out at step 2)", story

    trace = json.loads(io_tui("trace", "1", "--json", *store).stdout)
    work = [q for q in trace["requests"] if q["purpose"] == "work"]
    last = next(e for e in work[-1]["entries"] if e["call_id"] == "call_1_1")
    assert last["state"] == "elided" and last["reason"].startswith(
        "a command's output, aged out at step 2"
    )
    cleared = next(q for q in work if q["rewrite"] and "call_1_1" in q["rewrite"]["dropped"])
    assert cleared["rewrite"]["cause"] == "planned"
    context = io_tui("trace", "1", "--context", str(cleared["step"]), *store)
    assert context.returncode == 0, context.stdout + context.stderr
    assert "a command's output, aged out at step 2" in context.stdout
    (stub,) = [m["content"] for m in cleared["messages"] if m.get("tool_call_id") == "call_1_1"]
    assert 'cleared, aged out at step 2; recall_result("call_1_1") reads it back' in stub
