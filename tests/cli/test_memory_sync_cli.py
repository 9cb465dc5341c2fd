"""`io-tui memory verify|expire|supersede|merge|log|promote|export|import`: provenance, the daily log and
markdown round trips against a real store file (the store stays the authority)."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_process import io_tui
from test_memory_cli import Cli

from io_tui.core.contract import MemoryLimits
from io_tui.core.store import Store

DAY = 1_760_000_000.0  # 2025-10-09 08:53:20 UTC


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(tmp_path, capsys)


def _seed_log(cli: Cli) -> None:
    async def seed() -> None:
        async with await Store.open(cli.db, create=True) as store:
            ws = str(cli.ws.resolve())
            await store.daily_log.append(
                ws,
                [
                    ("goal", "fix the parser"),
                    ("outcome", "success after 3 steps"),
                    ("tests", "`pytest -q` → exit code 0"),
                ],
                run_id=4,
                at=DAY,
            )
            await store.notes.write(
                key="guess",
                value="the parser is in src/app.py",
                scope="workspace",
                workspace=ws,
                run_id=4,
                step=2,
                limits=MemoryLimits(),
            )

    asyncio.run(seed())


def test_set_with_provenance_then_verify_expire_and_supersede(cli: Cli) -> None:
    code, out, err = cli(
        "set",
        "tone",
        "short answers",
        "--type",
        "preference",
        "--section",
        "preferences",
        "--unverified",
        "--source",
        "chat 2025-10-09",
    )
    assert code == 0, err
    note = cli.json("get", "tone")
    assert (note["type"], note["status"], note["section"], note["source"]) == (
        "preference",
        "unverified",
        "preferences",
        "chat 2025-10-09",
    )
    code, out, _ = cli("verify", "tone")
    assert code == 0 and "is now a confirmed preference" in out
    code, out, _ = cli("verify", "tone", "--undo")
    assert code == 0 and "is now an unconfirmed preference" in out  # not "a unconfirmed"
    cli("verify", "tone")
    cli("set", "old-cmd", "make check")
    cli("set", "test-cmd", "pytest -q")
    code, out, _ = cli("supersede", "old-cmd", "test-cmd")
    assert code == 0 and "superseded by 'test-cmd' (no longer recalled)" in out
    code, out, _ = cli("expire", "tone", "--at", "2000-01-01")
    assert code == 0 and "(no longer recalled)" in out
    code, out, _ = cli("list")
    rows = {line.split()[0]: line for line in out.splitlines()[2:]}
    assert "superseded" in rows["old-cmd"] and "expired" in rows["tone"]
    assert "verified fact" in rows["test-cmd"] and "active" in rows["test-cmd"]
    # bad input: one clear line, exit 2 (or 1 for a missing note)
    assert cli("expire", "tone", "--at", "soon")[0] == 2
    code, _, err = cli("supersede", "test-cmd", "test-cmd")
    assert code == 2 and "cannot supersede itself" in err
    code, _, err = cli("verify", "nope")
    assert code == 1 and "no note 'nope'" in err
    code, _, err = cli("supersede", "tone")
    assert code == 2 and "supersede KEY BY" in err


def test_deleting_the_note_that_superseded_others_makes_them_current_again(
    cli: Cli,
) -> None:
    """`memory delete` of the note that superseded (or absorbed in a merge) others does not leave
    them superseded by a note that does not exist, never recalled: they are current again, the
    command says which, and the audit records each supersession undone."""
    where = ("--workspace", str(cli.ws), "--store", str(cli.db))
    for key, value in (("old-cmd", "make check"), ("lint", "ruff"), ("test-cmd", "pytest -q")):
        assert io_tui("memory", "set", key, value, *where).returncode == 0
    assert io_tui("memory", "supersede", "old-cmd", "test-cmd", *where).returncode == 0
    assert io_tui("memory", "merge", "lint", "test-cmd", *where).returncode == 0
    deleted = io_tui("memory", "delete", "test-cmd", *where)
    assert deleted.returncode == 0, deleted.stderr
    assert "'old-cmd', 'lint' (superseded by it) are current again: recalled" in deleted.stdout
    rows = {n["key"]: n for n in cli.json("list")}
    assert {k: n["superseded_by"] for k, n in rows.items()} == {"old-cmd": None, "lint": None}
    listed = io_tui("memory", "list", *where).stdout
    assert "superseded" not in listed

    async def audit() -> list[dict[str, object]]:
        async with await Store.open(cli.db) as store:
            return [e.detail for e in await store.trace.events(0)]

    undone = [d for d in asyncio.run(audit()) if d.get("because") == "delete"]
    assert [(d["op"], d["key"], d["was_superseded_by"]) for d in undone] == [
        ("supersede", "old-cmd", "test-cmd"),
        ("supersede", "lint", "test-cmd"),
    ]


def test_merge_does_what_the_editor_does(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    cli("set", "test-cmd", "pytest -q", "--source", "Makefile")
    cli("set", "lint-cmd", "ruff check", "--unverified", "--type", "preference")
    code, out, err = cli("merge", "lint-cmd", "test-cmd")
    assert code == 0, err
    assert "merged 'lint-cmd' into 'test-cmd'" in out and "no longer recalled" in out
    into, gone = cli.json("get", "test-cmd"), cli.json("get", "lint-cmd")
    # the editor's default value (both, INTO's first), written as the operator's verified note
    # keeping INTO's type; the merged note is superseded by it and says so in its source
    assert into["value"] == "pytest -q\nruff check"
    assert (into["type"], into["status"], into["source"]) == (
        "fact",
        "verified",
        "Makefile; merged lint-cmd",
    )
    assert gone["superseded_by"] == "test-cmd" and gone["value"] == "ruff check"
    # a value of one's own, from stdin
    cli("set", "fmt-cmd", "ruff format")
    monkeypatch.setattr("sys.stdin", io.StringIO("make check"))
    data = cli.json("merge", "fmt-cmd", "test-cmd", "--value", "-")
    assert data["note"]["value"] == "make check" and data["superseded"] == "fmt-cmd"
    # bad input: one clear line
    code, _, err = cli("merge", "nope", "test-cmd")
    assert code == 1 and "no note 'nope'" in err
    code, _, err = cli("merge", "test-cmd", "test-cmd")
    assert code == 2 and "cannot be merged into itself" in err
    code, _, err = cli("merge", "lint-cmd", "test-cmd", "--value", "  ")
    assert code == 2 and "needs a value" in err


def test_set_over_a_note_keeps_what_it_does_not_say(cli: Cli) -> None:
    cli(
        "set",
        "tone",
        "short",
        "--type",
        "preference",
        "--section",
        "preferences",
        "--source",
        "chat",
    )
    cli("set", "tone", "short answers, no emoji")  # the operator rewrites the text alone
    note = cli.json("get", "tone")
    assert (note["value"], note["type"], note["section"], note["source"], note["status"]) == (
        "short answers, no emoji",
        "preference",
        "preferences",
        "chat",
        "verified",
    )
    cli("set", "tone", "terse", "--section", "lessons", "--source", "")
    note = cli.json("get", "tone")
    assert (note["type"], note["section"], note["source"]) == ("preference", "lessons", "")
    cli("set", "fresh", "a new note")  # a new note: a verified fact in project knowledge
    note = cli.json("get", "fresh")
    assert (note["type"], note["section"], note["status"]) == ("fact", "project", "verified")


def test_log_lists_lines_and_promote_makes_a_sourced_note(cli: Cli) -> None:
    _seed_log(cli)
    lines = cli.json("log")
    assert [(x["field"], x["run_id"], x["day"]) for x in lines] == [
        ("goal", 4, "2025-10-09"),
        ("outcome", 4, "2025-10-09"),
        ("tests", 4, "2025-10-09"),
    ]
    tests_line = lines[2]["id"]
    code, out, err = cli("promote", str(tests_line), "test-cmd", "--section", "lessons")
    assert code == 0, err
    assert "(lessons, verified fact, source: log 2025-10-09 run 4)" in out
    code, out, _ = cli("log", "--day", "2025-10-09")
    assert "→ test-cmd" in out
    assert cli("log", "--day", "yesterday")[0] == 2
    assert cli("promote", "999", "k")[0] == 2


def test_set_is_an_upsert_and_promote_replaces_a_note_only_when_told(cli: Cli) -> None:
    """`memory set` is the CLI's documented upsert; `memory promote LINE KEY` onto a key that
    holds a note never overwrites it silently: it is refused (exit 1, naming the note) unless
    --replace."""
    _seed_log(cli)
    where = ("--workspace", str(cli.ws), "--store", str(cli.db))
    assert io_tui("memory", "set", "test-cmd", "pytest -q", *where).returncode == 0
    upsert = io_tui("memory", "set", "test-cmd", "pytest -q -x", *where)
    assert upsert.returncode == 0, upsert.stderr
    assert cli.json("get", "test-cmd")["value"] == "pytest -q -x"
    line = str(cli.json("log")[2]["id"])
    refused = io_tui("memory", "promote", line, "test-cmd", *where)
    assert refused.returncode == 1, refused.stdout
    assert "already has a note 'test-cmd' (pytest -q -x)" in refused.stderr
    assert "--replace" in refused.stderr
    assert cli.json("get", "test-cmd")["value"] == "pytest -q -x"  # nothing lost
    assert cli.json("log")[2]["promoted"] is None
    replaced = io_tui("memory", "promote", line, "test-cmd", "--replace", *where)
    assert replaced.returncode == 0, replaced.stderr
    note = cli.json("get", "test-cmd")
    assert (note["value"], note["source"]) == ("`pytest -q` → exit code 0", "log 2025-10-09 run 4")


def test_export_writes_both_tiers_and_import_round_trips_unchanged(cli: Cli) -> None:
    _seed_log(cli)
    cli("set", "style", "tabs\n\nnever spaces", "--type", "preference", "--section", "preferences")
    code, out, err = cli("export")
    assert code == 0, err
    memory_md = (cli.ws / "MEMORY.md").read_text()
    assert "## Preferences\n\n- **style**: tabs\n\n  never spaces\n" in memory_md
    assert '"type": "inference", "status": "unverified", "by": "run 4 step 2"' in memory_md
    day = (cli.ws / ".io-tui/memory/2025-10-09.md").read_text()
    assert day.startswith("# 2025-10-09\n\n## run 4 · 08:53:20 UTC\n- goal: fix the parser\n")
    # exporting again changes nothing; importing what was exported changes nothing
    code, out, _ = cli("export")
    assert "0 files changed" in out
    report = cli.json("import")
    assert report["added"] == [] and report["conflicts"] == []
    assert sorted(report["unchanged"]) == ["guess", "style"]
    assert (report["log_added"], report["log_unchanged"]) == (0, 3)


def test_import_adds_new_notes_and_reports_conflicts_without_overwriting(
    cli: Cli, tmp_path: Path
) -> None:
    cli("set", "test-cmd", "pytest -q")
    cli("export")
    text = (cli.ws / "MEMORY.md").read_text()
    text = text.replace("- **test-cmd**: pytest -q", "- **test-cmd**: make test")
    text += "\n## Lessons\n\n- **flaky**: the network test is flaky on CI\n"
    text = text.replace("## Lessons\n\n\n## Lessons", "## Lessons")
    (cli.ws / "MEMORY.md").write_text(text)
    # a teammate's edit is not overwritten by an export either
    code, _, err = cli("export")
    assert code == 1 and "holds memory the store lacks (1 new notes, 1 that differ" in err
    code, out, _ = cli("import", "--dry-run")
    assert code == 0 and out.startswith("would import")
    assert cli("get", "flaky")[0] == 1  # the dry run changed nothing
    code, out, _ = cli("import")
    assert code == 1  # a conflict left unresolved
    assert "1 note added, 0 unchanged, 1 differing" in out
    assert "differs 'test-cmd'" in out and "kept the store's" in out
    assert "store: pytest -q" in out and "file:  make test" in out
    assert cli.json("get", "test-cmd")["value"] == "pytest -q"  # the store is the authority
    flaky = cli.json("get", "flaky")
    assert (flaky["section"], flaky["type"], flaky["status"], flaky["source"]) == (
        "lessons",
        "fact",
        "verified",
        "MEMORY.md",
    )
    code, out, _ = cli("import", "--replace")
    assert code == 0 and "replaced by the file's" in out
    assert cli.json("get", "test-cmd")["value"] == "make test"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("# Memory\n\n- **k**: v\n", "MEMORY.md:3: a note before any '## ' section"),
        ("## Trivia\n", "MEMORY.md:1: unknown section 'Trivia'"),
        ("## Lessons\n\n* k: v\n", "MEMORY.md:3: expected a note ('- **key**: value')"),
        ("## Lessons\n- **k**: v\n- **k**: w\n", "MEMORY.md:3: the key 'k' appears twice"),
        (
            '## Lessons\n- **k**: v\n  <!-- io-tui {"type": "rumour"} -->\n',
            "MEMORY.md:2: type must be one of fact, preference, inference",
        ),
        (
            "## Lessons\n- **k**: v\n  <!-- io-tui {nope} -->\n",
            "MEMORY.md:3: the provenance comment is not JSON",
        ),
        (
            '## Lessons\n- **k**: v\n  <!-- io-tui {"colour": 1} -->\n',
            "MEMORY.md:3: unknown provenance field(s) colour",
        ),
        (
            '## Lessons\n- **k**: v\n  <!-- io-tui {"expires": "soon"} -->\n',
            "MEMORY.md:2: expires: 'soon' is not a date",
        ),
    ],
)
def test_malformed_memory_md_is_a_clear_error_and_changes_nothing(
    cli: Cli, text: str, error: str
) -> None:
    cli("set", "keep", "me")
    (cli.ws / "MEMORY.md").write_text(text)
    code, out, err = cli("import")
    assert code == 2, (out, err)
    assert "malformed memory file, nothing imported" in err and error in err
    assert "Traceback" not in err
    assert [n["key"] for n in cli.json("list")] == ["keep"]


def test_malformed_daily_log_is_a_clear_error(cli: Cli) -> None:
    folder = cli.ws / ".io-tui/memory"
    folder.mkdir(parents=True)
    (folder / "2025-10-09.md").write_text("# 2025-10-09\n\n- goal: no heading\n")
    code, _, err = cli("import")
    assert code == 2 and "2025-10-09.md:3: a log line before any '## run N' heading" in err
    (folder / "2025-10-09.md").write_text("# 2025-10-10\n")
    code, _, err = cli("import")
    assert code == 2 and "the heading says 2025-10-10 but the file is 2025-10-09.md" in err
    (folder / "2025-10-09.md").write_text("# 2025-10-09\n## run 3 · 10:00:00 UTC\n- mood: ok\n")
    code, _, err = cli("import")
    assert code == 2 and "unknown log field 'mood'" in err


def test_a_teammates_log_day_is_merged_once(cli: Cli) -> None:
    folder = cli.ws / ".io-tui/memory"
    folder.mkdir(parents=True)
    (folder / "2025-10-08.md").write_text(
        "# 2025-10-08\n\n## run 9 · 17:00:05 UTC\n- goal: add the lexer\n- files: src/lex.py\n"
    )
    assert cli.json("import")["log_added"] == 2
    assert cli.json("import")["log_added"] == 0
    lines = cli.json("log")
    assert [(x["day"], x["run_id"], x["field"], x["text"]) for x in lines] == [
        ("2025-10-08", 9, "goal", "add the lexer"),
        ("2025-10-08", 9, "files", "src/lex.py"),
    ]


def test_import_over_the_caps_is_refused_before_any_change(cli: Cli) -> None:
    notes = "".join(f"- **k{i}**: note {i}\n" for i in range(70))
    (cli.ws / "MEMORY.md").write_text(f"## Project knowledge\n\n{notes}")
    code, _, err = cli("import")
    assert code == 2 and "over the caps (64 notes" in err
    assert cli.json("list") == []


def test_global_export_needs_a_directory(cli: Cli, tmp_path: Path) -> None:
    cli("set", "owner", "alice", "--global", ws=False)
    code, _, err = cli("export", "--global", ws=False)
    assert code == 2 and "give --to DIR" in err
    team = tmp_path / "team"
    code, _out, err = cli("export", "--global", "--to", str(team), ws=False)
    assert code == 0, err
    assert "- **owner**: alice" in (team / "MEMORY.md").read_text()
    assert not (team / ".io-tui").exists()


def test_the_real_command_reports_a_malformed_file_without_a_traceback(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "MEMORY.md").write_text("## Lessons\n- **k**: v\n  <!-- io-tui [1] -->\n")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "io_tui",
            "--store",
            str(tmp_path / "s.db"),
            "memory",
            "import",
            "--workspace",
            str(ws),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().endswith("MEMORY.md:3: the provenance comment must be a JSON object")
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_a_note_needs_a_value_so_an_export_reads_back(tmp_path: Path) -> None:
    """One rule for every write: a note needs a value that is not empty or blank. `memory set
    k2 ""` is refused, since the export it would write (`- **k2**:`) could not be imported,
    nor exported over, again."""
    ws = tmp_path / "ws"
    ws.mkdir()
    where = ("--workspace", str(ws), "--store", str(tmp_path / "store.db"))
    assert io_tui("memory", "set", "k1", "pytest -q", *where).returncode == 0
    for blank in ("", "  \n\t"):
        refused = io_tui("memory", "set", "k2", blank, *where)
        assert refused.returncode == 2, refused.stdout
        assert "a note needs a value" in refused.stderr
        emptied = io_tui("memory", "set", "k1", blank, *where)  # nor may a rewrite empty one
        assert emptied.returncode == 2 and "a note needs a value" in emptied.stderr
    assert "k2" not in io_tui("memory", "list", *where).stdout
    exported = io_tui("memory", "export", *where)
    assert exported.returncode == 0, exported.stderr
    assert "- **k1**: pytest -q" in (ws / "MEMORY.md").read_text()
    dry = io_tui("memory", "import", "--dry-run", *where)
    assert dry.returncode == 0, dry.stderr
    assert "0 notes added, 1 unchanged, 0 differing" in dry.stdout
    again = io_tui("memory", "export", *where)
    assert again.returncode == 0, again.stderr


def test_an_export_refuses_a_blank_note_written_before_the_rule(cli: Cli) -> None:
    """A store may hold a blank note from before every write refused one: the export names it
    rather than write a MEMORY.md it could not read back."""
    cli("set", "k1", "pytest -q")

    async def blank() -> None:
        async with await Store.open(cli.db) as store:
            await store.db.conn.execute("UPDATE memory SET value = '' WHERE key = 'k1'")
            await store.db.conn.commit()

    asyncio.run(blank())
    code, _, err = cli("export")
    assert code == 1 and "'k1' have no value" in err
    assert not (cli.ws / "MEMORY.md").exists()


def test_a_run_paused_twice_then_finished_logs_one_entry(
    tmp_path: Path, workspace: Path, write_script: Any
) -> None:
    """Each end of a run logs its entry, a pause included; a run deferred twice then approved
    logs `goal` once, not three times: a resumed run's end replaces the entry its pause wrote
    that day, so the log reads one entry with the final outcome."""
    write = {"name": "write_file", "arguments": {"path": "n.py", "content": "print(1)\n"}}
    script = write_script([{"text": "writing", "tool_calls": [write]}, {"text": "done"}])
    store = ("--store", str(tmp_path / "store.db"))
    run = io_tui(
        "run", "make n", "-w", str(workspace), "--provider", f"scripted:{script}",
        "--approve", "defer", *store,
    )  # fmt: skip
    assert run.returncode == 3, run.stderr  # paused: awaiting approval
    again = io_tui("resume", "1", "--approve", "defer", *store)
    assert again.returncode == 3, again.stderr
    done = io_tui("resume", "1", "--approve", "all", *store)
    assert done.returncode == 0, done.stderr
    logged = io_tui("memory", "log", "--json", "--workspace", str(workspace), *store)
    assert logged.returncode == 0, logged.stderr
    lines = [(x["run_id"], x["field"], x["text"]) for x in json.loads(logged.stdout)]
    assert [field for _, field, _ in lines] == ["goal", "outcome", "files", "decision"], lines
    assert lines[0] == (1, "goal", "make n")
    assert lines[1][2].startswith("finished after 2 steps")
    assert lines[2:] == [(1, "files", "n.py"), (1, "decision", "approve approval 1: write n.py")]
    exported = io_tui("memory", "export", "--workspace", str(workspace), *store)
    assert exported.returncode == 0, exported.stderr
    (day,) = (workspace / ".io-tui/memory").glob("*.md")
    assert day.read_text().count("## run 1 ·") == 1
