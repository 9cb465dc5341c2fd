"""The one sanitiser: what untrusted text may do to a terminal, in each of its three forms."""

from __future__ import annotations

import json
import os

from hypothesis import given, strategies as st

from io_tui.core.boundary.safe_text import (
    json_safe,
    keep_sgr,
    shown_name,
    strip_escapes,
    unescape_name,
    visible_escapes,
)

HOSTILE = (
    "a\x1b]52;c;Y3VybCBldmlsfHNo\x07b"  # OSC 52: the clipboard
    "\x1b]0;pwned\x1b\\c"  # OSC 0: the title, ended by ST
    "\x1b[2J\x1b[H\x1b[10;10H"  # clear, home, move
    "\x1b[6n\x1b[21t"  # DSR and the title query: answers typed into the shell
    "\x1bP+q544e\x1b\\"  # DCS (XTGETTCAP)
    "\x9b31m\x07\x08\r\x7fd"
)


def _controls(text: str) -> list[str]:
    return [c for c in text if (ord(c) < 0x20 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F]


def test_strip_drops_every_sequence_and_control() -> None:
    out = strip_escapes(HOSTILE)
    assert _controls(out) == []
    assert out == "abc31md"


def test_visible_shows_each_control_as_an_escape() -> None:
    out = visible_escapes(HOSTILE)
    assert _controls(out) == []
    assert out.startswith("a\\x1b]52;c;Y3VybCBldmlsfHNo\\x07b")
    assert "\\x9b31m" in out and "\\x7f" in out


@given(st.text())
def test_no_control_survives_any_form(text: str) -> None:
    for out in (strip_escapes(text), visible_escapes(text), shown_name(text), keep_sgr(text)):
        surviving = [c for c in _controls(out) if c != "\x1b"]
        assert surviving == []
        assert all(not 0xD800 <= ord(c) <= 0xDFFF for c in out)
        out.encode("utf-8")
    assert "\x1b" not in strip_escapes(text) + visible_escapes(text) + shown_name(text)


def test_keep_sgr_keeps_colours_only() -> None:
    assert keep_sgr("x\x1b[1;8;31my\x1b[5;38;5;196;7mz\x1b[m") == (
        "x\x1b[1;31my\x1b[38;5;196mz\x1b[0m"
    )
    assert keep_sgr("\x1b[8mhidden\x1b[0m") == "hidden\x1b[0m"
    assert keep_sgr("\x1b[2J\x1b]0;t\x07a") == "a"


def test_a_name_shows_every_byte_and_comes_back() -> None:
    raw = os.fsdecode(b"bad\xff\xfe\n\x1b.txt")
    shown = shown_name(raw)
    assert shown == "bad\\xff\\xfe\\x0a\\x1b.txt"
    assert unescape_name(shown) == raw
    assert os.fsencode(unescape_name(shown)) == b"bad\xff\xfe\n\x1b.txt"
    assert unescape_name("plain.txt") == "plain.txt"


def test_json_stays_the_same_value() -> None:
    value = {"text": "a\x1b[2J\x9b\x7f" + os.fsdecode(b"\xff")}
    text = json_safe(json.dumps(value, ensure_ascii=False))
    assert _controls(text) == []
    text.encode("utf-8")
    assert json.loads(text) == value
