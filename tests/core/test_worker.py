"""The harness worker process, spoken to over its pipes as the app speaks to it (no Textual)."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from cli_process import io_tui
from mcp_support import server_script_args
from waits import until

from io_tui.core.authority.policy import Policy
from io_tui.core.contract import contract_to_json
from io_tui.core.hosts.process.protocol import LineBuffer, encode
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store
from io_tui.demo import demo_run, make_workspace

EDIT = {
    "text": "Fixing.",
    "tool_calls": [
        {"name": "write_file", "arguments": {"path": "a.txt", "content": "fixed\n"}},
    ],
}


class Worker:
    """A real ``python -m io_tui.core.hosts.process`` with helpers to send orders and await replies."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines = LineBuffer()
        self.received: list[dict[str, Any]] = []

    @classmethod
    async def start(cls, store: Path | str, settings: dict[str, Any] | None = None) -> Worker:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "io_tui.core.hosts.process",
            "--store",
            str(store),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        worker = cls(process)
        # its runs wait for their MCP servers however loaded the machine is
        hello = dict(settings or {})
        hello["mcp"] = {"ready_wait_s": 120, **hello.get("mcp", {})}
        await worker.send({"op": "hello", "settings": hello})
        return worker

    async def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.process.stdin is not None
        data = message if isinstance(message, bytes) else encode(message)
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def until(self, kind: str, limit: float = 30.0) -> dict[str, Any]:
        """The next message of ``kind`` (everything read on the way is kept in ``received``)."""
        assert self.process.stdout is not None
        async with asyncio.timeout(limit):
            while True:
                for message in self.received:
                    if message.get("t") == kind and not message.get("_seen"):
                        message["_seen"] = True
                        return message
                chunk = await self.process.stdout.read(1 << 16)
                if not chunk:
                    raise AssertionError(f"worker exited before {kind!r}")
                self.received.extend(self.lines.feed(chunk))

    async def close(self) -> tuple[int, str]:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        assert self.process.stdout is not None
        rest = await self.process.stdout.read()
        self.received.extend(self.lines.feed(rest))
        stderr = (await self.process.stderr.read()).decode()
        return await self.process.wait(), stderr


def script(tmp_path: Path, turns: list[dict[str, Any]]) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": turns}))
    return f"scripted:{path}"


def request(tmp_path: Path, provider: str) -> dict[str, Any]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "a.txt").write_text("broken\n")
    return {"task": "fix a.txt", "workspace": str(workspace), "provider": provider}


async def test_a_run_asks_the_app_and_goes_on_with_its_answer(
    tmp_path: Path, store_on_both: Path | str
) -> None:
    """On a SQLite file and on PostgreSQL: the worker process opens the store the app names."""
    worker = await Worker.start(store_on_both)
    turns = [EDIT, {"text": "done"}]
    await worker.send(
        {"op": "start", "tag": "t1", "request": request(tmp_path, script(tmp_path, turns))}
    )
    started = await worker.until("started")
    assert started["tag"] == "t1"
    ask = await worker.until("ask")
    assert ask["request"]["tool"] == "write_file" and ask["request"]["run_id"] == started["run_id"]
    await worker.send(
        {"op": "answer", "approval_id": ask["request"]["id"], "decision": {"kind": "approve"}}
    )
    ended = await worker.until("ended")
    assert ended["result"]["status"] == "finished"
    assert (tmp_path / "ws" / "a.txt").read_text() == "fixed\n"
    kinds = [m["e"]["kind"] for m in worker.received if m.get("t") == "event"]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished"
    assert "approval_decided" in kinds
    code, _ = await worker.close()
    assert code == 0


async def test_the_demo_runs_from_the_parts_the_app_sends(tmp_path: Path) -> None:
    """The worker knows nothing of the demo: the app sends its contract, provider and policy."""
    contract, provider, policy = demo_run(make_workspace(tmp_path))
    worker = await Worker.start(tmp_path / "store.db")
    parts = {
        "contract": contract_to_json(contract),
        "provider": provider.describe(),
        "policy": policy.to_json(),
    }
    await worker.send({"op": "run", "tag": "d1", **parts, "approve": "all"})
    started = await worker.until("started")
    ended = await worker.until("ended")
    assert (started["tag"], ended["result"]["outcome"]) == ("d1", "success")
    unknown = {**parts, "provider": {"kind": "carrier-pigeon"}}
    await worker.send({"op": "run", "tag": "d2", **unknown})
    failed = await worker.until("failed")
    assert failed["tag"] == "d2" and "carrier-pigeon" in failed["error"]
    code, _ = await worker.close()
    assert code == 0
    async with await Store.open(tmp_path / "store.db") as store:
        row = await store.runs.get(started["run_id"])
    assert row is not None
    assert Policy.from_json(row.policy) == policy and row.goal == contract.goal


