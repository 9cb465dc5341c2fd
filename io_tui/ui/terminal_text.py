"""Text from a run, made safe to put on the terminal.

Model output, tool results, goals and commands can hold escape sequences and control characters:
a test runner's colours, a program that clears the screen or moves the cursor, a stray NUL.
Written to the terminal as they are, they would repaint or scramble the app's own screen.
``styled`` keeps colours (SGR sequences become Rich styles) and drops everything else; ``plain``
drops all of it, for widgets that take a plain string (``TextArea``, ``Syntax``).
"""

from __future__ import annotations

import re

from rich.style import Style
from rich.text import Text

ESC = "\x1b"
# C0 controls but tab, newline and escape (escape sequences are parsed, not dropped blindly), DEL
_CONTROLS = {code: None for code in (*range(0x09), 0x0B, 0x0C, *range(0x0D, 0x1B), *range(0x1C, 0x20), 0x7F)}  # fmt: skip
# CSI (colours, cursor, erase), OSC (titles, links; ended by BEL or ST), the other escapes
# (ESC, intermediate bytes, a final byte: "ESC 7", "ESC ( B")
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[ -/]*[0-~])?")
_SGR = re.compile(r"\x1b\[[0-9;:]*m")  # select graphic rendition: colours and attributes


def plain(text: str) -> str:
    """``text`` without escape sequences and control characters (tabs and newlines kept)."""
    if ESC in text:
        text = _ESCAPES.sub("", text)
    return text.translate(_CONTROLS)


def styled(text: str, style: Style | str = "") -> Text:
    """``text`` as Rich ``Text``: colour sequences become styles over ``style``; every other
    escape sequence and control character is dropped."""
    if ESC not in text:
        return Text(text.translate(_CONTROLS), style)
    kept = _ESCAPES.sub(lambda m: m[0] if _SGR.fullmatch(m[0]) else "", text)
    return Text.from_ansi(kept.translate(_CONTROLS), style=style)
