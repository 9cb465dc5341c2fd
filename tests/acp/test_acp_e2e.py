"""``io-tui acp`` end to end: the protocol package's own client over a real subprocess, the
scripted provider, a real store file, and the store (as the cockpit reads it) checked after."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from acp import RequestError, text_block
from acp.schema import ClientCapabilities, EnvVariable, McpServerStdio
from acp_client import EditorClient, io_tui_acp
from cli_process import io_tui

from io_tui.core import Store

EDIT = {
    "name": "edit_file",
    "arguments": {"path": "src/app.py", "old": "return a", "new": "return x"},
}


async def test_an_edit_after_a_permission_request(workspace, write_script, store_path, tmp_path):
    script = write_script([{"text": "Fixing the return.", "tool_calls": [EDIT]}, {"text": "Done."}])
    client = EditorClient(answers=["approve"])
    stderr = tmp_path / "stderr.log"
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    async with io_tui_acp(client, *args, stderr=stderr) as conn:
        session = await conn.new_session(cwd=str(workspace))
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("fix it")])

    assert answer.stop_reason == "end_turn"
    run_id = answer.field_meta["io-tui"]["run_id"]
    assert answer.field_meta["io-tui"]["outcome"] == "finished"
    assert (workspace / "src" / "app.py").read_text() == "def parse(x):\n    return x\n"
    target = str(workspace / "src" / "app.py")
    assert client.writes == [target]  # through the client, which offers writes
    assert target in client.reads  # edit_file read the editor's buffer
    assert client.agent_text() == "Fixing the return.Done."
    (started,) = client.of_kind("tool_call")
    assert started.tool_call_id == f"{run_id}:call_1_1"
    assert started.kind == "edit"
    assert started.locations[0].path == target
    (diff,) = started.content
    assert (diff.old_text, diff.new_text) == (
        "def parse(x):\n    return a\n",
        "def parse(x):\n    return x\n",
    )
    (call, options) = client.permissions[0]
    assert call.tool_call_id == started.tool_call_id
    kinds = {o.option_id: o.kind for o in options}
    assert kinds == {
        "approve": "allow_once",
        "remember": "allow_always",
        "remember-2": "allow_always",
        "remember-3": "allow_always",
        "deny": "reject_once",
        "deny-always": "reject_always",
    }
    # a client that chooses by kind takes its first option: exactly what was asked
    first: dict[str, str] = {}
    for option in options:
        first.setdefault(option.kind, option.option_id)
    assert first == {
        "allow_once": "approve",
        "allow_always": "remember",
        "reject_once": "deny",
        "reject_always": "deny-always",
    }
    # "Always allow" grants exactly the file asked; the folder and extension are wider choices,
    # each saying what it allows and what it would have allowed before
    names = {o.option_id: o.name for o in options}
    assert names["remember"] == "Always allow write src/app.py"
    assert names["remember-2"] == (
        "Always allow write src/* (every file under src/ · no earlier requests)"
    )
    assert names["remember-3"] == (
        "Always allow write *.py (every .py file, in any folder · no earlier requests)"
    )
    assert names["deny-always"] == "Always reject write src/app.py"
    (completed,) = client.tool_updates("completed")
    assert completed.tool_call_id == started.tool_call_id
    assert "edited src/app.py" in completed.content[0].content.text
    assert client.of_kind("session_info_update")[0].title == "fix it"
    usage = client.of_kind("usage_update")
    assert usage and all(0 < u.used <= u.size for u in usage), "a usage_update per request"
    assert "Traceback" not in stderr.read_text()

    # the cockpit's view: an ordinary run in the same store, its decision and its manifest
    async with await Store.open(store_path) as store:
        row = await store.runs.get(run_id)
        assert row is not None and row.status == "finished"
        assert row.origin["session"] == session.session_id
        (approval,) = await store.approvals.for_run(run_id)
        assert approval.decision.kind.value == "approve"
        assert approval.decision.decided_by == "acp: Test Editor"
    trace = io_tui("trace", str(run_id), "--json", "--store", str(store_path))
    assert trace.returncode == 0, trace.stderr
    requests = json.loads(trace.stdout)["requests"]
    assert len(requests) == 2
    assert {s["name"] for s in requests[0]["sections"]} >= {"system", "tools"}
    assert any(e["target"] == "src/app.py" for e in requests[1]["entries"])


async def test_a_rejected_edit_and_always_reject(workspace, write_script, store_path):
    script = write_script(
        [
            {"text": "Editing.", "tool_calls": [EDIT]},
            {"text": "Trying again.", "tool_calls": [{**EDIT, "id": "again"}]},
            {"text": "Once more.", "tool_calls": [{**EDIT, "id": "third"}]},
            {"text": "I will leave it."},
        ]
    )
    client = EditorClient(answers=["deny", "deny-always"])
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    async with io_tui_acp(client, *args) as conn:
        session = await conn.new_session(cwd=str(workspace))
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("fix it")])

    assert answer.stop_reason == "end_turn"
    assert (workspace / "src" / "app.py").read_text() == "def parse(x):\n    return a\n"
    assert client.writes == []
    failed = client.tool_updates("failed")
    assert [f.tool_call_id for f in failed] == ["1:call_1_1", "1:again", "1:third"]  # one each
    assert "denied write src/app.py: rejected in Test Editor" in failed[0].content[0].content.text
    # the rule "always reject" made holds in the same run at once: the third edit is not asked
    assert len(client.permissions) == 2
    assert "Refused by policy: write src/app.py" in failed[2].content[0].content.text
    async with await Store.open(store_path) as store:
        run_id = answer.field_meta["io-tui"]["run_id"]
        decisions = [a.decision.kind.value for a in await store.approvals.for_run(run_id)]
        assert decisions == ["deny", "deny"]
        (rule,) = await store.rules.list()
        assert (rule.act.value, rule.effect.value, rule.pattern) == (
            "write",
            "deny",
            "src/app.py",
        )


def _write(path: str, call_id: str) -> dict[str, object]:
    return {"id": call_id, "name": "write_file", "arguments": {"path": path, "content": "x\n"}}


async def test_always_allow_grants_the_exact_path_and_a_wider_choice_the_folder(
    workspace, write_script, store_path
):
    """ "Always allow" remembers exactly the file asked: the next write to another file in its
    folder asks again; choosing the folder there remembers the folder, and the third write is
    not asked."""
    script = write_script(
        [
            {"text": "One.", "tool_calls": [_write("src/one.py", "w1")]},
            {"text": "Two.", "tool_calls": [_write("src/two.py", "w2")]},
            {"text": "Three.", "tool_calls": [_write("src/three.py", "w3")]},
            {"text": "Done."},
        ]
    )
    client = EditorClient(answers=["remember", "remember-2"])
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    async with io_tui_acp(client, *args) as conn:
        session = await conn.new_session(cwd=str(workspace))
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("write")])

    assert answer.stop_reason == "end_turn"
    assert len(client.permissions) == 2  # the third write fell under the folder's rule
    _, second = client.permissions[1]
    names = {o.option_id: o.name for o in second}
    assert names["remember"] == "Always allow write src/two.py"
    assert names["remember-2"] == (
        "Always allow write src/* (every file under src/ · 1 of 1 earlier (1 run))"
    )
    assert all(
        (workspace / "src" / f).read_text() == "x\n" for f in ("one.py", "two.py", "three.py")
    )
    async with await Store.open(store_path) as store:
        rules = await store.rules.list()
    assert [(r.pattern, r.scope) for r in rules] == [
        ("src/one.py", "workspace"),
        ("src/*", "workspace"),
    ]


async def test_a_decision_made_in_the_cockpit_wins_over_the_open_permission_request(
    workspace, write_script, store_on_both
):
    """The editor leaves its dialog open; the cockpit (``io-tui decide``, another process)
    decides first. The agent hears it from the store (announced on PostgreSQL, polled on
    SQLite), withdraws the request and goes on with the cockpit's decision."""
    from io_tui.core import Decision, decide

    script = write_script([{"text": "Fixing.", "tool_calls": [EDIT]}, {"text": "Fixed now."}])
    args = ("--provider", f"scripted:{script}", "--store", str(store_on_both))
    client = EditorClient(answers=["hold"])
    async with io_tui_acp(client, *args) as conn:
        session = await conn.new_session(cwd=str(workspace))
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[text_block("fix it")])
        )
        await client.asked.wait()
        async with await Store.open(store_on_both) as store:
            (pending,) = await store.approvals.pending()
            await decide(store, pending.request.id, Decision.approve(decided_by="cockpit"))
        async with asyncio.timeout(60):
            answer = await prompt
        assert client.release is not None
        client.release.set_result("cancel")  # the request the agent withdrew

    assert answer.stop_reason == "end_turn"
    assert answer.field_meta["io-tui"]["outcome"] == "finished"
    assert (workspace / "src" / "app.py").read_text() == "def parse(x):\n    return x\n"
    async with await Store.open(store_on_both) as store:
        (record,) = await store.approvals.for_run(answer.field_meta["io-tui"]["run_id"])
    assert record.decision is not None and record.decision.decided_by == "cockpit"


