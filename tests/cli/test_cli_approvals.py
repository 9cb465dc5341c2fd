"""Approving from a shell: ``io-tui run --approve ask``, ``io-tui decide`` and ``io-tui approvals``
show what they approve — a write as a diff against the file as it is now, cut around its change,
a command as its shell-quoted argv — and remember exactly what was asked unless told wider.
Real processes, a real store file; a pseudo-terminal where a terminal is the point."""

from __future__ import annotations

import json
import os
import pty
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
from cli_process import IO_TUI, io_tui, user_env

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _module(count: int = 20) -> str:
    head = ['"""Counting words."""', "", "from __future__ import annotations", ""]
    return "\n".join(head + [f"def f{i}(x):\n    return x + {i}\n" for i in range(count)]) + "\n"


@pytest.fixture
def textstats(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "textstats").mkdir(parents=True)
    (root / "textstats" / "counts.py").write_text(_module())
    return root


def _write_turns(*contents: tuple[str, str]) -> list[dict[str, object]]:
    turns: list[dict[str, object]] = [
        {
            "tool_calls": [
                {"id": f"w{n}", "name": "write_file", "arguments": {"path": p, "content": c}}
            ]
        }
        for n, (p, c) in enumerate(contents)
    ]
    return [*turns, {"text": "done"}]


def _changed() -> str:
    return _module().replace("return x + 7", "return x * 7")


