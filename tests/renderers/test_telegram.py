"""Telegram: splitting at 4,096 UTF-16 units, keyboards, documents for shortened output."""

from __future__ import annotations

import pytest

from milpa_chat.renderers import (
    Actions,
    Button,
    Code,
    Heading,
    ItemList,
    Message,
    Paragraph,
    TelegramRenderer,
)
from milpa_chat.runtime.result import ToolResult

from .checks import check_telegram, telegram_visible, utf16

TELEGRAM = TelegramRenderer()


def _render(*blocks: object, max_messages: int = 50) -> list[str]:
    payload = TelegramRenderer(max_messages=max_messages).render_message(Message(tuple(blocks), "s"))  # type: ignore[arg-type]
    check_telegram(payload)
    return [m["text"] for m in payload.messages]


def test_long_output_is_split_between_lines() -> None:
    lines = [f"line {i} & <more>" for i in range(800)]
    texts = _render(Paragraph.of("\n".join(lines)))
    assert len(texts) > 1
    assert "\n".join(telegram_visible(t) for t in texts).split("\n") == lines  # nothing lost, no line cut


def test_a_code_block_cut_by_a_split_is_closed_and_reopened() -> None:
    code = "\n".join(f'  "key_{i}": "<value & {i}>",' for i in range(400))
    texts = _render(Heading("Args"), Code(code, "json"))
    assert len(texts) > 1
    for text in texts[1:]:
        assert text.startswith('<pre><code class="language-json">') and text.endswith("</code></pre>")
    shown = "\n".join(telegram_visible(t) for t in texts)
    assert shown.split("\n", 2)[2] == code


def test_a_single_huge_line_is_cut_without_breaking_entities_or_emoji() -> None:
    line = "&<>👍🏽e\u0301" * 2500
    texts = _render(Paragraph.of(line))
    assert "".join(telegram_visible(t) for t in texts) == line
    assert all(utf16(t) <= 4096 for t in texts)


def test_the_limit_counts_utf16_units() -> None:
    texts = _render(Paragraph.of("👍" * 3000))  # 3,000 characters, 6,000 UTF-16 units
    assert len(texts) == 2


def test_a_message_exactly_at_the_limit_is_not_split() -> None:
    lines = ["x" * 127] * 31 + ["x" * 128]  # 32 lines and 31 newlines: 4,096 characters
    assert len(_render(Paragraph.of("\n".join(lines)))) == 1
    assert len(_render(Paragraph.of("\n".join(lines) + "x"))) == 2


def test_too_many_messages_are_cut_and_the_whole_result_attached() -> None:
    result = ToolResult.success([f"item {i}: " + "word " * 30 for i in range(200)])
    payload = TelegramRenderer(max_messages=2).render(result)
    check_telegram(payload)
    assert len(payload.messages) == 2
    assert payload.messages[-1]["text"].endswith(
        "<i>Shortened for chat; the full content is in the attached file result.json.</i>"
    )
    assert payload.document is not None and b"item 199" in payload.document.content


def test_a_1000_item_page_keeps_its_buttons_on_the_last_message() -> None:
    items = [{"id": i, "title": f"Note {i}"} for i in range(1000)]
    payload = TELEGRAM.render(ToolResult.paginated(items, 2, 5000, 1000, "Notes", {"ref": "ls_9"}))
    check_telegram(payload)
    assert 1 < len(payload.messages) <= 5
    assert [b["callback_data"] for b in payload.messages[-1]["reply_markup"]["inline_keyboard"][0]] == [
        "page:ls_9:1", "page:ls_9:3",
    ]  # fmt: skip
    assert payload.document is not None  # 1,000 items are more than a chat shows


def test_a_huge_value_is_truncated_with_a_marker_and_attached() -> None:
    payload = TELEGRAM.render(ToolResult.success({"body": "x" * 1_000_000}))
    check_telegram(payload)
    assert len(payload.messages) == 1
    assert "… [+999,000 characters]" in payload.messages[0]["text"]
    assert payload.document is not None and payload.document.content.count(b"x") == 1_000_000


def test_keyboards_stay_within_telegram_limits() -> None:
    buttons = [Button(f"B{i}", "go", str(i)) for i in range(130)]
    payload = TELEGRAM.render_message(Message((Heading("Pick"), Actions((tuple(buttons),))), "s"))
    check_telegram(payload)
    rows = payload.messages[0]["reply_markup"]["inline_keyboard"]
    assert [len(r) for r in rows] == [8] * 12 + [4]


def test_messages_are_send_message_keyword_arguments() -> None:
    payload = TELEGRAM.render(ToolResult.success(1, "ok"))
    assert payload.messages == (
        {"text": "<b>✅ ok</b>\n\n1", "parse_mode": "HTML", "link_preview_options": {"is_disabled": True}},
    )
    assert payload.text == "<b>✅ ok</b>\n\n1"


def test_max_messages_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        TelegramRenderer(max_messages=0)


def test_empty_content_still_sends_text() -> None:
    assert _render(Code("   ", "")) == ["s"]
    assert _render(ItemList(())) == ["s"]
