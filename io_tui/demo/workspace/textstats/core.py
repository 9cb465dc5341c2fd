"""Counting words, finding the most common ones, and estimating reading time."""

from __future__ import annotations

import math
import re
from collections import Counter

WORD = re.compile(r"[A-Za-z']+")
WORDS_PER_MINUTE = 230


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased, punctuation dropped."""
    return [w.lower() for w in WORD.findall(text)]


def word_count(text: str) -> int:
    """How many words ``text`` holds."""
    return len(text.split(" "))


def most_common(text: str, n: int = 3) -> list[tuple[str, int]]:
    """The ``n`` most frequent words with their counts, most frequent first."""
    return Counter(words(text)).most_common(n)


def reading_time_minutes(text: str) -> int:
    """Whole minutes needed to read ``text`` at a steady pace (at least one)."""
    return max(1, math.ceil(word_count(text) / WORDS_PER_MINUTE))
