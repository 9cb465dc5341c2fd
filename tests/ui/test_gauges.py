"""Gauges in plain words that fit their width, the context breakdown and the cache hit rate."""

from __future__ import annotations

from textual.app import App, ComposeResult

from io_tui.ui.widgets.gauges import ContextBar, Gauge, cache_hit_rate, context_breakdown

SECTIONS = [
    {"name": "system", "source": "harness", "est_tokens": 195, "fixed": True},
    {"name": "tools", "source": "11 tool schemas", "est_tokens": 1824, "fixed": True},
    {"name": "contract", "source": "task", "est_tokens": 47, "fixed": True},
    {"name": "AGENTS.md", "source": "AGENTS.md", "est_tokens": 43, "fixed": True},
    {"name": "memory", "source": "store", "est_tokens": 65, "fixed": False},
    {"name": "turns", "source": "assistant turns", "est_tokens": 230, "fixed": False},
]


def test_the_breakdown_splits_the_frame_and_the_window() -> None:
    """The frame (fixed sections) is system / tools / instructions; inside the ceiling the
    memory block, the history (everything else) and what is left free."""
    breakdown = context_breakdown(
        10, SECTIONS, est_tokens=3234, frame_tokens=2109, ceiling_tokens=1200
    )
    assert dict(breakdown.parts) == {
        "system": 195 + 47,
        "tools": 1824,
        "instructions": 43,
        "memory": 65,
        "history": 3234 - 2109 - 65,
        "free": 1200 - (3234 - 2109),
    }
    over = context_breakdown(3, SECTIONS, est_tokens=3500, frame_tokens=2109, ceiling_tokens=1200)
    assert dict(over.parts)["free"] == 0  # past the ceiling: nothing free, never negative


def test_the_cache_hit_rate_is_reads_over_the_prompt() -> None:
    assert cache_hit_rate({"prompt_tokens": 4000, "cache_read_tokens": 3000}) == 0.75
    assert cache_hit_rate({"prompt_tokens": 4000, "cache_read_tokens": 0}) == 0.0
    assert cache_hit_rate(None) is None and cache_hit_rate({"prompt_tokens": 0}) is None


class Gauges(App[None]):
    def compose(self) -> ComposeResult:
        yield Gauge("counted", id="gauge")
        yield ContextBar(id="context")


async def _lines(width: int) -> list[str]:
    app = Gauges()
    async with app.run_test(size=(width, 6)) as pilot:
        gauge = app.query_one(Gauge)
        gauge.update(
            3900,
            None,
            "estimated 3,234, 21% low",
            figures="3,900 tok by the provider",
            short="3,900 vs est. 3,234",
            ratio=0.83,
            alarm=False,
        )
        app.query_one(ContextBar).breakdown = context_breakdown(10, SECTIONS, 3234, 2109, 1200)
        await pilot.pause()
        lines = []
        for widget in (gauge, app.query_one(ContextBar)):
            lines += [strip.text for strip in widget.render_lines(widget.region.reset_offset)]
        return lines


async def test_wide_gauges_say_everything_in_words() -> None:
    lines = await _lines(120)
    assert "3,900 tok by the provider  estimated 3,234, 21% low" in lines[0]
    assert "■ system 242 7%" in lines[2] and "■ instructions 43 1%" in lines[2]
    assert "■ free 75 2%" in lines[3]


async def test_narrow_gauges_take_their_short_form_and_never_run_off() -> None:
    lines = await _lines(44)
    assert "3,900 vs est. 3,234" in lines[0] and not gauge_overflows(lines, 44)
    assert "■ instr. 43" in lines[2] and "■ free 75" in lines[3]


def gauge_overflows(lines: list[str], width: int) -> bool:
    return any(len(line.rstrip()) > width for line in lines)
