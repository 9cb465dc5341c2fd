"""Text from a run, made safe to put on the terminal.

Model output, tool results, goals, commands and file names can hold escape sequences and control
characters: a test runner's colours, a program that clears the screen or moves the cursor, a
line hidden by SGR 8 (conceal) in a file the operator is asked to approve. Written to the
terminal as they are, they would repaint or scramble the app's own screen, or hide text.
``styled`` keeps colours only (the core's ``keep_sgr``: foreground, background, bold, dim,
italic, underline, reset) and drops everything else, and a span whose colour is its own
background is shown without the background; ``plain`` drops all of it, for widgets that take a
plain string; ``shown`` writes each control visibly (``\\x1b[8m``), for text the operator
approves as bytes (a diff).
"""

from __future__ import annotations

from rich.color import Color
from rich.style import Style
from rich.text import Span, Text

from io_tui.core import keep_sgr, shown_name, strip_escapes, visible_escapes

ESC = "\x1b"
# colours closer than this (squared distance over RGB) hide text drawn in one on the other
_HIDING_DISTANCE = 48**2


def plain(text: str) -> str:
    """``text`` without escape sequences and control characters (tabs and newlines kept)."""
    return strip_escapes(text)


def shown(text: str) -> str:
    """``text`` with every control character written visibly (``\\x1b``)."""
    return visible_escapes(text)


def file_name(text: str) -> str:
    """A file name or path with every control and non-UTF-8 byte written as ``\\xNN``."""
    return shown_name(text)


def styled(text: str, style: Style | str = "") -> Text:
    """``text`` as Rich ``Text``: colour sequences become styles over ``style``; every other
    escape sequence and control character is dropped, and no colour hides its text."""
    if ESC not in text:
        return Text(strip_escapes(text), style)
    out = Text.from_ansi(keep_sgr(text), style=style)
    out.spans = [_legible(span) for span in out.spans]
    return out


def _legible(span: Span) -> Span:
    """``span`` without its background when that is (nearly) its foreground colour."""
    style = span.style
    if not isinstance(style, Style) or style.color is None or style.bgcolor is None:
        return span
    if _near(style.color, style.bgcolor):
        return Span(span.start, span.end, style + Style(bgcolor="default"))
    return span


def _near(a: Color, b: Color) -> bool:
    if a.is_default or b.is_default:
        return False
    x, y = a.get_truecolor(), b.get_truecolor()
    return sum((p - q) ** 2 for p, q in zip(x, y, strict=True)) < _HIDING_DISTANCE