async def test_cancel_during_an_ask_pauses_durably_then_load_resumes(
    workspace, write_script, store_path
):
    script = write_script([{"text": "Fixing.", "tool_calls": [EDIT]}, {"text": "Fixed now."}])
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    client = EditorClient(answers=["hold"])
    async with io_tui_acp(client, *args) as conn:
        session = await conn.new_session(cwd=str(workspace))
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[text_block("fix it")])
        )
        await client.asked.wait()
        await conn.cancel(session_id=session.session_id)
        answer = await prompt
        assert client.release is not None
        client.release.set_result("cancel")  # as the protocol asks of a client after a cancel

    assert answer.stop_reason == "cancelled"
    run_id = answer.field_meta["io-tui"]["run_id"]
    async with await Store.open(store_path) as store:
        row = await store.runs.get(run_id)
        assert (row.status, row.outcome) == ("paused", "awaiting_approval")
        (pending,) = await store.approvals.pending()  # in the cockpit's inbox
        assert (pending.request.run_id, pending.request.target) == (run_id, "src/app.py")

    # another process loads the session: its history is replayed, and a prompt resumes the run
    # with its ask put again
    again = EditorClient(answers=["approve"])
    async with io_tui_acp(again, *args) as conn:
        await conn.load_session(cwd=str(workspace), session_id=session.session_id)
        replayed = list(again.updates)
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("go ahead")])

    assert [u.content.text for u in replayed if u.session_update == "user_message_chunk"] == [
        "fix it"
    ]
    (call,) = [u for u in replayed if u.session_update == "tool_call"]
    assert (call.tool_call_id, call.status) == (f"{run_id}:call_1_1", "pending")
    assert "is paused, waiting for a decision" in "".join(
        u.content.text for u in replayed if u.session_update == "agent_message_chunk"
    )
    assert answer.stop_reason == "end_turn"
    assert answer.field_meta["io-tui"]["run_id"] == run_id
    assert answer.field_meta["io-tui"]["outcome"] == "finished"
    assert (workspace / "src" / "app.py").read_text() == "def parse(x):\n    return x\n"
    assert "Fixed now." in again.agent_text()
    async with await Store.open(store_path) as store:
        steps = await store.trace.steps(run_id)
        assert "go ahead" in [m for s in steps for m in s.operator_messages]


