"""OpenTelemetry export against a real receiver: Arize Phoenix on 127.0.0.1 (tests/support/
phoenix.py), fed by ``io-tui`` processes with the standard ``OTEL_*`` variables, its spans read
back through Phoenix's REST API. Each test exports to a Phoenix project of its own (the
``openinference.project.name`` resource attribute, through ``OTEL_RESOURCE_ATTRIBUTES``).

Skipped, with the reason, when the ``otel`` extra or Phoenix is not installed; the test
bootstrap (the Makefile's ``$(STAMP)``) installs both.
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from cli_process import io_tui, user_env
from phoenix import Phoenix, phoenix_executable, start_phoenix

pytestmark = [
    pytest.mark.xdist_group("phoenix"),  # one server for the module, on one worker
    pytest.mark.skipif(
        importlib.util.find_spec("opentelemetry.sdk") is None,
        reason="the otel extra is not installed: pip install -e '.[otel]'",
    ),
    pytest.mark.skipif(
        phoenix_executable() is None,
        reason="Arize Phoenix is not installed (make .venv/.installed puts it in .venv/phoenix)",
    ),
]

SECRET = "sk-live-abcdefghijklmnopqrstuvwx0123456789"


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory) -> Any:
    executable = phoenix_executable()
    assert executable is not None
    server = start_phoenix(executable, tmp_path_factory.mktemp("phoenix"))
    yield server
    server.stop()


def otel_env(phoenix: Phoenix, project: str, *, grpc: bool = False, **extra: str) -> dict:
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": phoenix.grpc_url if grpc else phoenix.url,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc" if grpc else "http/protobuf",
        "OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}",
        "OTEL_METRICS_EXPORTER": "none",  # Phoenix takes traces only
        **extra,
    }
    drop = ("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "TRACEPARENT")
    return user_env(env, drop=drop)


def run(*args: str, env: dict, store: Path, ok: tuple[int, ...] = (0,)) -> str:
    done = io_tui(*args, "--store", str(store), env=env, timeout=180)
    assert done.returncode in ok, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return done.stdout


def trace_of(run_id: int, store: Path) -> dict[str, Any]:
    return json.loads(run("trace", str(run_id), "--json", env=user_env(), store=store))


def by_id(spans: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {s["context"]["span_id"]: s for s in spans}


def parent_of(span: dict[str, Any], spans: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return spans[span["parent_id"]]


def observations(trace: dict[str, Any]) -> list[dict[str, Any]]:
    """The results of tool calls: a correction (``corrects``) is the context engine's, no call."""
    return [o for step in trace["steps"] for o in step["observations"] if not o.get("corrects")]


def requests_of(trace: dict[str, Any]) -> list[tuple[int, int, int, int]]:
    return sorted(
        (r["step"], r["attempt"], r["usage"]["prompt_tokens"], r["usage"]["completion_tokens"])
        for r in trace["requests"]
        if r["purpose"] == "work" and r.get("usage")
    )


def chats_of(spans: list[dict[str, Any]], run_span: dict[str, Any]) -> list[tuple[int, ...]]:
    index = by_id(spans)
    out = []
    for span in spans:
        if not span["name"].startswith("chat "):
            continue
        if parent_of(parent_of(span, index), index) is not run_span:
            continue
        a = span["attributes"]
        out.append(
            (a["io_tui.step"], a["io_tui.request.attempt"], a["gen_ai.usage.input_tokens"],
             a["gen_ai.usage.output_tokens"])
        )  # fmt: skip
    return sorted(out)


