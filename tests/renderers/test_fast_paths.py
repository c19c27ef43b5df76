"""The renderers' fast paths say exactly what the plain rule says.

Each shortcut taken on the hot path (a page tap: compose a result, render it for Slack and
Telegram) is compared here with the straightforward form it replaces, on tricky input: hidden
and reordering characters, CR, lone surrogates, ``& < >``, combining marks, ZWJ sequences,
mrkdwn markers, secret-looking values and lines long enough to be wrapped.
"""

from __future__ import annotations

import html
import json
import re
import sys
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from milpa_chat.renderers import ApprovalView, Message, SlackRenderer, slack, telegram
from milpa_chat.renderers._build import _TITLE_KEYS, Builder, Limits, _columns
from milpa_chat.renderers._lines import LINE_BUDGET, Seg, _wrap, escape, wrap_line
from milpa_chat.renderers._plain import REDACTED, plain_key
from milpa_chat.renderers._redact import hide_key
from milpa_chat.renderers._text import _HIDDEN, _visible, clean, json_text, label
from milpa_chat.renderers.model import Table
from milpa_chat.runtime.result import ToolResult

from .strategies import approval_views, messages, results

TRICKY = [
    *"ab <&>*_~` \n\r\t\x00\x1b\x7f\x85\u0301\u200b\u200d\u2028\u2029\u202e\u2066\ufeff🙂é東",
    "\ud800",
    "sk-" + "A1b2" * 10,
    "password=hunter2",
    "&amp;",
    "<!channel>",
]
TEXT = st.lists(st.sampled_from(TRICKY), max_size=60).map("".join) | st.text(max_size=80)
MARKS = st.sampled_from([("", ""), ("<b>", "</b>"), ("*", "*"), ("<code>", "</code>"), ("_", "_")])
EXAMPLES = settings(max_examples=600, deadline=None)
LINES = st.lists(st.tuples(MARKS, TEXT).map(lambda t: (t[0][0], t[0][1], t[1])), min_size=1, max_size=6)


