"""JSON the store writes as it is, and the cache that encodes a request's long lists once.

A request carries every message and manifest entry of its window, and consecutive requests of a
run share almost all of them (the same objects: the context engine reuses what it emitted). So
each object is encoded once while requests keep carrying it, and a list's JSON is the join of
those pieces: the same text ``json.dumps`` writes for the whole list.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any


class JSONText(str):
    """Text that is already JSON: the store writes it unchanged instead of encoding it."""


def dumps(value: Any) -> str:
    """``value`` as the store writes it: JSON text as is, anything else through ``json.dumps``."""
    return value if isinstance(value, JSONText) else json.dumps(value)


def with_list(head: dict[str, Any], key: str, encoded: str) -> JSONText:
    """``json.dumps({**head, key: value})`` where ``encoded`` is ``json.dumps(value)`` and ``key``
    is not in ``head`` (so it comes last)."""
    assert key not in head
    text = json.dumps(head)
    sep = ", " if head else ""
    return JSONText(f"{text[:-1]}{sep}{json.dumps(key)}: {encoded}}}")


class ListEncoder:
    """Encodes lists of immutable objects, each object once for as long as consecutive calls
    keep passing it (one list's worth is remembered: the objects of the last call)."""

    def __init__(self, to_json: Callable[[Any], Any]) -> None:
        self.to_json = to_json
        self._texts: dict[int, tuple[Any, str]] = {}  # id -> (the object, kept alive; its JSON)

    def encode(self, items: Iterable[Any]) -> JSONText:
        """``json.dumps([to_json(i) for i in items])``."""
        old, new = self._texts, {}
        parts = []
        for item in items:
            hit = old.get(id(item))
            if hit is None or hit[0] is not item:
                hit = (item, json.dumps(self.to_json(item)))
            new[id(item)] = hit
            parts.append(hit[1])
        self._texts = new
        return JSONText(f"[{', '.join(parts)}]")
