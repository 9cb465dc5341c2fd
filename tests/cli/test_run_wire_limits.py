"""``io-tui run`` against a real HTTP server on 127.0.0.1 that cuts answers at the output limit,
dies mid-stream, fails and recovers, or says the prompt does not fit (issue 17 items 1-4).

Each run is a real subprocess; what it records is read back with ``io-tui trace``.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from replay_server import ReplayServer, Reply, json_reply, sse_reply

TEXT = "The answer starts here and goes on for a while"


def chat_stream(text: str, finish: str = "stop") -> bytes:
    """An OpenAI-compatible stream of ``text`` word by word, ending with ``finish``."""
    chunks: list[dict[str, Any]] = [{"choices": [{"index": 0, "delta": {"content": ""}}]}]
    chunks += [{"choices": [{"index": 0, "delta": {"content": w + " "}}]} for w in text.split()]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    chunks.append({"choices": [], "usage": {"prompt_tokens": 90, "completion_tokens": 12}})
    body = "".join(f"data: {json.dumps({'model': 'm', **c})}\n\n" for c in chunks)
    return (body + "data: [DONE]\n\n").encode()


async def io_tui(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "io_tui",
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def run_against(
    tmp_path: Path,
    workspace: Path,
    replies: list[Reply],
    *flags: str,
    model: str = "m",
    props: dict[str, Any] | None = None,
) -> tuple[int, list[dict[str, Any]], dict[str, Any], ReplayServer, dict[str, str]]:
    """One ``io-tui run --json`` against a server scripted with ``replies`` (and answering
    ``GET /props`` with ``props``, 404 without): its exit code, its JSON events, the run's
    trace, the server (its requests) and the environment used."""
    server = ReplayServer()
    server.props = props
    await server.start()
    server.add(*replies)
    store = str(tmp_path / "wire.db")
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["IO_TUI_CONFIG"] = str(tmp_path / "none.toml")
    try:
        code, out, err = await io_tui(
            *("run", "answer", "--workspace", str(workspace), "--store", store, "--json"),
            *("--provider", "openai-compatible", "--base-url", server.base_url + "/v1"),
            *("--model", model, *flags),
            env=env,
        )
    finally:
        await server.stop()
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert lines, err
    _, trace_out, _ = await io_tui("trace", "1", "--json", "--store", store, env=env)
    return code, lines, json.loads(trace_out), server, env | {"STORE": store}


async def test_a_length_cut_answer_ends_finished_truncated(tmp_path, workspace) -> None:
    code, events, trace, server, env = await run_against(
        tmp_path, workspace, [sse_reply(chat_stream(TEXT, "length"))], "--max-output-tokens", "64"
    )
    assert server.requests[0].body["max_tokens"] == 64
    assert code == 1  # not a finished run: exit 1
    result = events[-1]
    assert (result["status"], result["outcome"]) == ("finished", "finished_truncated")
    assert "cut at the output limit of 64 tokens" in result["error"]
    # every text delta is an event, in order, and they add up to the stored answer
    deltas = "".join(e["detail"]["text"] for e in events if e.get("kind") == "text_delta")
    assert deltas.split() == TEXT.split() == trace["steps"][0]["text"].split()
    finished = next(e for e in events if e.get("kind") == "request_finished")
    assert finished["detail"]["stop_reason"] == "length"
    request = trace["requests"][0]
    assert (request["stop_reason"], request["raw_stop_reason"]) == ("length", "length")
    assert request["attempts"][0]["max_output_tokens"] == 64
    _, readable, _ = await io_tui("trace", "1", "--store", env["STORE"], env=env)
    assert "finished_truncated" in readable
    assert "stop reason length (raw 'length')" in readable


async def test_text_streamed_before_the_server_died_is_kept_marked_partial(
    tmp_path, workspace
) -> None:
    body = chat_stream(TEXT)
    cut = Reply(body=body, action="cut", cut_at=body.index(b"goes"))
    code, events, trace, server, env = await run_against(tmp_path, workspace, [cut])
    assert code == 1 and len(server.requests) == 1  # shown text is never retried
    failed = next(e for e in events if e.get("kind") == "request_failed")
    shown = "The answer starts here and "
    assert failed["detail"]["partial"] == {"text": shown, "tool_calls": []}
    request = trace["requests"][0]
    assert request["partial"]["text"] == shown and request["error"]
    _, readable, _ = await io_tui("trace", "1", "--store", env["STORE"], env=env)
    assert f"partial output (streamed before it failed):\n  │ {shown.strip()}" in readable


async def test_every_retry_is_an_event(tmp_path, workspace) -> None:
    code, events, trace, server, _ = await run_against(
        tmp_path,
        workspace,
        [json_reply(500, {"error": {"message": "busy"}}), sse_reply(chat_stream("fine"))],
    )
    assert code == 0 and len(server.requests) == 2
    (retry,) = [e for e in events if e.get("kind") == "request_retry"]
    assert retry["detail"]["attempt"] == 1 and retry["detail"]["error_kind"] == "server"
    assert retry["detail"]["delay_s"] > 0
    assert [a["error_kind"] for a in trace["requests"][0]["attempts"]] == ["server", None]


async def test_an_overflow_compacts_once_and_is_never_resent_identically(
    tmp_path, workspace
) -> None:
    overflow = {"error": {"message": "This model's maximum context length is 4096 tokens"}}
    code, events, trace, server, _ = await run_against(
        tmp_path, workspace, [json_reply(400, overflow), json_reply(400, overflow)]
    )
    assert len(server.requests) == 1  # nothing to fold in step 1: the same prompt stays here
    assert code == 1
    assert events[-1]["outcome"] == "state_not_preserved"  # the degradation ladder ran out
    assert (
        "not sent again" in events[-1]["error"] and "maximum context length" in events[-1]["error"]
    )
    assert [r["attempt"] for r in trace["requests"]] == [1, 2, 3]  # the refusals are recorded too


async def usage_error(tmp_path: Path, workspace: Path, *flags: str, model: str = "m",
                      props: dict[str, Any] | None = None) -> tuple[int, str, ReplayServer]:  # fmt: skip
    """``io-tui run`` refused before it starts: its exit code and stderr, and the server."""
    server = ReplayServer()
    server.props = props
    await server.start()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["IO_TUI_CONFIG"] = str(tmp_path / "none.toml")
    try:
        code, out, err = await io_tui(
            *("run", "answer", "--workspace", str(workspace)),
            *("--store", str(tmp_path / "wire.db"), "--json"),
            *("--provider", "openai-compatible", "--base-url", server.base_url + "/v1"),
            *("--model", model, *flags),
            env=env,
        )
    finally:
        await server.stop()
    assert out == "" and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return code, err, server


async def test_an_output_limit_beyond_the_models_window_is_refused_before_the_run_starts(
    tmp_path, workspace
) -> None:
    code, err, server = await usage_error(
        tmp_path, workspace, "--max-output-tokens", "199900", model="gpt-4o-mini"
    )
    assert code == 2 and server.requests == []
    assert "--max-output-tokens: 199,900 tokens do not fit the model's window of 128,000" in err
    assert "fits (or leave it unset" in err


async def test_an_output_limit_beyond_the_window_llamacpp_reports_is_refused_with_what_fits(
    tmp_path, workspace
) -> None:
    """No preset knows the window of a model behind ``--base-url``; llama.cpp says it at
    ``/props``, so a limit that cannot fit beside the frame is refused before the run starts,
    with the limit that does (what leaving it unset gives)."""
    props = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}
    code, err, server = await usage_error(
        tmp_path, workspace, "--max-output-tokens", "8192", props=props
    )
    assert server.props_asked == 1 and server.requests == [] and code == 2
    assert err.startswith("io-tui: --max-output-tokens: 8,192 tokens do not fit")
    assert "window of 4,096 beside the ~" in err
    fits = int(err.split("; ")[1].split(" fits")[0].replace(",", ""))
    assert 256 <= fits < 4096 // 2


async def test_no_output_limit_fits_a_window_smaller_than_the_frame(tmp_path, workspace) -> None:
    """Left unset, the limit is fitted to the window; a window the frame alone fills is
    refused at the first request, with the figures, never sent."""
    props = {"default_generation_settings": {"n_ctx": 1024}, "total_slots": 1}
    code, events, _trace, server, _ = await run_against(tmp_path, workspace, [], props=props)
    assert server.props_asked == 1 and server.requests == [] and code == 1
    error = events[-1]["error"]
    assert "refused before sending" in error and "window of 1,024" in error
    assert "limit of 256" in error and "tools ~" in error
    started = next(e for e in events if e.get("kind") == "request_started")
    assert started["detail"]["window_tokens"] == 1024
    assert started["detail"]["max_output_tokens"] == 256  # the fitted limit's floor
    code, err, _ = await usage_error(tmp_path, workspace, "--max-output-tokens", "500", props=props)
    assert code == 2 and "no output limit fits the model's window of 1,024" in err


async def test_an_unset_output_limit_is_fitted_to_the_window_the_server_reports(
    tmp_path, workspace
) -> None:
    """A 4,096-token llama.cpp window and no limit set: the request asks for half of what the
    window leaves beside the frame, and the run finishes (issue 29 item 6)."""
    props = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1}
    code, events, trace, server, _ = await run_against(
        tmp_path, workspace, [sse_reply(chat_stream(TEXT))], props=props
    )
    assert code == 0 and len(server.requests) == 1
    started = next(e for e in events if e.get("kind") == "request_started")["detail"]
    limit = (4096 - started["frame_tokens"]) // 2
    assert started["max_output_tokens"] == limit == server.requests[0].body["max_tokens"]
    assert started["frame_tokens"] + limit + started["ceiling_tokens"] <= 4096
    limits = trace["requests"][0]["limits"]
    assert (limits["max_output_tokens"], limits["ceiling_bound"]) == (limit, "window")


async def test_a_template_without_tools_is_said_in_the_transcript_and_the_request(
    tmp_path, workspace
) -> None:
    """llama.cpp's ``/props`` says its chat template drops tool schemas: the run says once
    that the model did not receive the tools, counts none in the frame, and each request
    records it (the inspector's line)."""
    props = {
        "default_generation_settings": {"n_ctx": 4096},
        "chat_template_caps": {"supports_tools": False},
    }
    code, events, trace, server, _ = await run_against(
        tmp_path, workspace, [sse_reply(chat_stream(TEXT))], props=props
    )
    assert code == 0 and len(server.requests) == 1
    assert server.requests[0].body["tools"]  # still sent: a template may yet change
    warnings = [e["detail"] for e in events if e.get("kind") == "warning"]
    assert [w["code"] for w in warnings] == ["tools_ignored"]
    assert warnings[0]["message"].startswith("the model did not receive the tools")
    request = trace["requests"][0]
    assert request["tools_ignored"] is True
    assert request["calibration"]["tools_counted"] is False
    started = next(e for e in events if e.get("kind") == "request_started")["detail"]
    assert started["frame_tokens"] < 600  # system prompt and task: the schemas not counted


async def test_a_prompt_count_without_the_tools_is_said_too(tmp_path, workspace) -> None:
    """A server that does not say (no ``chat_template_caps``) but counts the prompt as if
    the schemas were not there: seen at the first answer, said once."""
    body = chat_stream(TEXT).replace(b'"prompt_tokens": 90', b'"prompt_tokens": 200')
    code, events, trace, _server, _ = await run_against(
        tmp_path, workspace, [sse_reply(body), sse_reply(body)], props=None
    )
    assert code == 0
    warnings = [e["detail"] for e in events if e.get("kind") == "warning"]
    assert [w["code"] for w in warnings] == ["tools_ignored"]
    assert "the server counted 200 prompt tokens" in warnings[0]["message"]
    assert trace["requests"][0]["tools_ignored"] is True


async def test_a_server_without_props_is_asked_once_and_the_run_goes_on(
    tmp_path, workspace
) -> None:
    code, events, _trace, server, _ = await run_against(
        tmp_path, workspace, [sse_reply(chat_stream(TEXT))]
    )
    assert code == 0 and server.props_asked == 1 and len(server.requests) == 1
    started = next(e for e in events if e.get("kind") == "request_started")
    assert started["detail"]["window_tokens"] is None


async def test_a_configured_window_wins_and_bounds_the_ceiling(tmp_path, workspace) -> None:
    """``--context-window`` is the model's window over the server's own report (asked for
    its chat template's tools only);
    each request records it and where it came from, and its ceiling is the window less the
    output budget and the frame when that is the tighter limit."""
    props = {"default_generation_settings": {"n_ctx": 100_000}, "total_slots": 1}
    code, events, trace, server, env = await run_against(
        tmp_path,
        workspace,
        [sse_reply(chat_stream(TEXT))],
        *("--context-window", "9000", "--max-output-tokens", "1000"),
        props=props,
    )
    assert code == 0 and server.props_asked == 1 and len(server.requests) == 1
    assert server.requests[0].body["max_tokens"] == 1000
    started = next(e for e in events if e.get("kind") == "request_started")
    assert started["detail"]["window_tokens"] == 9000
    request = trace["requests"][0]
    limits = request["limits"]
    assert (limits["window_tokens"], limits["window_source"]) == (9000, "config")
    assert limits["max_output_tokens"] == 1000 and limits["ceiling_bound"] == "window"
    assert limits["room_tokens"] == 9000 - 1000 - request["frame_tokens"]
    assert request["ceiling_tokens"] == limits["room_tokens"] < 24_000  # not the contract's
    _, readable, _ = await io_tui("trace", "1", "--context", "1", "--store", env["STORE"], env=env)
    assert "window 9,000 (from the config) · output budget 1,000" in readable


async def test_a_server_reported_window_says_so(tmp_path, workspace) -> None:
    props = {"default_generation_settings": {"n_ctx": 9000}, "total_slots": 1}
    _code, _events, trace, server, _ = await run_against(
        tmp_path, workspace, [sse_reply(chat_stream(TEXT))], props=props
    )
    assert server.props_asked == 1
    limits = trace["requests"][0]["limits"]
    assert (limits["window_tokens"], limits["window_source"]) == (9000, "server")


async def test_a_bad_context_window_is_a_usage_error(tmp_path, workspace) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["IO_TUI_CONFIG"] = str(tmp_path / "none.toml")
    base = (
        *("run", "answer", "--workspace", str(workspace), "--store", str(tmp_path / "s.db")),
        *("--provider", "openai-compatible", "--base-url", "http://127.0.0.1:9/v1"),
        *("--model", "m"),
    )
    code, _, err = await io_tui(*base, "--context-window", "0", env=env)
    assert code == 2 and "context_window" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = await io_tui(
        *base, "--context-window", "800", "--max-output-tokens", "1000", env=env
    )
    assert code == 2 and "Traceback" not in err
    assert "context window of 800 tokens" in err and "output budget of 1,000" in err
    # the config's key (and IO_TUI_CONTEXT_WINDOW) is checked the same way
    code, _, err = await io_tui(*base, env=env | {"IO_TUI_CONTEXT_WINDOW": "-5"})
    assert code == 2 and "context_window" in err


async def test_a_frame_beyond_the_ceiling_is_refused_before_sending_when_the_window_is_unknown(
    tmp_path, workspace
) -> None:
    """No preset or ``/props`` says the window of a model behind ``--base-url``: a frame alone
    larger than ``--context-max-tokens`` is refused locally, with the figures, never sent."""
    code, events, trace, server, _ = await run_against(
        tmp_path, workspace, [sse_reply(chat_stream(TEXT))], "--context-max-tokens", "800"
    )
    assert server.props_asked == 1 and server.requests == [] and code == 1
    error = events[-1]["error"]
    assert "refused before sending: the fixed frame alone (~" in error
    assert "exceeds the run's context ceiling of 800 tokens" in error and "tools ~" in error
    started = next(e for e in events if e.get("kind") == "request_started")
    assert started["detail"]["window_tokens"] is None and started["detail"]["frame_tokens"] > 800
    assert f"~{started['detail']['frame_tokens']:,} tokens" in error
    (request,) = trace["requests"]
    assert request["error"] == error and trace["run"]["status"] == "failed"


async def test_a_scripted_run_budgets_against_the_window_and_output_limit_it_is_given(
    tmp_path, workspace, write_script
) -> None:
    """The scripted provider takes ``--max-output-tokens`` and ``--context-window`` as a model's
    provider does (it once dropped them without a word): checked, recorded, bounding the
    ceiling, and kept when the run is resumed (its description carries them)."""
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["IO_TUI_CONFIG"] = str(tmp_path / "none.toml")
    store = str(tmp_path / "s.db")
    script = write_script([{"text": "done"}])
    base = ("run", "answer", "--workspace", str(workspace), "--store", store)
    base += ("--provider", f"scripted:{script}")
    code, _, err = await io_tui(*base, "--context-window", "5", "--max-output-tokens", "9", env=env)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "context window of 5 tokens" in err and "output budget of 9" in err
    code, _, err = await io_tui(
        *base, "--context-window", "8192", "--max-output-tokens", "700", env=env
    )
    assert code == 0, err
    _, out, _ = await io_tui("trace", "1", "--json", "--store", store, env=env)
    request = json.loads(out)["requests"][0]
    limits = request["limits"]
    assert (limits["window_tokens"], limits["window_source"]) == (8192, "config")
    assert limits["max_output_tokens"] == 700 and limits["ceiling_bound"] == "window"
    assert request["ceiling_tokens"] == 8192 - 700 - request["frame_tokens"]
    run = json.loads(out)["run"]
    assert (run["provider"]["max_output_tokens"], run["provider"]["window_tokens"]) == (700, 8192)
