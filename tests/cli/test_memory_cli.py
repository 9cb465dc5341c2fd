"""`io-tui memory ...`: the operator's commands against a real store file."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from io_tui.cli.memory import register
from io_tui.core.contract import MemoryLimits
from io_tui.core.store import Store


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="io-tui")
    register(parser.add_subparsers(dest="command"))
    return parser


class Cli:
    def __init__(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.db = tmp_path / "store.db"
        self.ws = tmp_path / "ws"
        self.ws.mkdir()
        self.capsys = capsys

    def __call__(self, *argv: str, ws: bool = True) -> tuple[int, str, str]:
        extra = ["--store", str(self.db)] + (["--workspace", str(self.ws)] if ws else [])
        args = _parser().parse_args(["memory", *argv, *extra])
        code = asyncio.run(args.handler(args))
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *argv: str, ws: bool = True) -> Any:
        code, out, err = self(*argv, "--json", ws=ws)
        assert code == 0, err
        return json.loads(out)


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    return Cli(tmp_path, capsys)


def test_set_get_list_json(cli: Cli) -> None:
    assert cli("set", "test-cmd", "pytest -q")[0] == 0
    assert cli.json("get", "test-cmd")["value"] == "pytest -q"
    (row,) = cli.json("list")
    assert set(row) >= {
        "key",
        "value",
        "scope",
        "run_id",
        "step",
        "written_at",
        "pinned",
        "recalls",
        "last_recalled",
    }
    assert (row["key"], row["scope"], row["run_id"], row["pinned"]) == (
        "test-cmd",
        "workspace",
        None,
        False,
    )
    assert row["workspace"] == str(cli.ws.resolve())


def test_plain_list_is_a_table_with_provenance(cli: Cli) -> None:
    async def agent_note() -> None:
        async with await Store.open(cli.db) as store:
            await store.notes.write(
                key="build",
                value="make build\nthen make test",
                scope="workspace",
                workspace=str(cli.ws.resolve()),
                run_id=3,
                step=2,
                limits=MemoryLimits(),
            )

    asyncio.run(agent_note())
    cli("set", "owner", "alice")
    cli("pin", "owner")
    code, out, _ = cli("list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"workspace {cli.ws.resolve()}: 2 notes, 30 chars"
    assert lines[1].split() == [
        "KEY", "TYPE", "STATE", "WRITTEN", "BY", "WRITTEN", "AT", "PIN", "RECALLS", "VALUE"
    ]  # fmt: skip
    assert "model inference  active  run 3 step 2" in lines[2]
    assert lines[2].endswith("make build…")
    assert "verified fact" in lines[3] and "operator" in lines[3] and "yes" in lines[3]
    assert lines[3].endswith("alice")


def test_scopes_are_separate(cli: Cli) -> None:
    cli("set", "tz", "UTC", "--global", ws=False)
    assert cli.json("list") == []
    (row,) = cli.json("list", "--global", ws=False)
    assert (row["key"], row["scope"], row["workspace"]) == ("tz", "global", "")
    assert {r["key"] for r in cli.json("list", "--all", ws=False)} == {"tz"}


def test_workspace_defaults_to_the_resolved_cwd(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(cli.ws)
    cli("set", "here", "yes", ws=False)
    (row,) = cli.json("list")
    assert row["workspace"] == str(cli.ws.resolve())


def test_pin_unpin_delete_and_not_found(cli: Cli) -> None:
    cli("set", "k", "v")
    assert cli.json("pin", "k")["ok"]
    assert cli.json("get", "k")["pinned"] is True
    cli("unpin", "k")
    assert cli.json("get", "k")["pinned"] is False
    assert cli("delete", "k")[0] == 0
    for action in ("get", "delete", "pin", "unpin"):
        code, _, err = cli(action, "k")
        assert code == 1 and "no note 'k'" in err


def test_clear_keeps_pinned_unless_asked(cli: Cli) -> None:
    for key in ("a", "b", "c"):
        cli("set", key, key)
    cli("pin", "b")
    assert cli.json("clear") == {"cleared": 2, "kept_pinned": 1}
    code, out, _ = cli("clear", "--include-pinned")
    assert code == 0 and out.startswith("cleared 1 note from")
    assert cli.json("list") == []


def test_set_reports_truncation_and_eviction(cli: Cli) -> None:
    result = cli.json("set", "long", "é" * 2_500)
    assert result["truncated_from"] == 2_500
    assert len(result["note"]["value"]) == 2_000
    for i in range(7):
        cli("set", f"big{i}", str(i) * 2_000)
    assert cli.json("set", "last", "x")["evicted"] == ["long"]


def test_set_reads_stdin_for_dash(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("from stdin\n"))
    cli("set", "piped", "-")
    assert cli.json("get", "piped")["value"] == "from stdin\n"


def test_usage_errors_exit_2(cli: Cli, tmp_path: Path) -> None:
    code, _, err = cli("set", "   ", "v")
    assert code == 2 and "key must not be empty" in err
    (tmp_path / "not-a-db").write_text("hello, not sqlite" * 100)
    args = _parser().parse_args(["memory", "list", "--store", str(tmp_path / "not-a-db")])
    assert asyncio.run(args.handler(args)) == 2
    with pytest.raises(SystemExit):
        _parser().parse_args(["memory", "list", "--global", "--workspace", "x"])


def test_operator_edits_are_in_the_audit_trail(cli: Cli) -> None:
    cli("set", "k", "v")
    cli("delete", "k")

    async def audit() -> list[dict[str, Any]]:
        async with await Store.open(cli.db) as store:
            return [e.detail for e in await store.trace.events(0)]

    assert [(d["op"], d["key"]) for d in asyncio.run(audit())] == [("set", "k"), ("delete", "k")]


def test_wired_into_the_main_command(cli: Cli) -> None:
    from io_tui.cli import main

    code = main(["--store", str(cli.db), "memory", "set", "k", "v", "--workspace", str(cli.ws)])
    assert code == 0
    cli.capsys.readouterr()
    assert (
        main(["--store", str(cli.db), "memory", "list", "--json", "--workspace", str(cli.ws)]) == 0
    )
    assert [r["key"] for r in json.loads(cli.capsys.readouterr().out)] == ["k"]
