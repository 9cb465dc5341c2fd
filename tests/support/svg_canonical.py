"""Canonical form of a Textual SVG screenshot, for comparing pictures rather than markup.

Rich numbers an SVG's style classes in the order it first meets each style, blank cells
included, so two identical pictures can carry different class numbers when an invisible blank
cell's style changes. The canonical form keeps every visible fact — each text run, its position
and its resolved style, each background rect — and renumbers the classes by first use.
"""

from __future__ import annotations

import re

_TERMINAL_ID = re.compile(r"\bterminal-\d+-([\w-]+)")
_RULE = re.compile(r"^\s*\.terminal-(r\d+) \{ (.*) \}\s*$", re.M)
_USE = re.compile(r'class="terminal-(r\d+)"')


def canonical_svg(svg: str) -> str:
    svg = _TERMINAL_ID.sub(r"terminal-\1", svg)
    rules = dict(_RULE.findall(svg))
    if not rules:
        return svg
    order: dict[str, str] = {}  # resolved rule text -> canonical class name
    renamed: dict[str, str] = {}

    def rename(match: re.Match[str]) -> str:
        old = match.group(1)
        if old not in renamed:
            text = rules.get(old, old)
            renamed[old] = order.setdefault(text, f"c{len(order) + 1}")
        return f'class="terminal-{renamed[old]}"'

    body = _USE.sub(rename, svg)
    style = "\n".join(f"    .terminal-{name} {{ {text} }}" for text, name in order.items())
    first = _RULE.search(body)
    assert first is not None
    body = _RULE.sub("", body)
    return body[: first.start()] + style + body[first.start() :]
