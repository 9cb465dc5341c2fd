"""A failed run says why: in its row, its ``run_finished`` event, ``run --json``, ``io-tui trace``
and the TUI's run header, for each way the provider can fail (a real 127.0.0.1 server)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from pathlib import Path

import pytest
from replay_server import ReplayServer, Reply, json_reply

from io_tui.core import Store
from io_tui.ui.state import RunView
from io_tui.ui.widgets.transcript import status_line

OVERFLOW = {
    "error": {"message": "maximum context length exceeded", "code": "context_length_exceeded"}
}
CASES = {
    # case: (replies, what the reason says, the run's outcome)
    "transport": (None, "transport", "failed"),
    "timeout": ([Reply(action="hang")] * 3, "timeout", "failed"),
    "overflow": ([json_reply(400, OVERFLOW)] * 6, "context_overflow", "state_not_preserved"),
    "garbage": ([Reply(body=b"<html>hello</html>" * 20, sse=False)] * 3, "malformed", "failed"),
}


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def io_tui(*args: str) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {
        "OPENAI_COMPATIBLE_API_KEY": "sk-test",
        "IO_TUI_MAX_RETRIES": "0",
        "IO_TUI_REQUEST_TIMEOUT_S": "1",
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "io_tui", *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("case", CASES)
async def test_a_failed_run_records_why_everywhere(case, tmp_path, workspace):
    replies, reason, outcome = CASES[case]
    server = ReplayServer()
    await server.start()
    base_url = server.base_url if replies else f"http://127.0.0.1:{_closed_port()}"
    server.add(*(replies or []))
    store_path = tmp_path / "store.db"
    store = ("--store", str(store_path))
    try:
        code, out, err = await io_tui(
            "run", "find the bug", "--workspace", str(workspace), "--provider",
            "openai-compatible", "--base-url", f"{base_url}/v1", "--model", "m", "--json", *store,
        )  # fmt: skip
    finally:
        await server.stop()
    assert code == 1, err + out[-2000:]
    assert "Traceback" not in err
    lines = [json.loads(line) for line in out.splitlines()]
    result = lines[-1]
    assert (result["status"], result["outcome"]) == ("failed", outcome)
    error = result["error"]
    assert error and reason in error, result
    [finished] = [e for e in lines if e.get("kind") == "run_finished"]
    assert finished["detail"]["error"] == error

    code, out, err = await io_tui("trace", "1", "--json", *store)
    trace = json.loads(out)
    assert trace["run"]["error"] == error
    assert [e["detail"]["error"] for e in trace["events"] if e["kind"] == "run_finished"] == [error]
    code, out, err = await io_tui("trace", "1", *store)
    assert f"error: {error}" in out.splitlines()

    async with await Store.open(Path(store_path), create=False) as opened:
        row = await opened.runs.get(1)
    assert row is not None and row.error == error
    assert status_line(RunView.from_row(row)).endswith(f": {error}")  # the TUI's run header