def test_the_demo_is_one_trace_of_steps_requests_and_tool_calls(phoenix, tmp_path):
    store = tmp_path / "store.db"
    run("demo", "--headless", env=otel_env(phoenix, "demo"), store=store)
    trace = trace_of(1, store)
    requests = requests_of(trace)
    # the run, its steps, its requests, its calls
    expected = 1 + trace["run"]["steps"] + len(requests) + len(observations(trace))
    spans = phoenix.wait_spans("demo", expected)
    assert len({s["context"]["trace_id"] for s in spans}) == 1, "one trace per run"
    index = by_id(spans)
    names = Counter(s["name"].split(" ")[0] for s in spans)
    assert names == {
        "invoke_agent": 1,
        "step": trace["run"]["steps"],
        "chat": len(requests),
        "execute_tool": len(observations(trace)),
    }
    (agent,) = [s for s in spans if s["name"] == "invoke_agent io-tui"]
    a = agent["attributes"]
    assert agent["parent_id"] is None
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.agent.name"] == "io-tui"
    assert a["gen_ai.conversation.id"] == "io-tui-run-1"
    assert a["io_tui.run.status"] == "finished" and a["io_tui.run.outcome"] == "success"
    assert (
        a["gen_ai.usage.input_tokens"] + a["gen_ai.usage.output_tokens"] == (trace["run"]["tokens"])
    )
    for span in spans:
        if span["name"].startswith("step "):
            assert parent_of(span, index) is agent
        elif span["name"].startswith(("chat ", "execute_tool ")):
            step = parent_of(span, index)
            assert step["name"] == f"step {span['attributes']['io_tui.step']}"
    # token counts: the trace's, request by request
    assert chats_of(spans, agent) == requests
    chat = next(s for s in spans if s["name"].startswith("chat "))["attributes"]
    assert chat["gen_ai.operation.name"] == "chat"
    assert chat["gen_ai.request.model"] == "scripted-demo"
    assert chat["gen_ai.response.finish_reasons"] in (["tool_calls"], ["stop"])
    assert chat["io_tui.manifest.entries"] >= 0 and "io_tui.prefix.rewritten" in chat
    tools = [s for s in spans if s["name"].startswith("execute_tool ")]
    calls = {o["call_id"] for o in observations(trace)}
    assert {s["attributes"]["gen_ai.tool.call.id"] for s in tools} == calls
    # the demo's edit was asked and approved (--headless approves everything)
    edit = next(s for s in tools if s["name"] == "execute_tool edit_file")["attributes"]
    assert edit["io_tui.approval.decision"] == "approve"
    assert edit["io_tui.approval.decided_by"] and edit["io_tui.approval.wait_s"] >= 0
    # no message content unless asked
    for span in spans:
        assert not any(k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.system"))
                       for k in span["attributes"]), span["name"]  # fmt: skip
        assert "gen_ai.tool.call.arguments" not in span["attributes"]