async def test_closing_stdin_pauses_an_asking_run_and_exits(tmp_path: Path) -> None:
    store_path = tmp_path / "store.db"
    worker = await Worker.start(store_path)
    turns = [EDIT, {"text": "done"}]
    await worker.send(
        {"op": "start", "tag": "t1", "request": request(tmp_path, script(tmp_path, turns))}
    )
    await worker.until("ask")
    code, _ = await worker.close()
    assert code == 0
    ended = [m for m in worker.received if m.get("t") == "ended"]
    assert ended[0]["result"]["outcome"] == "awaiting_approval"
    async with await Store.open(store_path) as store:
        assert len(await store.approvals.pending()) == 1


async def test_a_paused_run_is_decided_and_resumed_in_the_worker(tmp_path: Path) -> None:
    store_path = tmp_path / "store.db"
    worker = await Worker.start(store_path)
    turns = [EDIT, {"text": "done"}]
    spec = request(tmp_path, script(tmp_path, turns))
    await worker.send({"op": "start", "tag": "t1", "request": spec, "approve": "defer"})
    paused = await worker.until("ended")
    assert paused["result"]["status"] == "paused"
    async with await Store.open(store_path) as store:
        [pending] = await store.approvals.pending()
    await worker.send(
        {
            "op": "decide",
            "tag": "t2",
            "approval_id": pending.request.id,
            "decision": {"kind": "approve"},
        }
    )
    resumed = await worker.until("ended")
    assert resumed["tag"] == "t2" and resumed["result"]["status"] == "finished"
    await worker.send(
        {"op": "decide", "tag": "t3", "approval_id": 99, "decision": {"kind": "deny"}}
    )
    failed = await worker.until("failed")
    assert failed["tag"] == "t3" and "99" in failed["error"]
    await worker.close()


async def test_cancel_ends_a_run_cancelled(tmp_path: Path) -> None:
    store_path = tmp_path / "store.db"
    worker = await Worker.start(store_path)
    argv = [sys.executable, "-c", "open('running', 'w').close(); import time; time.sleep(60)"]
    turns = [{"tool_calls": [{"name": "run_command", "arguments": {"argv": argv}}]}]
    spec = request(tmp_path, script(tmp_path, turns))
    await worker.send({"op": "start", "tag": "t1", "request": spec, "approve": "all"})
    started = await worker.until("started")
    await until((tmp_path / "ws" / "running").exists, "the run's command to start")
    await worker.send({"op": "cancel", "run_id": started["run_id"]})
    ended = await worker.until("ended", limit=10)
    assert ended["result"] is None
    await worker.close()
    async with await Store.open(store_path) as store:
        row = await store.runs.get(started["run_id"])
    assert row is not None and row.status == "cancelled"


async def test_bad_orders_are_reported_on_stderr_and_the_worker_goes_on(tmp_path: Path) -> None:
    worker = await Worker.start(tmp_path / "store.db")
    await worker.send(b"this is not json\n")
    await worker.send({"op": "launch-missiles"})
    await worker.send({"op": "start", "tag": "t1"})  # no request
    await worker.send(
        {"op": "start", "tag": "t2", "request": request(tmp_path, "scripted:/no/such.json")}
    )
    failed = await worker.until("failed")
    assert failed["tag"] == "t2" and "script not found" in failed["error"]
    code, stderr = await worker.close()
    assert code == 0
    assert "unknown op 'launch-missiles'" in stderr
    assert "bad command" in stderr and "garbage" in stderr


async def test_an_unusable_store_exits_with_a_message(tmp_path: Path) -> None:
    bad = tmp_path / "store.db"
    bad.write_text("not a database, just text that is long enough to be read as a header")
    worker = await Worker.start(bad)
    code, stderr = await worker.close()
    assert code == 2 and "io-tui worker:" in stderr


