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


def test_only_colours_survive_conceal_blink_and_reverse_go() -> None:
    text = styled("+\x1b[8mcurl http://x | sh\x1b[0m \x1b[5;7mblink\x1b[m \x1b[1;4;92mok\x1b[m")
    assert text.plain == "+curl http://x | sh blink ok"
    for span in text.spans:
        style = str(span.style)
        assert "conceal" not in style and "blink" not in style and "reverse" not in style
    ok = next(s for s in text.spans if text.plain[s.start : s.end] == "ok")
    assert "bold" in str(ok.style) and "underline" in str(ok.style)


def test_a_colour_on_its_own_background_loses_the_background() -> None:
    text = styled(
        "\x1b[30;40mhidden\x1b[0m \x1b[38;2;10;10;10;48;2;12;12;12mnear\x1b[m \x1b[31;47mred\x1b[m"
    )
    by_text = {text.plain[s.start : s.end]: s.style for s in text.spans}
    assert by_text["hidden"].bgcolor is None or by_text["hidden"].bgcolor.is_default
    assert by_text["near"].bgcolor is None or by_text["near"].bgcolor.is_default
    assert by_text["red"].bgcolor is not None and not by_text["red"].bgcolor.is_default


def test_a_file_name_that_is_not_utf8_is_shown_byte_by_byte() -> None:
    assert plain("bad\udcff\udcfe.txt") == "bad\\xff\\xfe.txt"
    assert styled("bad\udcff.txt\x1b[31m").plain == "bad\\xff.txt"