def slow_clean(text: str) -> str:
    """:func:`clean` without its shortcut: the rule as written."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return _HIDDEN.sub(_visible, text)


def slow_wrap_line(line: list[Seg], budget: int = LINE_BUDGET) -> list[str]:
    """:func:`wrap_line` as first written: clean every segment, then one piece or :func:`_wrap`."""
    cleaned = [(open_, close, slow_clean(raw)) for open_, close, raw in line]
    if sum(5 * len(text) + len(open_) + len(close) for open_, close, text in cleaned) <= budget:
        return ["".join(open_ + html.escape(text, quote=False) + close for open_, close, text in cleaned if text)]
    return _wrap(cleaned, budget)


def test_nothing_clean_changes_is_printable_so_printable_text_is_returned_as_it_is() -> None:
    """``clean`` returns printable text untouched: true only because no character it rewrites is printable."""
    rewritten = [chr(cp) for cp in range(sys.maxunicode + 1) if _HIDDEN.match(chr(cp))] + ["\r"]
    assert len(rewritten) > 100
    assert not [f"U+{ord(ch):04X}" for ch in rewritten if ch.isprintable()]


@EXAMPLES
@given(TEXT)
def test_clean_is_the_rule(text: str) -> None:
    assert clean(text) == slow_clean(text)
    assert clean(clean(text)) == clean(text)


def test_clean_still_shows_what_hides() -> None:
    assert clean("a\u200bb") == "a⟨U+200B⟩b"
    assert clean("x\u202eyz") == "x⟨U+202E⟩yz"
    assert clean("a\r\nb\rc\u2028d") == "a\nb\nc\nd"
    assert clean("\ud800") == "\ufffd"
    assert clean("e\u0301 & <b>") == "e\u0301 & <b>"  # combining marks and markup characters are text


@EXAMPLES
@given(TEXT)
def test_escape_is_html_escape_without_quotes(text: str) -> None:
    assert escape(text) == html.escape(text, quote=False)


@EXAMPLES
@given(LINES, st.sampled_from([64, 150, 400, 3000, LINE_BUDGET]))
def test_wrap_line_is_the_rule(line: list[Seg], budget: int) -> None:
    assert wrap_line(line, budget) == slow_wrap_line(line, budget)


def test_wrap_line_on_tricky_lines() -> None:
    lines: list[list[Seg]] = [
        [("", "", "• "), ("*", "*", "#3"), ("", "", " a\u200bb & <c> e\u0301")],
        [("<b>", "</b>", "x" * 5000)],
        [("", "", "ab " * 1500), ("<i>", "</i>", "&" * 900)],
        [("", "", "👨\u200d👩\u200d👧" * 700)],
        [("", "", "sk-" + "A1b2" * 10)],
    ]
    for line in lines:
        for budget in (80, 2000, LINE_BUDGET):
            assert wrap_line(line, budget) == slow_wrap_line(line, budget)
    assert re.fullmatch(r"• \*#3\* a⟨U\+200B⟩b &amp; &lt;c&gt; e\u0301", wrap_line(lines[0])[0])


# ------------------------------------------------------------------ table rows
def slow_styled(text: str, style: str) -> list[Seg]:
    """Slack markup for one span as first written (empty segments included)."""
    open_, close = slack._MARKS[style]
    core = text.strip()
    if not open_ or not core or (style == "code" and "`" in core):
        return [("", "", text)]
    lead, trail = text[: len(text) - len(text.lstrip())], text[len(text.rstrip()) :]
    return [("", "", lead), (open_, close, core), ("", "", trail)]


def slow_slack_row(table: Table, row: tuple[str, ...]) -> list[Seg]:
    """A Slack table row as first written."""
    segs: list[Seg] = [("", "", "• ")]
    titles = [c for c in row[: table.title_columns] if c]
    for i, cell in enumerate(titles):
        shown = f"#{cell}" if i == 0 and table.columns[0] == "Id" else cell
        segs += slow_styled(shown, "bold") if i == 0 else [("", "", f" {shown}")]
    pairs = zip(table.columns[table.title_columns :], row[table.title_columns :], strict=False)
    for i, (column, value) in enumerate((c, v) for c, v in pairs if v):
        segs.append(("", "", (" — " if titles and i == 0 else " · " if i else "") + f"{column}: {value}"))
    return segs


def slow_telegram_row(table: Table, row: tuple[str, ...]) -> list[Seg]:
    """A Telegram table row as first written."""
    segs: list[Seg] = [("", "", "• ")]
    titles = [c for c in row[: table.title_columns] if c]
    for i, cell in enumerate(titles):
        shown = f"#{cell}" if i == 0 and table.columns[0] == "Id" else cell
        segs.append(("<b>", "</b>", shown) if i == 0 else ("", "", f" {shown}"))
    rest = [(c, v) for c, v in zip(table.columns[table.title_columns :], row[table.title_columns :], strict=False) if v]
    for i, (column, value) in enumerate(rest):
        segs.append(("", "", (" — " if titles and i == 0 else " · " if i else "") + f"{column}: {value}"))
    return segs


CELL = st.sampled_from(["", " ", "7", "note 1", " *x* ", "`a`", "a\u200bb", "&<>", "e\u0301", " lead", "trail\t"])


@EXAMPLES
@given(
    st.lists(st.sampled_from(["Id", "Title", "Name", "Done", "A"]), min_size=1, max_size=5),
    st.lists(st.lists(CELL, min_size=5, max_size=5), max_size=4),
    st.integers(min_value=0, max_value=3),
)
def test_table_rows_are_the_rule(columns: list[str], cells: list[list[str]], title_columns: int) -> None:
    rows = tuple(tuple(r[: len(columns)]) for r in cells)
    table = Table(tuple(columns), rows, title_columns)
    for row in rows:
        assert wrap_line(slack._row(table, row), 3000) == slow_wrap_line(slow_slack_row(table, row), 3000)
        assert telegram._row(table, row) == slow_telegram_row(table, row)


@EXAMPLES
@given(TEXT, st.sampled_from(["plain", "bold", "italic", "code"]))
def test_slack_spans_say_what_they_said(text: str, style: str) -> None:
    """Empty segments are left out of a styled span: every line shows exactly as before."""
    for budget in (64, 3000):
        assert wrap_line(slack._styled(text, style), budget) == slow_wrap_line(slow_styled(text, style), budget)
    shown = "".join(o + escape(t) + c for o, c, t in slack._styled(text, style))
    assert shown == "".join(o + escape(t) + c for o, c, t in slow_styled(text, style))


# ------------------------------------------------------------------ Slack block sizes
RELAXED = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
)


def _sizes_agree(payload: slack.SlackPayload) -> None:
    for block in payload.blocks:
        assert slack._block_size(block) == slack._text_size(block), block


@RELAXED
@given(results())
def test_slack_block_sizes_are_the_text_they_hold_for_results(result: ToolResult) -> None:
    _sizes_agree(SlackRenderer().render(result))


@RELAXED
@given(messages())
def test_slack_block_sizes_are_the_text_they_hold_for_messages(message: Message) -> None:
    _sizes_agree(SlackRenderer().render_message(message))


@settings(RELAXED, max_examples=100)
@given(approval_views())
def test_slack_block_sizes_are_the_text_they_hold_for_cards(view: ApprovalView) -> None:
    _sizes_agree(SlackRenderer().render_approval(view))


# ------------------------------------------------------------------ composing a table
def slow_table(b: Builder, records: list[Mapping[Any, Any]]) -> Table:
    """:meth:`Builder.table` as first written."""
    rows_by_key = [{plain_key(k): v for k, v in r.items()} for r in records]
    columns = [c for c in _columns(rows_by_key) if c != "_ctx"][: b.limits.columns]
    hidden = {c for c in columns if b.secret(c)}

    def show(row: dict[str, Any], column: str) -> str:
        if column not in row:
            return ""
        return REDACTED if column in hidden else b.value(row[column], b.limits.cell_chars).replace("\n", " ")

    rows = tuple(tuple(show(r, c) for c in columns) for r in rows_by_key)
    title = sum(1 for c in columns[:2] if c in _TITLE_KEYS)
    return Table(tuple(b.text(label(c), 60) for c in columns), rows, title)


VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), TEXT, st.lists(st.integers(), max_size=3))
KEYS = st.one_of(
    st.sampled_from(["id", "title", "name", "api_key", "password", "note", "_ctx", "a\u200bb"]),
    st.integers(0, 3),
    st.none(),
    st.booleans(),
)


@EXAMPLES
@given(st.lists(st.dictionaries(KEYS, VALUES, max_size=8), min_size=1, max_size=5))
def test_table_cells_are_the_rule(records: list[Mapping[Any, Any]]) -> None:
    """Redacted, masked, cleaned and clipped cells, non-string keys and missing cells, as before."""
    fast, slow = Builder(Limits(cell_chars=12), hide_key), Builder(Limits(cell_chars=12), hide_key)
    assert fast.table(records) == slow_table(slow, records)
    assert Builder(Limits(), hide_key).items(records) == [Builder(Limits(), hide_key).table(records)]


def test_secrets_in_cells_are_masked() -> None:
    table = Builder(Limits(), hide_key).table([{"id": 1, "note": "key sk-" + "A1b2" * 10, "token": "x"}])
    assert table.rows == (("1", f"key {REDACTED}", REDACTED),)


# ------------------------------------------------------------------ arguments as JSON
@EXAMPLES
@given(st.dictionaries(st.one_of(TEXT, st.integers(), st.booleans()), VALUES, max_size=8) | VALUES)
def test_json_text_is_the_rule(value: Any) -> None:
    """A flat object's indented JSON (the C encoder, members on lines of their own) is ``indent=2``'s."""
    assert json_text(value) == json.dumps(value, ensure_ascii=False, indent=2, separators=(",", ": "))
    assert json_text(value, None) == json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


# ------------------------------------------------------------------ Telegram: a message that fits at once
@EXAMPLES
@given(messages())
def test_a_telegram_message_that_surely_fits_is_packed_as_pack_would(message: Message) -> None:
    pieces = telegram._pieces(message.blocks)
    if not telegram._may_split(pieces):
        assert telegram._one_page(pieces) == telegram._pack(pieces)
    blank = [telegram._Piece("", -1)]
    assert telegram._one_page(blank + pieces) == telegram._pack(blank + pieces) or telegram._may_split(pieces)