async def test_a_damaged_page_met_by_a_run_ends_the_worker_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Damage the open's check did not see (it came later) met by a run's statement: no
    traceback, no ``failed`` per run, nothing more written; the worker stops serving, and its
    process ends with ``EXIT_STORE_DAMAGED`` and the one line (``__main__``)."""
    from damaged_store import damage_table

    from io_tui.core.hosts.process.server import WorkerServer
    from io_tui.core.store import StoreDamaged

    path = tmp_path / "store.db"
    async with await Store.open(path) as store:
        await store.notes.set("k", "v", "global", None)
    damage_table(path, "events")
    sent: list[bytes] = []
    orders = asyncio.StreamReader()  # never at EOF: only the damage ends the serving
    orders.feed_data(encode({"op": "start", "tag": "t1", "request": request(
        tmp_path, script(tmp_path, [{"text": "done"}])
    )}))  # fmt: skip
    async with await Store.open(path) as store:  # no check: as if damaged since
        server = WorkerServer(store, sent.append)
        await asyncio.wait_for(server.serve(orders), 60)
    assert isinstance(server.damaged, StoreDamaged) and "is damaged" in str(server.damaged)
    kinds = [message["t"] for message in LineBuffer().feed(b"".join(sent))]
    assert "failed" not in kinds and "ended" not in kinds
    assert "Traceback" not in capsys.readouterr().err
    with closing(sqlite3.connect(path)) as conn:  # the run as the damage left it: no end written
        assert conn.execute("SELECT status FROM runs").fetchall() == [("running",)]


async def test_runs_get_the_settings_mcp_servers_and_a_broken_one_is_a_notice(
    tmp_path: Path,
) -> None:
    servers = {
        "t": {"command": sys.executable, "args": server_script_args()},
        "gone": {"command": "io-tui-no-such-mcp-server"},
    }
    worker = await Worker.start(tmp_path / "store.db", {"mcp": {"servers": servers}})
    turns = [
        {"tool_calls": [{"name": "mcp__t__echo", "arguments": {"message": "over the pipe"}}]},
        {"text": "done"},
    ]
    spec = request(tmp_path, script(tmp_path, turns))
    await worker.send({"op": "start", "tag": "t1", "request": spec, "approve": "all"})
    notice = await worker.until("notice")
    assert "MCP server 'gone' failed to start" in notice["text"]
    ended = await worker.until("ended")
    assert ended["result"]["status"] == "finished"
    observed = [
        m["e"]["detail"]
        for m in worker.received
        if m.get("t") == "event" and m["e"]["kind"] == "observation"
    ]
    assert observed[0]["name"] == "mcp__t__echo" and not observed[0]["is_error"]
    async with await Store.open(tmp_path / "store.db") as store:
        trace = await build_trace(store, ended["result"]["run_id"])
    assert trace["steps"][0]["observations"][0]["text"].endswith("]\necho: over the pipe")
    code, _ = await worker.close()
    assert code == 0


def test_line_buffer_joins_split_lines_and_flags_garbage() -> None:
    lines = LineBuffer()
    assert lines.feed(b'{"t":"ev') == []
    assert lines.feed(b'ent","n":1}\n[1,2]\n\n{"t":') == [
        {"t": "event", "n": 1},
        {"t": "garbage", "line": "[1,2]"},
    ]
    assert lines.feed(b'"x"}\n') == [{"t": "x"}]


@pytest.mark.parametrize("message", [{"t": "event", "text": "é ✓"}, {"t": "x", "n": 10**20}])
def test_encode_is_one_line_that_decodes_back(message: dict[str, Any]) -> None:
    data = encode(message)
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    assert LineBuffer().feed(data) == [message]


def write_user_mcp_json(name: str) -> None:
    user_dir = Path(os.environ["IO_TUI_CONFIG_DIR"])
    user_dir.mkdir(parents=True, exist_ok=True)
    entry = {"command": sys.executable, "args": server_script_args()}
    (user_dir / "mcp.json").write_text(json.dumps({"mcpServers": {name: entry}}))


async def test_the_worker_also_starts_the_users_mcp_json_servers(tmp_path: Path) -> None:
    write_user_mcp_json("mine")
    worker = await Worker.start(tmp_path / "store.db")
    turns = [
        {"tool_calls": [{"name": "mcp__mine__echo", "arguments": {"message": "from mcp.json"}}]},
        {"text": "done"},
    ]
    await worker.send(
        {"op": "start", "tag": "t1", "request": request(tmp_path, script(tmp_path, turns)),
         "approve": "all"}
    )  # fmt: skip
    ended = await worker.until("ended")
    async with await Store.open(tmp_path / "store.db") as store:
        trace = await build_trace(store, ended["result"]["run_id"])
    assert trace["steps"][0]["observations"][0]["text"].endswith("]\necho: from mcp.json")
    code, _ = await worker.close()
    assert code == 0


async def test_a_run_is_decided_with_the_mcp_servers_it_started_with(tmp_path: Path) -> None:
    """Started by one worker with an MCP server, decided by another whose settings have none
    (the app restarted with another config): the run's own server starts for the resume."""
    store_path = tmp_path / "store.db"
    servers = {"t": {"command": sys.executable, "args": server_script_args()}}
    first = await Worker.start(store_path, {"mcp": {"servers": servers}, "max_retries": 2})
    turns = [
        {"tool_calls": [{"name": "mcp__t__echo", "arguments": {"message": "after a restart"}}]},
        {"text": "done"},
    ]
    spec = request(tmp_path, script(tmp_path, turns))
    await first.send({"op": "start", "tag": "t1", "request": spec, "approve": "defer"})
    paused = await first.until("ended")
    assert paused["result"]["status"] == "paused"
    await first.close()

    second = await Worker.start(store_path)
    async with await Store.open(store_path) as store:
        [pending] = await store.approvals.pending()
    order = {"op": "decide", "tag": "t2", "approval_id": pending.request.id}
    await second.send({**order, "decision": {"kind": "approve"}})
    notice = await second.until("notice")
    run_id = paused["result"]["run_id"]
    assert notice["text"] == f"resuming run {run_id} with the MCP servers it started with: t"
    resumed = await second.until("ended")
    assert resumed["result"]["status"] == "finished"
    await second.close()
    async with await Store.open(store_path) as store:
        trace = await build_trace(store, run_id)
    assert trace["steps"][0]["observations"][0]["text"].endswith("]\necho: after a restart")
    settings = trace["run"]["origin"]["settings"]
    assert (settings["provider"], settings["max_retries"]) == (spec["provider"], 2)


