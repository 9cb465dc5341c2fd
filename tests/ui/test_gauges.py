"""Gauges in plain words that fit their width, and the context breakdown."""

from __future__ import annotations

from textual.app import App, ComposeResult

from io_tui.ui.widgets.gauges import ContextBar, Gauge, context_breakdown

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


def test_the_breakdown_adds_up_to_the_calibrated_figures_it_sits_beside() -> None:
    """The request's totals are calibrated (the provider's tokens), its sections the engine's
    raw estimate: scaled, the frame's parts add up to the frame the inspector and the trace
    show ("+ 2,169 always sent"), and the whole bar to the frame and the ceiling. (Once the
    raw sections were added to calibrated totals: 307 + 2,334 + 40 + 930 + 470 = 4,081 for a
    request of 3,099.)"""
    demo = [  # the demo's step 6, as stored
        {"name": "system", "est_tokens": 264, "fixed": True},
        {"name": "tools", "est_tokens": 2334, "fixed": True},
        {"name": "contract", "est_tokens": 42, "fixed": True},
        {"name": "AGENTS.md", "est_tokens": 40, "fixed": True},
        {"name": "memory", "est_tokens": 60, "fixed": False},
        {"name": "turns", "est_tokens": 102, "fixed": False},
    ]
    calibration = {"factor": 3099 / 3829, "tools_counted": True}
    parts = dict(context_breakdown(6, demo, 3099, 2169, 1400, calibration).parts)
    assert parts["system"] + parts["tools"] + parts["instructions"] == 2169
    assert sum(parts.values()) == 2169 + 1400
    assert parts["history"] + parts["memory"] == 3099 - 2169
    assert parts["tools"] == round(2334 * 3099 / 3829) and parts["memory"] == round(
        60 * 3099 / 3829
    )
    # a server seen dropping the tool schemas: they are not in the frame, nor in the bar
    dropped = {"factor": 1.0, "tools_counted": False}
    parts = dict(context_breakdown(6, demo, 346 + 162, 346, 1400, dropped).parts)
    assert parts["tools"] == 0 and parts["system"] + parts["instructions"] == 346


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
            short="3,900, est. 21% low",
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
    assert lines[0].rstrip().endswith("3,900, est. 21% low")  # no stub of the note beside it
    assert not gauge_overflows(lines, 44)
    assert "■ instr. 43" in lines[2] and "■ free 75" in lines[3]


def gauge_overflows(lines: list[str], width: int) -> bool:
    return any(len(line.rstrip()) > width for line in lines)


async def test_figures_that_do_not_fit_are_cut_with_a_mark() -> None:
    """Without a short form that fits, the figures end in "…", never mid-word without a sign
    (the budgets pane at 80×24 said "no cache figures from" and "no count from the")."""
    app = Gauges()
    async with app.run_test(size=(40, 6)) as pilot:
        gauge = app.query_one(Gauge)
        gauge.update(None, None, figures="no count from the provider yet", alarm=False)
        await pilot.pause()
        line = gauge.render_lines(gauge.region.reset_offset)[0].text.rstrip()
        assert line.endswith("…") and "no count" in line and len(line) <= 40