async def test_an_unanswered_ask_survives_its_process_dying(workspace, write_script, store_path):
    script = write_script([{"text": "Fixing.", "tool_calls": [EDIT]}, {"text": "Fixed now."}])
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    client = EditorClient(answers=["hold"])  # the editor is closed with its dialog open
    async with io_tui_acp(client, *args) as conn:
        session = await conn.new_session(cwd=str(workspace))
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[text_block("fix it")])
        )
        await client.asked.wait()
        assert client.process is not None
        client.process.kill()
        await client.process.wait()
        with pytest.raises(ConnectionError):
            await prompt
        assert client.release is not None
        client.release.set_result("cancel")

    again = EditorClient(answers=["approve"])
    # a client that offers no files or terminals: io-tui's own tools do the work
    async with io_tui_acp(again, *args, capabilities=ClientCapabilities()) as conn:
        await conn.load_session(cwd=str(workspace), session_id=session.session_id)
        replayed = "".join(
            u.content.text for u in again.updates if u.session_update == "agent_message_chunk"
        )
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("again")])

    assert "was interrupted; a prompt here resumes it" in replayed
    assert answer.stop_reason == "end_turn"
    assert len(again.permissions) == 1  # the same ask, put again
    assert (again.reads, again.writes) == ([], [])
    assert (workspace / "src" / "app.py").read_text() == "def parse(x):\n    return x\n"
    async with await Store.open(store_path) as store:
        (record,) = await store.approvals.for_run(answer.field_meta["io-tui"]["run_id"])
        assert record.decision is not None and record.decision.kind.value == "approve"


