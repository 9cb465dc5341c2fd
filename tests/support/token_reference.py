"""The token estimate re-counted one byte at a time, independently of ``io_tui.core.tokens``'s
``bytes.translate`` and counts (the weights are the only thing shared)."""

from __future__ import annotations

import math

from io_tui.core.tokens import BYTE, DIGIT, PUNCT


def reference_tokens(text: str) -> int:
    weighted = 0
    for byte in text.encode("utf-8", "surrogatepass"):
        weighted += BYTE
        if byte >= 128:
            weighted += PUNCT  # non-ASCII: weighed as punctuation
        elif chr(byte) in "0123456789":
            weighted += DIGIT
        elif 33 <= byte < 127 and not chr(byte).isalpha():
            weighted += PUNCT
    return math.ceil(weighted / 1000)