async def test_a_run_gets_its_workspaces_mcp_json_and_a_wrong_one_fails_as_the_cli_does(
    tmp_path: Path,
) -> None:
    """The app's runs (through the worker) read the workspace's ``.mcp.json`` as ``io-tui run``
    does: its servers start for the run, announced; a file of the wrong shape fails the start
    with the line the CLI prints."""
    worker = await Worker.start(tmp_path / "store.db")
    spec = request(tmp_path, script(tmp_path, []))
    workspace = Path(spec["workspace"])
    entry = {"command": sys.executable, "args": server_script_args()}
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": entry}}))
    turns = [
        {"tool_calls": [{"name": "mcp__proj__echo", "arguments": {"message": "from .mcp.json"}}]},
        {"text": "done"},
    ]
    spec["provider"] = script(tmp_path, turns)
    await worker.send({"op": "start", "tag": "t0", "request": spec, "approve": "all"})
    untrusted = await worker.until("notice")  # not started before the operator trusts it
    assert untrusted["text"].startswith(f"{workspace / '.mcp.json'} is not trusted (digest ")
    first = (await worker.until("ended"))["result"]["run_id"]
    async with await Store.open(tmp_path / "store.db") as store:
        without = await build_trace(store, first)
    assert "echo: from .mcp.json" not in without["steps"][0]["observations"][0]["text"]
    trusted = io_tui("mcp", "trust", "-w", str(workspace), "--store", str(tmp_path / "store.db"))
    assert trusted.returncode == 0, trusted.stderr
    await worker.send({"op": "start", "tag": "t1", "request": spec, "approve": "all"})
    notice = await worker.until("notice")
    assert notice["text"].startswith(
        f"MCP servers from {workspace / '.mcp.json'}: proj ({sys.executable} "
    )
    ended = await worker.until("ended")
    assert ended["result"]["status"] == "finished"
    async with await Store.open(tmp_path / "store.db") as store:
        trace = await build_trace(store, ended["result"]["run_id"])
    assert trace["steps"][0]["observations"][0]["text"].endswith("]\necho: from .mcp.json")
    assert list(trace["run"]["origin"]["settings"]["mcp"]["servers"]) == ["proj"]

    (workspace / ".mcp.json").write_text(json.dumps({"servers": {"x": {"command": "a"}}}))
    await worker.send({"op": "start", "tag": "t2", "request": spec, "approve": "all"})
    failed = await worker.until("failed")
    cli = io_tui("run", "hi", "-w", str(workspace), "--provider", spec["provider"])
    assert cli.returncode == 2
    assert f"io-tui: {failed['error']}\n" == cli.stderr
    assert failed["error"].startswith(f"{workspace / '.mcp.json'}: no MCP servers found")
    code, _ = await worker.close()
    assert code == 0
