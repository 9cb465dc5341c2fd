"""Config and provider listing from the command line."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from replay_server import ReplayServer, json_reply

from io_tui.cli import main
from io_tui.config import SHOWN


def test_config_path_follows_the_env(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IO_TUI_CONFIG", str(tmp_path / "mine.toml"))
    assert main(["config", "path"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "mine.toml")


def test_config_show_merges_file_and_env(tmp_path, monkeypatch, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text(
        'provider = "ollama"\nmodel = "qwen3"\nmax_steps = 30\n[ui]\ntheme = "io-light"\n'
    )
    monkeypatch.setenv("IO_TUI_CONFIG", str(cfg))
    monkeypatch.setenv("IO_TUI_MODEL", "llama3.3")
    assert main(["config", "show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert (shown["provider"], shown["model"], shown["max_steps"], shown["ui"]["theme"]) == (
        "ollama",
        "llama3.3",
        30,
        "io-light",
    )
    assert list(shown) == list(SHOWN)  # every field, in the order config show has always used


def test_malformed_config_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
    cfg = tmp_path / "c.toml"
    cfg.write_text("max_steps = 'many'\n")
    monkeypatch.setenv("IO_TUI_CONFIG", str(cfg))
    assert main(["config", "show"]) == 2
    err = capsys.readouterr().err
    assert "max_steps" in err and len(err.strip().splitlines()) == 1
    cfg.write_text("provider = [unclosed\n")
    assert main(["config", "show"]) == 2
    assert "not valid TOML" in capsys.readouterr().err


def test_providers_lists_every_preset_without_network(capsys, monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    assert main(["providers", "--json", "--timeout", "0.5"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert {
        "openai",
        "anthropic",
        "openrouter",
        "ollama",
        "llamacpp",
        "vllm",
        "lmstudio",
        "openai-compatible",
    } <= set(rows)
    assert rows["openai"]["reachable"] is False and "OPENAI_API_KEY" in rows["openai"]["detail"]


# -- probing one endpoint (issue 17 item 4) --

MODELS = {"object": "list", "data": [{"id": f"model-{n}", "object": "model"} for n in range(7)]}


async def _io_tui(*args: str, config: Path) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"IO_TUI_CONFIG": str(config)}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "io_tui", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_providers_probes_any_endpoint_and_lists_every_model(tmp_path):
    server = ReplayServer()
    await server.start()
    server.add(json_reply(200, MODELS), json_reply(200, MODELS))
    try:
        code, out, _ = await _io_tui(
            "providers", "--base-url", server.base_url + "/v1", config=tmp_path / "none.toml"
        )
        assert code == 0
        assert out.splitlines()[0].split()[:2] == ["✓", "openai-compatible"]
        assert [line.strip() for line in out.splitlines()[2:]] == [f"model-{n}" for n in range(7)]
        # the config's base_url is honoured for its provider
        config = tmp_path / "c.toml"
        config.write_text(f'provider = "vllm"\nbase_url = "{server.base_url}/v1"\n')
        code, out, _ = await _io_tui("providers", "--provider", "vllm", "--json", config=config)
    finally:
        await server.stop()
    (row,) = json.loads(out)
    assert (row["name"], row["base_url"], row["reachable"]) == (
        "vllm",
        server.base_url + "/v1",
        True,
    )
    assert row["models"] == [f"model-{n}" for n in range(7)]
    assert [r.path for r in server.requests] == ["/v1/models", "/v1/models"]


async def test_providers_reports_an_endpoint_that_does_not_answer(tmp_path):
    code, out, _ = await _io_tui(
        "providers", "--provider", "llamacpp", "--base-url", "http://127.0.0.1:9/v1",
        "--timeout", "2", config=tmp_path / "none.toml",
    )  # fmt: skip
    assert code == 1 and "cannot reach http://127.0.0.1:9/v1/models" in out
    code, _, err = await _io_tui("providers", "--provider", "nope", config=tmp_path / "none.toml")
    assert code == 2 and "unknown provider 'nope'" in err


def test_every_command_accepts_store_after_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("IO_TUI_CONFIG", str(tmp_path / "none.toml"))
    store = str(tmp_path / "s.db")
    assert main(["mcp", "list", "--store", store]) == 0
    assert main(["config", "show", "--json", "--store", store]) == 0
    shown = capsys.readouterr().out.splitlines()[-1]
    assert json.loads(shown)["store"] == store
