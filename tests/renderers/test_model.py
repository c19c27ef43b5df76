"""The message model: buttons valid on every channel, callback data, plain-data export."""

from __future__ import annotations

import pytest

from milpa_chat.renderers import Actions, Button, Code, Heading, Message, Paragraph, Span, parse_callback_data


def test_button_data_is_action_colon_ref() -> None:
    button = Button("✅ Approve", "approve", "ap_7Kq2mZ", "primary")
    assert button.callback_data == "approve:ap_7Kq2mZ"
    assert parse_callback_data(button.callback_data) == ("approve", "ap_7Kq2mZ")


def test_ref_may_contain_colons() -> None:
    assert parse_callback_data(Button("Next", "page", "ls_1:3").callback_data) == ("page", "ls_1:3")


def test_button_data_over_64_bytes_is_refused_with_the_limit_in_the_message() -> None:
    Button("ok", "approve", "x" * 56)  # 8 + 56 = 64 bytes: fits exactly
    with pytest.raises(ValueError, match=r"65 bytes; Telegram's callback_data allows 64.*at most 56"):
        Button("ok", "approve", "x" * 57)


def test_the_limit_counts_utf8_bytes_not_characters() -> None:
    with pytest.raises(ValueError, match="bytes"):
        Button("ok", "go", "ñ" * 31)  # 3 + 62 = 65 bytes in 34 characters


@pytest.mark.parametrize("action", ["", "a:b", "two words", "ñ"])
def test_bad_actions_are_refused(action: str) -> None:
    with pytest.raises(ValueError, match="action"):
        Button("ok", action, "1")


@pytest.mark.parametrize("ref", ["a\nb", "\u202eevil", "\x1b[31m"])
def test_refs_with_hidden_or_control_characters_are_refused(ref: str) -> None:
    with pytest.raises(ValueError, match="ref"):
        Button("ok", "go", ref)


def test_labels_must_be_present_and_fit_slack() -> None:
    with pytest.raises(ValueError, match="empty"):
        Button("  ", "go", "1")
    with pytest.raises(ValueError, match="76 characters; Slack allows 75"):
        Button("x" * 76, "go", "1")
    with pytest.raises(ValueError, match="style"):
        Button("ok", "go", "1", "loud")  # type: ignore[arg-type]


@pytest.mark.parametrize("data", ["approve", ":x", "a b:c", "x:" + "y" * 63])
def test_parse_refuses_data_no_button_makes(data: str) -> None:
    with pytest.raises(ValueError, match="button data"):
        parse_callback_data(data)


def test_message_lists_its_buttons_and_exports_plain_data() -> None:
    yes, no = Button("Yes", "confirm", "1", "primary"), Button("No", "cancel", "1")
    message = Message(
        (
            Heading("Title", "✅"),
            Paragraph.of("Run ", Span("rm", "code"), "?"),
            Code("{}", "json"),
            Actions.row(yes, no),
        ),
        "summary",
    )
    assert message.buttons == (yes, no)
    assert message.document() is None
    exported = message.to_dict()
    assert exported["blocks"][0] == {"type": "heading", "text": "Title", "icon": "✅"}
    assert exported["blocks"][1]["spans"][1] == {"text": "rm", "style": "code"}
    assert exported["blocks"][3]["rows"][0][0] == {
        "label": "Yes", "action": "confirm", "ref": "1", "style": "primary", "data": "confirm:1",
    }  # fmt: skip