async def test_cancel_a_running_command_and_follow_up(
    workspace, write_script, store_path, tmp_path
):
    policy = tmp_path / "policy.toml"
    policy.write_text(
        '[[layers]]\nname = "t"\n[[layers.rules]]\nact = "exec"\neffect = "allow"\n'
        'pattern = "sleep*"\n'
    )
    script = write_script(
        [
            {"text": "Waiting.", "tool_calls": [{"name": "run_command", "arguments": {"argv": ["sleep", "60"]}}]},
            {"text": "Second prompt answered."},
        ]
    )  # fmt: skip
    args = ("--provider", f"scripted:{script}", "--store", str(store_path), "--policy", str(policy))
    client = EditorClient()
    async with io_tui_acp(client, *args) as conn:
        session = await conn.new_session(cwd=str(workspace))
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[text_block("wait")])
        )
        await client.terminal_started.wait()  # the command runs in the client's terminal
        await conn.cancel(session_id=session.session_id)
        first = await prompt
        second = await conn.prompt(session_id=session.session_id, prompt=[text_block("and now?")])

    assert first.stop_reason == "cancelled"
    (terminal,) = client.terminals.values()
    # released and killed with the run (its `sleep 60` would outlive the wait): reaped within
    # a few seconds, however loaded the machine
    assert await asyncio.wait_for(terminal.wait(), 10) < 0
    assert second.stop_reason == "end_turn"
    first_run, second_run = (
        first.field_meta["io-tui"]["run_id"],
        second.field_meta["io-tui"]["run_id"],
    )
    assert second_run != first_run
    async with await Store.open(store_path) as store:
        row = await store.runs.get(first_run)
        assert (row.status, row.error) == ("cancelled", "cancelled by the operator")
        follow_up = await store.runs.get(second_run)
        assert follow_up.seed_run_id == first_run
        assert follow_up.origin["session"] == session.session_id
    assert client.agent_text().endswith("Second prompt answered.")


