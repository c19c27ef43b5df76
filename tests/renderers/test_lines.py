"""Hard-wrapping one styled line for Telegram HTML and Slack mrkdwn: every piece fits its budget once
escaped, closes the markup it opens, and together the pieces say exactly the line, short or long."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from milpa_chat.renderers._lines import escape, wrap_line
from milpa_chat.renderers._text import clean, utf16_len

TEXT = st.text(alphabet=st.sampled_from(list("ab <&>*_ \n\u0301\u200d🙂é\u202e")), max_size=120)
MARKS = st.sampled_from([("", ""), ("<b>", "</b>"), ("*", "*"), ("<code>", "</code>")])
LINES = st.lists(st.tuples(MARKS, TEXT).map(lambda t: (t[0][0], t[0][1], t[1])), min_size=1, max_size=6)


@settings(max_examples=400, deadline=None)
@given(LINES, st.integers(min_value=64, max_value=400))
def test_pieces_fit_close_their_markup_and_say_the_whole_line(line: list[tuple[str, str, str]], budget: int) -> None:
    pieces = wrap_line(line, budget)
    assert pieces
    assert all(utf16_len(p) <= budget for p in pieces)
    shown = "".join(pieces)
    for open_, close, _ in line:
        if open_:
            shown = shown.replace(open_, "").replace(close, "")
    said = "".join(escape(clean(raw)) for _, _, raw in line)
    for open_, close, _ in line:
        if open_:
            said = said.replace(open_, "").replace(close, "")
    assert shown == said
    for piece in pieces:
        for open_, close, _ in line:
            if open_ and open_ != close:
                assert piece.count(open_) == piece.count(close)


def test_a_short_line_is_one_piece_with_its_markup() -> None:
    line = [("", "", "Total: "), ("<b>", "</b>", "3 < 4 & more")]
    assert wrap_line(line, 4000) == ["Total: <b>3 &lt; 4 &amp; more</b>"]
    assert wrap_line([("", "", "")], 100) == [""]
    assert wrap_line([("<b>", "</b>", "")], 100) == [""]
