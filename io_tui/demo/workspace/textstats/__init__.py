"""Small text statistics."""

from textstats.core import most_common, reading_time_minutes, word_count

__all__ = ["most_common", "reading_time_minutes", "word_count"]