async def test_a_client_that_goes_away_hands_its_run_back(workspace, write_script, store_path):
    sleep = {"name": "run_command", "arguments": {"argv": ["sleep", "60"]}}
    script = write_script([{"tool_calls": [sleep]}, {"text": "Slept."}])
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    client = EditorClient(answers=["approve"])
    async with io_tui_acp(client, *args) as conn:
        session = await conn.new_session(cwd=str(workspace))
        prompt = asyncio.ensure_future(
            conn.prompt(session_id=session.session_id, prompt=[text_block("sleep")])
        )
        await client.terminal_started.wait()
    # the editor closed: its process ended with the connection
    with pytest.raises(ConnectionError):
        await prompt
    async with await Store.open(store_path) as store:
        (run,) = await store.runs.of_session(session.session_id)
        assert (run.status, run.error) == ("interrupted", None)  # resumable, not cancelled


async def test_bad_requests_get_protocol_errors(workspace, write_script, store_path, tmp_path):
    script = write_script([{"text": "hi"}])
    client = EditorClient()
    stderr = tmp_path / "stderr.log"
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    async with io_tui_acp(client, *args, stderr=stderr) as conn:
        for cwd, says in (
            ("relative/dir", "absolute"),
            (str(workspace / "missing"), "does not exist"),
            (str(workspace / "README.md"), "not a directory"),
        ):
            with pytest.raises(RequestError) as bad:
                await conn.new_session(cwd=cwd)
            assert bad.value.code == -32602 and says in bad.value.data["details"]
        with pytest.raises(RequestError) as unknown:
            await conn.prompt(session_id="nope", prompt=[text_block("hi")])
        assert unknown.value.code == -32602 and "unknown session" in unknown.value.data["details"]
        with pytest.raises(RequestError) as not_found:
            await conn.load_session(cwd=str(workspace), session_id="io-tui-nope")
        assert not_found.value.code == -32002
        session = await conn.new_session(cwd=str(workspace))
        listed = await conn.list_sessions()
        assert listed.sessions == []  # a session is listed once a prompt started its first run
        await conn.prompt(session_id=session.session_id, prompt=[text_block("hello")])
        (info,) = (await conn.list_sessions(cwd=str(workspace))).sessions
        assert (info.session_id, info.title) == (session.session_id, "hello")
        with pytest.raises(RequestError) as elsewhere:
            await conn.load_session(cwd=str(tmp_path), session_id=session.session_id)
        assert elsewhere.value.code == -32602 and "works in" in elsewhere.value.data["details"]
    assert "Traceback" not in stderr.read_text()


async def test_the_clients_mcp_server_serves_the_session(workspace, write_script, store_path):
    clock = {"name": "mcp__time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}
    script = write_script([{"tool_calls": [clock]}, {"text": "It is late there."}])
    time_server = McpServerStdio(
        name="time",
        command=sys.executable,
        args=["-m", "mcp_server_time", "--local-timezone", "UTC"],
        env=[EnvVariable(name="TZ", value="UTC")],
    )
    client = EditorClient(answers=["approve"])  # an MCP call asks, as every exec does
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    async with io_tui_acp(client, *args) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[time_server])
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("time?")])

    assert answer.stop_reason == "end_turn"
    (started,) = client.of_kind("tool_call")
    assert (started.kind, started.title) == ("fetch", "mcp__time__get_current_time")
    (completed,) = client.tool_updates("completed")
    assert "Asia/Tokyo" in completed.content[0].content.text
    async with await Store.open(store_path) as store:
        row = await store.runs.get(answer.field_meta["io-tui"]["run_id"])
        # recorded secret-free, as every run's servers are: a literal env value by its name
        assert row.origin["settings"]["mcp"]["servers"]["time"]["env"] == {"TZ": "${TZ}"}


