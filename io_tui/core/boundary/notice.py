"""The terminal's own ways to tell the operator a run waits: the bell, and a desktop notification
by escape sequence (OSC 9 or OSC 777) where the terminal shows one.

A run that asks waits on a human who may be in another window: the bell marks the tab, and a
desktop notification reaches them with the terminal in the background. Both are plain bytes
written to the terminal, so the cockpit (through its driver) and ``io-tui run`` (on stderr)
send the same ones. ``auto`` sends OSC 9 to the terminals known to show it (iTerm2, WezTerm,
Ghostty, Windows Terminal, kitty), OSC 777 to those that take that form (foot, rxvt, Konsole,
VTE terminals such as GNOME Terminal), and only the bell elsewhere. Inside tmux the sequence is
wrapped for tmux to pass it on (with ``allow-passthrough on``); a terminal that knows neither
ignores it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Literal

NoticeStyle = Literal["auto", "osc9", "osc777", "bell", "off"]
NOTICE_STYLES: tuple[NoticeStyle, ...] = ("auto", "osc9", "osc777", "bell", "off")

BEL = "\a"
ESC = "\x1b"
OSC9_PROGRAMS = ("iTerm.app", "WezTerm", "ghostty")
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")
LIMIT = 200


def resolved_style(style: NoticeStyle, env: Mapping[str, str] | None = None) -> NoticeStyle:
    """``style``, with ``auto`` made the form this terminal shows (``bell`` when unknown)."""
    if style != "auto":
        return style
    env = os.environ if env is None else env
    if env.get("TERM_PROGRAM") in OSC9_PROGRAMS or "WT_SESSION" in env:
        return "osc9"
    if "KITTY_WINDOW_ID" in env:
        return "osc9"
    term = env.get("TERM", "")
    if term.startswith(("foot", "rxvt")) or "KONSOLE_VERSION" in env or "VTE_VERSION" in env:
        return "osc777"
    return "bell"


def terminal_notice(
    title: str,
    body: str,
    style: NoticeStyle = "auto",
    *,
    bell: bool = True,
    env: Mapping[str, str] | None = None,
) -> str:
    """The bytes that tell the operator: the bell (unless ``bell`` is false or the style is
    ``off``) and the desktop notification of ``style``; empty when there is nothing to send."""
    env = os.environ if env is None else env
    chosen = resolved_style(style, env)
    if chosen == "off":
        return ""
    out = BEL if bell else ""
    title, body = _clean(title), _clean(body)
    if chosen == "osc9":
        out += _passed(f"{ESC}]9;{title}: {body}{BEL}", env)
    elif chosen == "osc777":
        title, body = title.replace(";", ","), body.replace(";", ",")
        out += _passed(f"{ESC}]777;notify;{title};{body}{BEL}", env)
    return out


def _clean(text: str) -> str:
    """One line of printable text, no longer than ``LIMIT``: nothing in it ends the sequence."""
    flat = " ".join(CONTROL.sub(" ", text).split())
    return flat if len(flat) <= LIMIT else flat[: LIMIT - 1] + "…"


def _passed(sequence: str, env: Mapping[str, str]) -> str:
    """``sequence`` as tmux passes it to the terminal outside it (DCS passthrough)."""
    if "TMUX" not in env:
        return sequence
    return f"{ESC}Ptmux;{sequence.replace(ESC, ESC + ESC)}{ESC}\\"
