"""The bytes that tell the operator a run waits: the bell, OSC 9 or OSC 777 as the terminal
shows them, wrapped for tmux, and nothing in the text that could end the sequence early."""

from __future__ import annotations

from io_tui.core import terminal_notice
from io_tui.core.boundary.notice import resolved_style


def test_auto_chooses_the_form_the_terminal_shows() -> None:
    assert resolved_style("auto", {"TERM_PROGRAM": "WezTerm"}) == "osc9"
    assert resolved_style("auto", {"TERM_PROGRAM": "iTerm.app"}) == "osc9"
    assert resolved_style("auto", {"WT_SESSION": "x"}) == "osc9"
    assert resolved_style("auto", {"TERM": "foot"}) == "osc777"
    assert resolved_style("auto", {"VTE_VERSION": "7600", "TERM": "xterm-256color"}) == "osc777"
    assert resolved_style("auto", {"TERM": "xterm-256color"}) == "bell"
    assert resolved_style("osc777", {"TERM_PROGRAM": "WezTerm"}) == "osc777"  # as configured


def test_the_sequences() -> None:
    env = {"TERM_PROGRAM": "WezTerm"}
    assert terminal_notice("io-tui run 3 asks", "write a.txt", env=env) == (
        "\a\x1b]9;io-tui run 3 asks: write a.txt\a"
    )
    assert terminal_notice("t", "b", "osc9", bell=False, env={}) == "\x1b]9;t: b\a"
    assert terminal_notice("run; 3", "exec a;b", "osc777", env={}) == (
        "\a\x1b]777;notify;run, 3;exec a,b\a"
    )
    assert terminal_notice("t", "b", "bell", env=env) == "\a"
    assert terminal_notice("t", "b", "off", env=env) == ""
    assert terminal_notice("t", "b", "bell", bell=False, env=env) == ""


def test_inside_tmux_it_is_passed_through() -> None:
    wrapped = terminal_notice("t", "b", "osc9", bell=False, env={"TMUX": "/tmp/tmux-1/default"})
    assert wrapped == "\x1bPtmux;\x1b\x1b]9;t: b\a\x1b\\"


def test_text_cannot_end_the_sequence_or_run_on() -> None:
    sent = terminal_notice("a\x1b]0;evil\a", "x\ny\x9c" + "z" * 500, "osc9", bell=False, env={})
    body = sent.removeprefix("\x1b]9;").removesuffix("\a")
    assert "\x1b" not in body and "\a" not in body and "\n" not in body and "\x9c" not in body
    assert len(body) < 420