@pytest.mark.parametrize("forms", [True, False])
async def test_an_mcp_servers_form_is_the_clients_elicitation(
    workspace, write_script, store_path, forms
):
    """server-everything asks for a form mid-call: a client that offers forms gets ACP's own
    elicitation (tied to the session and the call) and its answer reaches the server; one that
    does not is not asked, and the form is declined, saying so."""
    from acp.schema import AcceptElicitationResponse, ElicitationCapabilities
    from acp_client import CAPABILITIES
    from mcp_support import server_everything_entry

    trigger = {"name": "mcp__everything__trigger-elicitation-request", "arguments": {}}
    script = write_script([{"tool_calls": [trigger]}, {"text": "Thanks."}])
    everything = McpServerStdio(
        name="everything", command="node", args=[str(server_everything_entry()), "stdio"], env=[]
    )
    client = EditorClient(answers=["approve"])  # the tool call itself asks
    client.form_answer = AcceptElicitationResponse(action="accept", content={"name": "Ada"})
    caps = CAPABILITIES.model_copy(
        update={"elicitation": ElicitationCapabilities.model_validate({"form": {}})}
        if forms
        else {}
    )
    args = ("--provider", f"scripted:{script}", "--store", str(store_path))
    async with io_tui_acp(client, *args, capabilities=caps) as conn:
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[everything])
        answer = await conn.prompt(session_id=session.session_id, prompt=[text_block("form?")])
    assert answer.stop_reason == "end_turn"
    (completed,) = client.tool_updates("completed")
    said = completed.content[0].content.text
    async with await Store.open(store_path) as store:
        run_id = answer.field_meta["io-tui"]["run_id"]
        (record,) = [
            r for r in await store.approvals.for_run(run_id)
            if r.request.target == "mcp__everything__elicitation"
        ]  # fmt: skip
    if forms:
        ((message, mode),) = client.forms
        assert message == "Please provide inputs for the following fields:"
        assert mode.session_id == session.session_id and mode.tool_call_id == completed.tool_call_id
        assert "name" in mode.requested_schema.properties
        assert "- Name: Ada" in said and record.performed["action"] == "accept"
    else:
        assert client.forms == [] and "declined" in said.lower()
        assert record.performed["reason"] == "Test Editor shows no forms (ACP elicitation)"


def test_malformed_json_rpc_gets_errors_and_stdout_stays_protocol(write_script, store_path):
    lines = [
        "this is not json",
        "[1, 2, 3]",
        '{"jsonrpc": "2.0", "id": 7}',
        '{"jsonrpc": "1.0", "id": 8, "method": "initialize"}',
        '{"jsonrpc": "2.0", "id": 9, "method": "no/such/method", "params": {}}',
        '{"jsonrpc": "2.0", "id": 10, "method": "session/new", "params": {"mcpServers": []}}',
        '{"jsonrpc": "2.0", "id": 11, "method": "initialize", "params": {"protocolVersion": 1}}',
    ]
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "io_tui",
            "acp",
            "--store",
            str(store_path),
            "--provider",
            f"scripted:{write_script([])}",
        ],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]  # every line is JSON-RPC
    errors = {(r["id"], r["error"]["code"]) for r in replies if "error" in r}
    assert errors == {
        (None, -32700),
        (None, -32600),
        (7, -32600),
        (8, -32600),
        (9, -32601),
        (10, -32602),
    }
    (ok,) = [r for r in replies if "result" in r]
    assert ok["id"] == 11 and ok["result"]["agentCapabilities"]["loadSession"] is True
    assert "Traceback" not in done.stderr


def test_acp_is_an_io_tui_command(tmp_path):
    done = io_tui("acp", "--help")
    assert done.returncode == 0 and "Agent Client Protocol" in done.stdout
    bad = io_tui("acp", "--provider", f"scripted:{tmp_path / 'missing.json'}")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    script, policy = tmp_path / "s.json", tmp_path / "bad.toml"
    script.write_text('{"turns": [{"text": "hi"}]}')
    policy.write_text("bad = [")
    refused = io_tui("acp", "--provider", f"scripted:{script}", "--policy", str(policy))
    assert refused.returncode == 2 and "not valid TOML" in refused.stderr  # not at each prompt


@pytest.fixture(autouse=True)
def _no_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IO_TUI_CONFIG_DIR", str(tmp_path / "config"))
