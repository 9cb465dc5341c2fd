"""``io-tui whatif`` as a user meets it: a real process sends a recorded request of a scripted
run, changed, to a real HTTP server replaying recorded OpenAI streams; the answers are shown
beside the recorded one, stored, listed and opened again; nothing is executed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from cli_process import io_tui, user_env
from replay_server import ReplayServer, sse_reply

WIRE = Path(__file__).resolve().parents[1] / "fixtures" / "wire" / "openai_chat"


def read(i: int) -> dict:
    args = {"path": f"f{i}.txt", "offset": 1, "limit": 40}
    return {"tool_calls": [{"id": f"r{i}", "name": "read_file", "arguments": args}]}


async def test_whatif_shows_the_answers_side_by_side_and_keeps_them(
    tmp_path: Path, write_script
) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for i in range(4):
        (ws / f"f{i}.txt").write_text("\n".join(f"line {j} of file {i}" for j in range(100)))
    store = ("--store", str(tmp_path / "store.db"))
    script = write_script([read(i) for i in range(4)] + [{"text": "done"}])
    run = io_tui("run", "read", "-w", str(ws), "--provider", f"scripted:{script}",
                 "--context-max-tokens", "1000", *store)  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr

    server = ReplayServer()
    await server.start()
    server.add(sse_reply((WIRE / "tool_call_single_strict.sse").read_bytes()))
    server.add(*[sse_reply((WIRE / "text_plain.sse").read_bytes())] * 4)
    # wide enough that the side-by-side columns never wrap a call (the width a worker inherits
    # varies: COLUMNS, or a terminal size of its own)
    env = user_env({"OPENAI_API_KEY": "sk-test-whatif", "COLUMNS": "240"})
    remote = ("--preset", "openai", "--model", "gpt-4o", "--base-url", server.base_url + "/v1")
    try:
        probe = await asyncio.to_thread(
            io_tui, "whatif", "1", "4", "--restore", "r0", *remote, *store, env=env
        )
        batch = await asyncio.to_thread(
            io_tui, "whatif", "1", "4", "--drop", "r2", "--repeat", "2", "--json", *remote,
            *store, env=env,
        )  # fmt: skip
    finally:
        await server.stop()
    assert probe.returncode == 0, probe.stdout + probe.stderr
    out = probe.stdout
    assert "what if, run 1 step 4 (probe 1" in out and "nothing was executed" in out
    assert "changes: restored r0 (was elided" in out
    assert "recorded" in out and "what if (probe 1)" in out
    assert '→ read_file {"path": "f3.txt", "offset": 1, "limit": 40}' in out  # recorded
    assert '→ get_weather {"city": "San Francisco", "state": "CA"}' in out  # the probe's
    assert not (ws / "San Francisco").exists()

    assert batch.returncode == 0, batch.stdout + batch.stderr
    tallies = json.loads(batch.stdout)["variants"]
    assert [(t["variant"], t["answers"], t["first_tool_differs"]) for t in tallies] == [
        ("as recorded", 2, 2),
        ("what if", 2, 2),
    ]

    listed = io_tui("whatif", "1", "--list", *store)
    assert listed.returncode == 0
    assert len(listed.stdout.splitlines()) == 5
    assert "get_weather" in listed.stdout.splitlines()[0]
    shown = io_tui("whatif", "1", "--show", "1", "--json", *store)
    again = json.loads(shown.stdout)
    assert again["probe"]["changes"][1]["op"] == "restore"
    assert again["recorded"]["tool_calls"][0]["name"] == "read_file"
    trace = json.loads(io_tui("trace", "1", "--json", *store).stdout)
    assert [s["step"] for s in trace["steps"]] == [1, 2, 3, 4, 5]  # no step was added

    bad = io_tui("whatif", "1", "4", "--drop", "nope", *store)
    assert bad.returncode == 1
    assert bad.stdout.startswith("io-tui: call nope is not in this request to drop")
