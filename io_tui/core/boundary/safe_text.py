"""Untrusted text made safe for a terminal: the one sanitiser every printer and view uses.

File contents, command output, file names, model output and MCP text can hold escape sequences
(OSC 52 writes the clipboard, OSC 0 the title, ``ESC[2J`` clears the screen, DSR and ``ESC[21t``
make the terminal type answers into the shell) and control characters. Written as they are, they
act on the operator's terminal. Three ways out, each for one kind of place:

- ``strip_escapes``: every escape sequence and control character dropped (a terminal the
  operator reads);
- ``visible_escapes``: each control character shown as ``\\x1b``, ``\\x07``… (piped output,
  a diff the operator approves, ``--show-escapes``);
- ``shown_name``: a file name, whose every byte must be seen: controls, tabs and newlines
  escaped too.

Text decoded from a file name that is not UTF-8 holds lone surrogates (Python's
``surrogateescape``): each is shown as the byte it stands for (``\\xff``), and ``unescape_name``
turns such a shown name back into the name on disk. The TUI's colour filter (``keep_sgr``) is
here too, so what survives a terminal is decided in one place.
"""

from __future__ import annotations

import re

ESC = "\x1b"
# CSI (colours, cursor, erase, queries), OSC (titles, clipboard, links; ended by BEL or ST), the
# string sequences DCS / SOS / PM / APC (ended by ST), then the other escapes (ESC, intermediate
# bytes, a final byte: "ESC 7", "ESC ( B"). An unterminated string swallows the rest.
ESCAPES = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]?"
    r"|\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|[PX^_][^\x1b]*(?:\x1b\\)?"
    r"|[ -/]*[0-~])?"
)
# C0 controls but tab and newline, DEL, the C1 controls (0x9b is a CSI on some terminals) and lone
# surrogates (a non-UTF-8 byte of a file name)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
_NAME_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_SGR = re.compile(r"\x1b\[([0-9;:]*)m")
_SHOWN_BYTE = re.compile(r"\\x([0-9a-fA-F]{2})")


def _shown(match: re.Match[str]) -> str:
    code = ord(match[0])
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape: the byte this stands for
        return f"\\x{code - 0xDC00:02x}"
    if code > 0xFF:
        return f"\\u{code:04x}"
    return f"\\x{code:02x}"


def _dropped(match: re.Match[str]) -> str:
    """A control is dropped; a name's undecodable byte is shown: it is part of the name."""
    return _shown(match) if 0xD800 <= ord(match[0]) <= 0xDFFF else ""


def strip_escapes(text: str) -> str:
    """``text`` without escape sequences and control characters (tabs and newlines kept); a
    non-UTF-8 byte stands as ``\\xNN``."""
    if ESC in text:
        text = ESCAPES.sub("", text)
    return _CONTROL.sub(_dropped, text)


def visible_escapes(text: str) -> str:
    """``text`` with every control character shown (``\\x1b[2J``); tabs and newlines kept."""
    return _CONTROL.sub(_shown, text)


def shown_name(text: str) -> str:
    """A file name or path as it can be shown: every control character, newline and tab, and
    every non-UTF-8 byte, written as ``\\xNN``, so the whole name is seen and none acts."""
    return _NAME_CONTROL.sub(_shown, text)


def unescape_name(text: str) -> str:
    """The name on disk that ``shown_name`` showed as ``text``: each ``\\xNN`` back to its byte (a
    byte over 0x7f as its surrogate, as ``os.fsdecode`` gives it). Text without one is kept."""
    if "\\x" not in text:
        return text

    def byte(match: re.Match[str]) -> str:
        value = int(match[1], 16)
        return chr(0xDC00 + value) if value >= 0x80 else chr(value)

    return _SHOWN_BYTE.sub(byte, text)


def escape_surrogates(text: str) -> str:
    """``text`` with each lone surrogate (a non-UTF-8 byte of a name) as ``\\xNN``: text that
    can be stored and sent as UTF-8, every other character kept."""
    return _SURROGATE.sub(_shown, text)


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def json_safe(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) whose DEL, C1 controls and lone
    surrogates are written as ``\\u`` escapes: the same JSON value, safe on a terminal and
    encodable as UTF-8."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m[0]):04x}", text)


_JSON_UNSAFE = re.compile(r"[\x7f-\x9f\ud800-\udfff]")

# The SGR parameters a view keeps: reset, bold, dim, italic, underline and their resets, the
# colours (foreground, background, bright; 38/48 with their 5;n or 2;r;g;b). Blink, reverse,
# conceal, strike-through and the rest are dropped.
_KEPT_SGR = frozenset(
    {0, 1, 2, 3, 4, 22, 23, 24, 39, 49, *range(30, 38), *range(40, 48), *range(90, 98)}
    | set(range(100, 108))
)


def keep_sgr(text: str) -> str:
    """``text`` with each SGR sequence cut to the parameters ``_KEPT_SGR`` names and every
    other escape sequence and control character dropped: what a view may render as colour."""
    if ESC not in text:
        return strip_escapes(text)

    out: list[str] = []
    at = 0
    for match in ESCAPES.finditer(text):
        out.append(_CONTROL.sub(_dropped, text[at : match.start()]))
        sgr = _SGR.fullmatch(match[0])
        kept = _sgr_params(sgr[1]) if sgr is not None else []
        if kept:
            out.append(f"\x1b[{';'.join(kept)}m")
        at = match.end()
    out.append(_CONTROL.sub(_dropped, text[at:]))
    return "".join(out)


def _sgr_params(raw: str) -> list[str]:
    """The kept parameters of one SGR's list (``1;38;5;196;8`` → ``1;38;5;196``)."""
    if raw == "":
        return ["0"]
    parts = raw.replace(":", ";").split(";")
    kept: list[str] = []
    i = 0
    while i < len(parts):
        part = parts[i]
        code = int(part) if part.isdigit() else -1
        if part == "":
            code = 0
        if code in (38, 48):  # an extended colour: 5;n or 2;r;g;b
            mode = parts[i + 1] if i + 1 < len(parts) else ""
            width = 3 if mode == "5" else 5 if mode == "2" else 0
            group = parts[i : i + width]
            if width and len(group) == width and all(p.isdigit() for p in group[1:]):
                kept.extend(group)
                i += width
                continue
            return kept  # malformed: nothing after it can be read reliably
        if code in _KEPT_SGR:
            kept.append(str(code))
        i += 1
    return kept
