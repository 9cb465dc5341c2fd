"""Text from runs reaches the terminal without escape sequences or control characters."""

from __future__ import annotations

from hypothesis import given, strategies as st

from io_tui.ui.terminal_text import plain, styled

# runs' text as it comes: printable text mixed with escapes, controls and fragments of both
PIECES = st.one_of(
    st.text(max_size=20),
    st.sampled_from(
        ["\x1b[31m", "\x1b[0m", "\x1b[2J", "\x1b[?25l", "\x1b]0;title\x07", "\x1b(B", "\x1b7",
         "\x1b", "\x1b[", "\x00", "\x07", "\x08", "\r", "\x7f", "\t", "\n", "[/]", "[bold]"]
    ),
)  # fmt: skip
RUN_TEXT = st.lists(PIECES, max_size=12).map("".join)
SAFE = set("\t\n")


def _is_safe(text: str) -> bool:
    return not any((ord(c) < 0x20 or ord(c) == 0x7F) and c not in SAFE for c in text)


@given(RUN_TEXT)
def test_no_escape_or_control_character_survives(text: str) -> None:
    assert _is_safe(plain(text))
    assert _is_safe(styled(text).plain)


@given(st.text(alphabet=st.characters(min_codepoint=0x20, blacklist_categories=["Cs", "Cc"])))
def test_printable_text_is_untouched(text: str) -> None:
    assert plain(text) == text
    assert styled(text).plain == text


def test_colours_become_styles_and_the_rest_goes() -> None:
    text = styled("FAILED \x1b[31mtest_x\x1b[0m\x1b[2J done\x1b]0;pwned\x07")
    assert text.plain == "FAILED test_x done"
    (span,) = [s for s in text.spans if s.end > s.start]
    assert text.plain[span.start : span.end] == "test_x"
    assert "color(1)" in str(span.style)
    assert plain("a\x1b[1;32mb\x1b[m\tc\r\n") == "ab\tc\n"
