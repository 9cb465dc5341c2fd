"""The headless CLI as a user meets it: real processes, a real store file, documented exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_process import io_tui

EDIT = {
    "name": "edit_file",
    "arguments": {"path": "src/app.py", "old": "return a", "new": "return x"},
}


def test_defer_then_decide_in_a_new_process(tmp_path, workspace, write_script, store_path):
    script = write_script([{"text": "fixing", "tool_calls": [EDIT]}, {"text": "done"}])
    run = io_tui(
        "run",
        "fix it",
        "--workspace",
        str(workspace),
        "--provider",
        f"scripted:{script}",
        "--approve",
        "defer",
        "--store",
        str(store_path),
        "--json",
    )
    assert run.returncode == 3, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert all("run_id" in line for line in lines)
    assert lines[-1]["outcome"] == "awaiting_approval"
    run_id = lines[-1]["run_id"]

    listed = io_tui("approvals", "--json", "--store", str(store_path))
    pending = json.loads(listed.stdout)["approvals"]
    assert [(p["run_id"], p["act"], p["target"]) for p in pending] == [
        (run_id, "write", "src/app.py")
    ]
    assert {"id", "run_id", "step", "act", "target", "content", "rule", "layer", "decision"} <= set(
        pending[0]
    )
    assert pending[0]["content"].endswith("return x\n")

    decided = io_tui(
        "decide", str(pending[0]["id"]), "approve", "--store", str(store_path), "--json"
    )
    assert decided.returncode == 0, decided.stdout + decided.stderr
    assert json.loads(decided.stdout.splitlines()[-1])["run_id"] == run_id
    assert (workspace / "src/app.py").read_text().endswith("return x\n")

    again = io_tui("decide", str(pending[0]["id"]), "deny", "--store", str(store_path))
    assert again.returncode == 1 and "already decided" in again.stderr and not again.stdout


def test_trace_json_matches_the_documented_schema(tmp_path, workspace, write_script, store_path):
    script = write_script(
        [
            {
                "tool_calls": [{"name": "read_file", "arguments": {"path": "src/app.py"}}],
                "usage": {"prompt_tokens": 900, "completion_tokens": 20},
            },
            {"text": "done"},
        ]
    )
    run = io_tui(
        "run",
        "look",
        "-w",
        str(workspace),
        "--provider",
        f"scripted:{script}",
        "--store",
        str(store_path),
        "--json",
    )
    assert run.returncode == 0, run.stderr
    trace = json.loads(io_tui("trace", "1", "--json", "--store", str(store_path)).stdout)
    assert set(trace) == {
        "run",
        "steps",
        "requests",
        "events",
        "approvals",
        "intents",
        "progress",
        "progress_revisions",
        "checkpoints",
        "forks",
    }
    progress = trace["progress"]  # the run's progress ledger, as the harness kept it
    assert progress["run_id"] == 1 and progress["status"] == "finished"
    assert progress["revision"] == trace["progress_revisions"][-1]["revision"]
    assert progress["digest"] == trace["progress_revisions"][-1]["digest"]
    assert {
        "id",
        "goal",
        "workspace",
        "status",
        "outcome",
        "parent_run_id",
        "steps",
        "tokens",
    } <= set(trace["run"])
    step = trace["steps"][0]
    assert {"step", "tool_calls", "decision", "result", "tokens", "unfinished_calls"} <= set(step)
    assert step["unfinished_calls"] == {}  # every call has its observation
    (intent,) = trace["intents"]  # a read's: written with its observation, done
    assert (intent["tool"], intent["status"], intent["act"]) == ("read_file", "done", "read")
    assert step["tool_calls"][0]["name"] == "read_file"
    assert "return a" in step["result"]  # the full, unelided result
    request = trace["requests"][0]
    assert {
        "step",
        "attempt",
        "ceiling_tokens",
        "est_tokens",
        "reported_tokens",
        "messages",
        "sections",
        "entries",
    } <= set(request)
    assert request["step"] == 1 and request["attempt"] == 1 and request["reported_tokens"] == 900
    assert {"role", "content"} <= set(request["messages"][0])
    second = trace["requests"][1]
    entry = second["entries"][0]
    assert {
        "step",
        "kind",
        "target",
        "state",
        "reason",
        "superseded_by",
        "chars",
        "est_tokens",
        "role",
        "authority",
        "source_ref",
        "source_version",
        "digest",
    } <= set(entry)
    assert entry["role"] == "untrusted data" and entry["authority"] == "read_file"
    assert second["boundary"]["stable_messages"] >= 2 and "limits" in second
    tool_msgs = [m for m in second["messages"] if m["role"] == "tool"]
    assert tool_msgs and tool_msgs[0]["tool_call_id"]
    assert all({"step", "kind", "detail"} <= set(e) for e in trace["events"])

    readable = io_tui("trace", "1", "--store", str(store_path))
    assert "step 1" in readable.stdout and "return a" in readable.stdout
    context = io_tui("trace", "1", "--context", "2", "--store", str(store_path))
    assert "ceiling" in context.stdout and "src/app.py" in context.stdout
    assert "untrusted data" in context.stdout and "stable prefix: " in context.stdout


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        ("bad_json", ["--provider", "scripted:{script}"], "not valid JSON"),
        ("none", ["--provider", "scripted:{tmp}/missing.json"], "not found"),
        ("none", ["--workspace", "{tmp}/nowhere"], "nowhere"),
        ("policy_typo", ["--policy", "{tmp}/policy.toml"], "efect"),
        ("none", ["--store", "/proc/forbidden/x.db"], "cannot open store"),
        ("none", ["--approve", "maybe"], "invalid choice"),
    ],
)
def test_bad_input_gives_one_line_and_exit_2(
    tmp_path, workspace, write_script, setup, args, message
):
    script = write_script([{"text": "ok"}])
    if setup == "bad_json":
        script.write_text("{not json")
    if setup == "policy_typo":
        (tmp_path / "policy.toml").write_text(
            '[[layers]]\nname = "p"\n[[layers.rules]]\nact = "write"\nefect = "allow"\npattern = "*"\n'
        )
    base = [
        "run",
        "task",
        "--workspace",
        str(workspace),
        "--provider",
        f"scripted:{script}",
        "--store",
        str(tmp_path / "s.db"),
    ]
    extra = [a.format(script=script, tmp=tmp_path) for a in args]
    result = io_tui(*base, *extra)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_corrupt_store_is_reported_not_crashed(tmp_path):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not sqlite" * 100)
    result = io_tui("approvals", "--store", str(bad))
    assert result.returncode == 2
    assert "not an io-tui store" in result.stderr
    assert bad.read_bytes() == b"this is not sqlite" * 100


def test_demo_headless_runs_to_success(store_path):
    result = io_tui("demo", "--headless", "--store", str(store_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "finished (success)" in result.stdout
    trace = json.loads(io_tui("trace", "1", "--json", "--store", str(store_path)).stdout)
    tools = [c["name"] for s in trace["steps"] for c in s["tool_calls"]]
    assert {"list_dir", "read_file", "grep", "edit_file", "run_command", "remember"} <= set(tools)
    assert all(
        not o["is_error"] or o["tool"] == "run_command"
        for s in trace["steps"]
        for o in s["observations"]
    )
    verify = [e for e in trace["events"] if e["kind"] == "verify"]
    assert verify[-1]["detail"]["passed"] is True


def test_the_demo_corrects_what_went_out_of_date_and_prices_the_run(store_path):
    """The demo edits the file it read: the read's copy stays where the cached prefix holds it
    (``corrected``) and its correction follows, recorded with the step it was sent at; every
    answered request says what it cost with caching beside re-sending everything, and the
    readable trace gives the run's figure."""
    assert io_tui("demo", "--headless", "--store", str(store_path)).returncode == 0
    trace = json.loads(io_tui("trace", "1", "--json", "--store", str(store_path)).stdout)
    fixes = [o for s in trace["steps"] for o in s["observations"] if o["corrects"]]
    assert fixes and all(f["text"].startswith("[correction of step ") for f in fixes)
    corrected = {
        e["call_id"] for r in trace["requests"] for e in r["entries"] if e["state"] == "corrected"
    }
    assert corrected == {f["corrects"] for f in fixes}
    work = [r for r in trace["requests"] if r["purpose"] == "work"]
    assert all(r["cost"] is not None for r in work)
    last = work[-1]["cost"]
    assert last["ratio"] == pytest.approx(last["run_cost"] / last["run_naive_cost"], abs=0.001)
    readable = io_tui("trace", "1", "--store", str(store_path)).stdout
    assert f"re-sending everything, {last['ratio']:.2f}×" in readable
    assert "↻ [correction of step " in readable


