"""Config and provider listing from the command line."""

from __future__ import annotations

import json

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