def spawn(call_id: str, goal: str) -> dict[str, Any]:
    return {"tool_calls": [{"id": call_id, "name": "spawn_agent", "arguments": {"goal": goal}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 10}}  # fmt: skip


def test_a_sub_agent_nests_under_its_call_over_grpc(phoenix, tmp_path, workspace, write_script):
    store = tmp_path / "store.db"
    usage = {"prompt_tokens": 50, "completion_tokens": 5}
    script = write_script(
        [spawn("s1", "list the files"),
         {"tool_calls": [{"id": "l1", "name": "list_dir", "arguments": {"path": "."}}],
          "usage": usage},
         {"text": "child: listed", "usage": usage},
         {"text": "parent: done", "usage": usage}]
    )  # fmt: skip
    env = otel_env(phoenix, "sub", grpc=True)
    run("run", "list", "-w", str(workspace), "--provider", f"scripted:{script}", env=env,
        store=store)  # fmt: skip
    spans = phoenix.wait_spans("sub", 12)
    index = by_id(spans)
    assert len({s["context"]["trace_id"] for s in spans}) == 1
    agents = {
        s["attributes"]["io_tui.run.id"]: s for s in spans if s["name"] == "invoke_agent io-tui"
    }
    assert set(agents) == {1, 2}
    call = parent_of(agents[2], index)
    assert call["name"] == "execute_tool spawn_agent"
    assert call["attributes"]["io_tui.sub_agent.run_id"] == 2
    assert parent_of(parent_of(call, index), index) is agents[1]
    assert agents[2]["attributes"]["gen_ai.conversation.id"] == "io-tui-run-1"
    assert chats_of(spans, agents[2]) == requests_of(trace_of(2, store))
    assert chats_of(spans, agents[1]) == requests_of(trace_of(1, store))


def test_contents_only_when_asked_and_redacted(phoenix, tmp_path, workspace, write_script):
    store = tmp_path / "store.db"
    call = {"id": "c1", "name": "run_command", "arguments": {"argv": ["sh", "-c", "echo $API_KEY"]}}
    script = write_script([{"tool_calls": [call]}, {"text": "printed it"}])
    policy = tmp_path / "policy.toml"
    policy.write_text('[defaults]\nexec = "allow"\n')
    env = otel_env(phoenix, "content", OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="true")
    env["API_KEY"] = SECRET
    config = tmp_path / "config.toml"
    config.write_text('[run]\nenv_allow = ["API_KEY"]\n')
    env["IO_TUI_CONFIG"] = str(config)
    run("run", "say the key", "-w", str(workspace), "--provider", f"scripted:{script}",
        "--policy", str(policy), env=env, store=store)  # fmt: skip
    spans = phoenix.wait_spans("content", 6)
    chats = [s for s in spans if s["name"].startswith("chat ")]
    second = max(chats, key=lambda s: s["attributes"]["io_tui.step"])["attributes"]
    messages = json.loads(second["gen_ai.input.messages"])
    assert messages[0]["role"] == "user" and "say the key" in json.dumps(messages[0])
    result = next(m for m in messages if m["role"] == "tool")
    assert result["parts"][0]["type"] == "tool_call_response"
    output = json.loads(second["gen_ai.output.messages"])
    assert output[0]["parts"][0]["content"] == "printed it"
    tool = next(s for s in spans if s["name"] == "execute_tool run_command")["attributes"]
    assert json.loads(tool["gen_ai.tool.call.arguments"])["argv"][0] == "sh"
    assert "[redacted" in tool["gen_ai.tool.call.result"]
    dumped = json.dumps(spans)
    assert SECRET not in dumped, "the trace's redaction applies to every exported text"


def test_a_resumed_run_continues_its_trace(phoenix, tmp_path, workspace, write_script):
    store = tmp_path / "store.db"
    write = {"id": "w1", "name": "write_file", "arguments": {"path": "a.txt", "content": "x\n"}}
    script = write_script([{"tool_calls": [write]}, {"text": "wrote it"}])
    env = otel_env(phoenix, "resume")
    out = run("run", "write", "-w", str(workspace), "--provider", f"scripted:{script}",
              "--approve", "defer", env=env, store=store, ok=(3,))  # fmt: skip
    assert "paused" in out
    run("decide", "1", "approve", env=env, store=store)
    spans = phoenix.wait_spans("resume", 7)
    index = by_id(spans)
    assert len({s["context"]["trace_id"] for s in spans}) == 1, "the resume is the same trace"
    agents = sorted(
        (s for s in spans if s["name"] == "invoke_agent io-tui"),
        key=lambda s: s["attributes"]["io_tui.run.resumed"],
    )
    first, resumed = agents
    assert first["parent_id"] is None and first["attributes"]["io_tui.run.status"] == "paused"
    assert parent_of(resumed, index) is first
    assert resumed["attributes"]["io_tui.run.status"] == "finished"
    decided = next(
        s for s in spans
        if s["name"] == "execute_tool write_file" and "io_tui.approval.decision" in s["attributes"]
        and s["attributes"]["io_tui.approval.decision"] == "approve"
    )  # fmt: skip
    assert decided["attributes"]["io_tui.approval.decided_by"]


def test_a_queued_run_nests_under_the_span_that_queued_it(
    phoenix, tmp_path, workspace, write_script
):
    store = tmp_path / "store.db"
    script = write_script(
        [{"text": "nothing to do", "usage": {"prompt_tokens": 9, "completion_tokens": 2}}]
    )
    outer = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
    env = otel_env(phoenix, "queue", TRACEPARENT=outer)
    run("run", "idle", "-w", str(workspace), "--provider", f"scripted:{script}", "--queue",
        env=env, store=store)  # fmt: skip
    worker_env = otel_env(phoenix, "queue")
    run("worker", "--until-empty", env=worker_env, store=store)
    spans = phoenix.wait_spans("queue", 4)
    index = by_id(spans)
    assert {s["context"]["trace_id"] for s in spans} == {"ab" * 16}, "the caller's trace"
    (queued,) = [s for s in spans if s["name"] == "queue io-tui run"]
    assert queued["parent_id"] == "cd" * 8
    (agent,) = [s for s in spans if s["name"] == "invoke_agent io-tui"]
    assert parent_of(agent, index) is queued