def test_core_never_imports_textual_or_rich():
    code = (
        "import sys, pkgutil, importlib, io_tui.core as core\n"
        "for m in pkgutil.walk_packages(core.__path__, 'io_tui.core.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in {'textual'} or n.startswith('io_tui.ui'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""


def test_core_sources_never_mention_rich_or_textual():
    """httpx may pull rich in at run time, so ban the import statically too (STYLE habit 1)."""
    root = Path(__file__).resolve().parents[2] / "io_tui" / "core"
    offenders = [
        str(p)
        for p in root.rglob("*.py")
        if any(
            line.lstrip().startswith(
                ("import rich", "from rich", "import textual", "from textual", "from io_tui.ui")
            )
            for line in p.read_text().splitlines()
        )
    ]
    assert offenders == []


def _loaded_after(code: str, watched: tuple[str, ...]) -> list[str]:
    probe = f"{code}\nimport sys\nprint(sorted(m for m in {watched!r} if m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1].replace("'", '"'))


HARNESS = (
    "io_tui.core.run.loop",
    "io_tui.core.run.launch",
    "io_tui.core.providers.factory",
    "httpx",
)


def test_the_app_process_does_not_load_the_harness() -> None:
    """Runs execute in the worker process: the app's startup skips the run loop, the providers
    and httpx (what makes `io-tui`'s first frame wait)."""
    assert _loaded_after("import io_tui.ui.app", HARNESS) == []


def test_a_command_loads_only_its_own_module() -> None:
    version = (
        "from io_tui.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass"
    )
    assert _loaded_after(version, (*HARNESS, "textual", "io_tui.core.store", "pydantic")) == []
    trace = "from io_tui.cli import build_parser\nbuild_parser(['trace', '1'])"
    modules = ("io_tui.cli.trace", "io_tui.cli.run", "io_tui.cli.memory", "io_tui.cli.mcp")
    assert _loaded_after(trace, modules) == ["io_tui.cli.trace"]


def test_run_continue_starts_a_fresh_run_from_the_earlier_ones_ledger(
    workspace, write_script, store_path
):
    """``io-tui run --continue RUN``: a fresh run in RUN's workspace whose first request carries
    RUN's progress ledger (shown by ``trace --ledger``), and nothing of RUN's transcript."""
    script = write_script([{"text": "fixing parse", "tool_calls": [EDIT]}, {"text": "done"}])
    store = ("--store", str(store_path))
    first = io_tui(
        "run", "fix it", "-w", str(workspace), "--provider", f"scripted:{script}",
        "--approve", "defer", *store,
    )  # fmt: skip
    assert first.returncode == 3, first.stderr
    ledger = io_tui("trace", "1", "--ledger", *store)
    assert ledger.returncode == 0, ledger.stderr
    assert "Progress ledger of run 1" in ledger.stdout
    assert "- approval 1: write src/app.py" in ledger.stdout
    assert "Next safe action: the operator decides approval 1" in ledger.stdout

    again = write_script([{"text": "approval 1 still waits"}])
    second = io_tui(
        "run", "--continue", "1", "--provider", f"scripted:{again}", "--json", *store,
        cwd=store_path.parent,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    trace = json.loads(io_tui("trace", "2", "--json", *store).stdout)
    assert trace["run"]["workspace"] == str(workspace)  # RUN's, not the current directory
    assert trace["run"]["goal"].startswith("Continue the work of run 1")
    revision = trace["run"]["continues"]
    assert (
        revision["run_id"] == 1
        and revision["digest"]
        == json.loads(io_tui("trace", "1", "--json", *store).stdout)["progress"]["digest"]
    )
    sent = "\n".join(m["content"] for m in trace["requests"][0]["messages"])
    assert ledger.stdout.strip() in sent
    # the transcript stays behind: the model's words only as the ledger quotes them
    assert "fixing parse" not in sent.replace(ledger.stdout.strip(), "")

    missing = io_tui("run", "--continue", "9", *store)
    assert missing.returncode == 2 and "no run 9 to continue" in missing.stderr
    elsewhere = io_tui("run", "--continue", "1", "-w", str(store_path.parent), *store)
    assert elsewhere.returncode == 2 and "leave out -w" in elsewhere.stderr  # not ignored
    bare = io_tui("run", *store)
    assert bare.returncode == 2 and "TASK" in bare.stderr


def test_trace_header_counts_in_words_and_names_an_outcome_once(
    workspace, write_script, store_path
):
    """A one-step run reads "1 step", and an outcome the same as its status is not repeated
    ("finished (finished)")."""
    script = write_script([{"text": "done"}])
    run = io_tui(
        "run", "look", "-w", str(workspace), "--provider", f"scripted:{script}",
        "--store", str(store_path),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    shown = io_tui("trace", "1", "--store", str(store_path))
    assert shown.returncode == 0 and shown.stderr == ""
    header = shown.stdout.splitlines()[0]
    assert header.startswith("run 1 · finished · 1 step · "), header