def test_run_ask_shows_a_write_as_a_diff_cut_around_its_change(textstats, write_script, store_path):
    """Piped, as a script or CI sees it: a plain unified diff of the one changed line with its
    context, the unchanged lines counted, never the whole new file on one escaped line."""
    script = write_script(_write_turns(("textstats/counts.py", _changed())))
    run = io_tui(
        "run", "fix", "-w", str(textstats), "--provider", f"scripted:{script}",
        "--store", str(store_path), "--approve", "ask", input="y\n",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    err = run.stderr
    assert "asks to write textstats/counts.py" in err
    assert "textstats/counts.py — against the current file · +1 −1" in err
    assert "--- a/textstats/counts.py\n+++ b/textstats/counts.py\n" in err
    assert "⋯ 23 unchanged lines\n@@ -24,7 +24,7 @@\n" in err
    assert "-    return x + 7\n+    return x * 7\n" in err
    assert "⋯ 34 unchanged lines\n" in err
    assert "def f15" not in err  # only the change and its context
    assert "chars)" not in err and "\\n" not in err.split("? asks")[1]
    assert not ANSI.search(err)  # plain when piped
    assert (textstats / "textstats" / "counts.py").read_text() == _changed()
    assert "run 1: finished after 2 steps" in run.stdout  # no "finished (finished)"


def test_run_ask_shows_a_new_file_and_a_command_as_argv(textstats, write_script, store_path):
    script = write_script(
        [
            {"tool_calls": [{"id": "a", "name": "write_file",
                             "arguments": {"path": "NOTES.md", "content": "one\ntwo\n"}}]},
            {"tool_calls": [{"id": "b", "name": "run_command",
                             "arguments": {"argv": ["python3", "-c", "print('hi there')"]}}]},
            {"text": "done"},
        ]
    )  # fmt: skip
    run = io_tui(
        "run", "note", "-w", str(textstats), "--provider", f"scripted:{script}",
        "--store", str(store_path), "--approve", "ask", input="y\nn not now\n",
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "NOTES.md — new file, 2 lines" in run.stderr
    assert "@@ -0,0 +1,2 @@\n+one\n+two\n" in run.stderr
    assert "$ python3 -c 'print('\"'\"'hi there'\"'\"')'" in run.stderr
    assert "['python3'" not in run.stderr
    trace = json.loads(io_tui("trace", "1", "--json", "--store", str(store_path)).stdout)
    assert "not now" in json.dumps(trace["steps"][1])


def test_a_control_sequence_in_a_write_is_shown_not_obeyed(textstats, write_script, store_path):
    script = write_script(_write_turns(("evil.txt", "look\x1b[2J\x1b]0;owned\x07here\n")))
    run = io_tui(
        "run", "x", "-w", str(textstats), "--provider", f"scripted:{script}",
        "--store", str(store_path), "--approve", "ask", input="n\n",
    )  # fmt: skip
    assert "+look\\x1b[2J\\x1b]0;owned\\x07here" in run.stderr
    assert "\x1b" not in run.stderr


def _on_a_terminal(args: list[str], answer: str, env: dict[str, str]) -> str:
    """``io-tui ARGS`` with a pseudo-terminal as stdin, stdout and stderr, ``answer`` typed at
    each question: what it showed."""
    main, child = pty.openpty()
    proc = subprocess.Popen(
        [*IO_TUI, *args], stdin=child, stdout=child, stderr=child, env=env, close_fds=True
    )
    os.close(child)
    out = b""
    answered = 0
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        out += chunk
        if out.count(b"[d]efer: ") > answered:  # each question answered once
            os.write(main, answer.encode())
            answered += 1
    proc.wait(timeout=120)
    os.close(main)
    return out.decode(errors="replace")


def test_on_a_terminal_the_diff_is_coloured_and_a_long_one_paged(
    textstats, write_script, store_path
):
    """On a terminal the diff is in colour; taller than the terminal, it goes through the
    pager ($PAGER: here one that marks each line it shows)."""
    new = "\n".join(f"line {i}" for i in range(40)) + "\n"
    script = write_script(_write_turns(("textstats/counts.py", _changed()), ("long.txt", new)))
    pager = "sed s/^/PAGED:/"
    env = user_env({"PAGER": pager, "LINES": "30", "COLUMNS": "100", "TERM": "xterm"})
    shown = _on_a_terminal(
        ["run", "fix", "-w", str(textstats), "--provider", f"scripted:{script}",
         "--store", str(store_path), "--approve", "ask"],
        "y\r", env,
    )  # fmt: skip
    # the short diff: coloured, not paged
    assert ANSI.search(shown.split("asks to write long.txt")[0])
    plain = ANSI.sub("", shown)
    assert "-    return x + 7" in plain and "PAGED:-    return x + 7" not in plain
    # the long one (40 lines, a 30-line terminal): through the pager
    assert "PAGED:" in plain and "+line 39" in plain


def test_decide_without_a_decision_shows_the_request_and_remembers_a_choice(
    textstats, write_script, store_path
):
    """``io-tui decide ID`` shows the request as ``run --approve ask`` does, and asks; ``r 2``
    remembers the second choice (the folder). The inbox showed the same diff before."""
    script = write_script(_write_turns(("textstats/counts.py", _changed())))
    paused = io_tui(
        "run", "fix", "-w", str(textstats), "--provider", f"scripted:{script}",
        "--store", str(store_path), "--approve", "defer",
    )  # fmt: skip
    assert paused.returncode == 3, paused.stderr
    inbox = io_tui("approvals", "--store", str(store_path))
    assert inbox.returncode == 0, inbox.stderr
    assert (
        "#1  run 1 step 1  write textstats/counts.py  [pending] · io-tui decide 1" in inbox.stdout
    )
    assert "-    return x + 7\n+    return x * 7\n" in inbox.stdout
    assert "⋯ 34 unchanged lines" in inbox.stdout

    decided = io_tui("decide", "1", "--store", str(store_path), input="r 2\n")
    assert decided.returncode == 0, decided.stderr
    assert "+    return x * 7" in decided.stderr
    assert "  1  textstats/counts.py  only this file" in decided.stderr
    assert "  2  textstats/*          every file under textstats/" in decided.stderr
    assert "remembered: write textstats/* (this workspace)" in decided.stderr
    rules = json.loads(io_tui("rules", "list", "--json", "--store", str(store_path)).stdout)
    assert [(r["pattern"], r["scope"]) for r in rules] == [("textstats/*", "workspace")]
    assert (textstats / "textstats" / "counts.py").read_text() == _changed()


def test_remember_at_the_terminal_grants_exactly_the_path_by_default(
    textstats, write_script, store_path
):
    script = write_script(
        _write_turns(("textstats/counts.py", _changed()), ("textstats/other.py", "x = 1\n"))
    )
    run = io_tui(
        "run", "fix", "-w", str(textstats), "--provider", f"scripted:{script}",
        "--store", str(store_path), "--approve", "ask", input="r\nd\n",
    )  # fmt: skip
    assert run.returncode == 3, run.stderr  # the second write asked again, and was deferred
    assert run.stderr.count("asks to write") == 2
    rules = json.loads(io_tui("rules", "list", "--json", "--store", str(store_path)).stdout)
    assert [(r["pattern"], r["scope"]) for r in rules] == [("textstats/counts.py", "workspace")]


def test_decide_left_pending_and_an_answer_that_is_none(textstats, write_script, store_path):
    script = write_script(_write_turns(("textstats/counts.py", _changed())))
    io_tui(
        "run", "fix", "-w", str(textstats), "--provider", f"scripted:{script}",
        "--store", str(store_path), "--approve", "defer",
    )  # fmt: skip
    kept = io_tui("decide", "1", "--store", str(store_path), input="maybe\nr 9\nd\n")
    assert kept.returncode == 0, kept.stderr
    assert "'maybe' is not an answer" in kept.stderr
    assert "choose a pattern from 1 to 3" in kept.stderr
    assert "request 1 left pending" in kept.stderr
    pending = json.loads(io_tui("approvals", "--json", "--store", str(store_path)).stdout)
    assert [a["id"] for a in pending["approvals"]] == [1]


@pytest.mark.parametrize(
    "args",
    [
        ("trace", "99"),
        ("trace", "99", "--json"),
        ("decide", "99", "approve"),
        ("decide", "99"),
        ("resume", "99"),
        ("rules", "revoke", "99"),
        ("cancel", "99"),
    ],
)
def test_every_error_goes_to_stderr(args, tmp_path):
    """A refusal is one line on stderr; stdout (what a script reads) stays empty."""
    db = tmp_path / "store.db"
    sqlite3.connect(db).close()  # an empty store to refuse from
    done = io_tui(*args, "--store", str(db))
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith("io-tui: ") and "99" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_trace_says_calls_and_decisions_in_words(workspace, write_script, store_path):
    script = write_script(
        [{"tool_calls": [{"name": "read_file", "arguments": {"path": "src/app.py"}}]},
         {"text": "done"}]
    )  # fmt: skip
    io_tui(
        "run", "look", "-w", str(workspace), "--provider", f"scripted:{script}",
        "--store", str(store_path),
    )  # fmt: skip
    trace = io_tui("trace", "1", "--store", str(store_path))
    assert '→ read_file {"path": "src/app.py"}' in trace.stdout
    assert "decision: final answer" in trace.stdout
    assert "{'" not in trace.stdout and "True}" not in trace.stdout
