"""Slack: Block Kit limits (kept in step with slack_sdk), mrkdwn escaping, fallback text."""

from __future__ import annotations

from slack_sdk.models.blocks import ActionsBlock, ButtonElement, ContextBlock, HeaderBlock, SectionBlock

from milpa_chat.renderers import (
    Actions,
    Button,
    Fields,
    Heading,
    Message,
    Paragraph,
    SlackRenderer,
    Span,
)
from milpa_chat.renderers import slack as slack_module
from milpa_chat.runtime.result import ToolResult

from .checks import check_slack

SLACK = SlackRenderer()


def test_our_limits_are_slack_sdks_limits() -> None:
    assert SectionBlock.text_max_length == slack_module.SECTION_TEXT
    assert SectionBlock.fields_max_length == slack_module.SECTION_FIELDS
    assert HeaderBlock.text_max_length == slack_module.HEADER_TEXT
    assert ButtonElement.text_max_length == slack_module.BUTTON_TEXT
    assert ActionsBlock.elements_max_length == slack_module.ACTION_ELEMENTS
    assert ContextBlock.elements_max_length >= 1


def _render(message: Message) -> list[dict[str, object]]:
    payload = SLACK.render_message(message)
    check_slack(payload)
    return payload.blocks


def test_many_fields_become_sections_of_ten() -> None:
    blocks = _render(Message((Fields(tuple((f"k{i}", f"v{i}") for i in range(25))),), "s"))
    assert [len(b["fields"]) for b in blocks] == [10, 10, 5]  # type: ignore[arg-type]


def test_a_long_header_is_clipped() -> None:
    header = _render(Message((Heading("h" * 400, "✅"),), "s"))[0]
    assert header["text"]["text"].endswith("…") and len(header["text"]["text"]) == 150  # type: ignore[index]


def test_more_than_fifty_blocks_are_cut_keeping_the_buttons() -> None:
    fields = [Fields(((f"k{i}", "v"),)) for i in range(80)]
    message = Message((*fields, Actions.row(Button("Go", "go", "1"))), "s", full=None)
    payload = SLACK.render_message(message)
    check_slack(payload)
    assert len(payload.blocks) == 50 and payload.blocks[-1]["type"] == "actions"
    assert payload.blocks[-2] == {"type": "context", "elements": [
        {"type": "mrkdwn", "text": "Shortened for Slack.", "verbatim": True}]}  # fmt: skip


def test_huge_results_stay_within_the_text_budget_and_come_with_a_document() -> None:
    payload = SLACK.render(ToolResult.success([{"id": i, "name": "n" * 50} for i in range(1000)]))
    check_slack(payload)
    assert payload.document is not None and payload.document.filename == "result.json"
    assert payload.blocks[-1]["type"] == "context"
    assert "result.json" in payload.blocks[-1]["elements"][0]["text"]


def test_mrkdwn_control_sequences_from_data_are_escaped_not_acted_on() -> None:
    payload = SLACK.render(ToolResult.success({"who": "<!channel> <@U1> <http://x|y> & co"}, "<!here>"))
    check_slack(payload)
    assert payload.text == "&lt;!here&gt;"
    field = payload.blocks[1]["fields"][0]
    assert field == {
        "type": "mrkdwn",
        "text": "*Who*\n&lt;!channel&gt; &lt;@U1&gt; &lt;http://x|y&gt; &amp; co",
        "verbatim": True,
    }


def test_data_with_mrkdwn_markers_is_sent_as_plain_text() -> None:
    payload = SLACK.render(ToolResult.success({"amount": "~100~ *1000*", "file": "delete_note_v2"}))
    check_slack(payload)
    amount, file = payload.blocks[1]["fields"]
    assert amount == {"type": "plain_text", "text": "Amount\n~100~ *1000*", "emoji": False}
    assert file["type"] == "mrkdwn"  # an underscore inside a word formats nothing


def test_bold_spans_keep_their_spaces_outside_the_markers() -> None:
    section = _render(Message((Paragraph.of(Span(" Why: ", "bold"), "because"),), "s"))[0]
    assert section["text"]["text"] == " *Why:* because"  # type: ignore[index]


def test_buttons_have_unique_action_ids_and_callback_values() -> None:
    payload = SLACK.render(ToolResult.paginated([1, 2], 2, 10, 2))
    check_slack(payload)
    elements = payload.blocks[-1]["elements"]
    assert [(e["action_id"], e["value"]) for e in elements] == [("milpa:page:0", "page:1"), ("milpa:page:1", "page:3")]


def test_fallback_text_is_one_short_line() -> None:
    payload = SLACK.render(ToolResult.success(None, "a\nb " + "c" * 1000))
    assert "\n" not in payload.text and len(payload.text) <= 301 and payload.text.startswith("a b ccc")
