"""Each result shape says what it should, whatever the channel (checked on the composed message)."""

from __future__ import annotations

from typing import Any

import pytest

from milpa_chat.renderers import (
    Actions,
    CliRenderer,
    Fields,
    Heading,
    ItemList,
    Message,
    Note,
    Table,
    compose_result,
)
from milpa_chat.runtime.result import ToolResult

from .samples import BASE_META, NOTES, results

SAMPLES = results()


def _text(message: Message) -> str:
    return CliRenderer().render_message(message)


def _blocks(message: Message, kind: type) -> list[Any]:
    return [b for b in message.blocks if isinstance(b, kind)]


def test_generic_success_shows_message_then_data_as_fields() -> None:
    message = compose_result(SAMPLES["success_dict"])
    assert message.blocks[0] == Heading("Note saved", "✅")
    fields = dict(_blocks(message, Fields)[0].items)
    assert fields == {
        "Id": "7", "Title": "Buy milk", "Tags": '["home", "urgent"]', "Owner": '{"name": "Ana"}',
        "Done": "no", "Due": "—", "Price": "3.5",
    }  # fmt: skip
    assert message.tone == "success" and message.summary == "Note saved"


def test_scalars_lists_and_records() -> None:
    assert "42" in _text(compose_result(SAMPLES["success_scalar"]))
    assert _blocks(compose_result(SAMPLES["success_list"]), ItemList)[0].items == ("alpha", "beta", "gamma")
    table = _blocks(compose_result(SAMPLES["success_records"]), Table)[0]
    assert table.columns == ("Id", "Title", "Done", "Tags") and table.title_columns == 2
    assert table.rows[0] == ("11", "Buy milk", "no", '["home"]')
    assert compose_result(ToolResult.success()).blocks == (Heading("Done", "✅"),)


def test_a_long_message_moves_below_a_short_heading() -> None:
    message = compose_result(ToolResult.success(None, "word " * 40))
    assert message.blocks[0] == Heading("Done", "✅")


def test_paginated_page_has_page_note_and_buttons_carrying_the_ref() -> None:
    message = compose_result(SAMPLES["list_page"])
    assert Note("Page 2 of 8 · 23 items in total") in message.blocks
    assert [(b.label, b.callback_data) for b in message.buttons] == [
        ("◀ Previous", "page:ls_4f2a:1"), ("Next ▶", "page:ls_4f2a:3"),
    ]  # fmt: skip
    first = compose_result(ToolResult.paginated(NOTES, 1, 23, 3))
    assert [b.callback_data for b in first.buttons] == ["page:2"]
    only = compose_result(ToolResult.paginated(NOTES, 1, 3, 3))
    assert only.buttons == ()
    assert "No results found." in _text(compose_result(SAMPLES["list_empty"]))


def test_detail_shows_the_entity_and_turns_actions_into_buttons() -> None:
    message = compose_result(SAMPLES["detail"])
    assert message.blocks[0] == Heading("Note", "🔎")
    assert [(b.label, b.action, b.ref, b.style) for b in message.buttons] == [
        ("Mark done", "done", "12", "primary"), ("Delete", "delete", "12", "danger"),
    ]  # fmt: skip
    # an action no button can carry is still offered, as text
    assert Note("Other actions: ArchiveArchiveArchive (archive:now)") in message.blocks


def test_the_registry_confirm_gate_asks_to_confirm_the_summary() -> None:
    message = compose_result(SAMPLES["confirmation_gate"])
    text = _text(message)
    assert "Run `delete_note(note_id=7)`?" in text
    assert "Expires at 2026-08-15 14:08 UTC" in text
    assert "0123456789abcdef" not in text, "the confirm token is a secret"
    ref = BASE_META["request_id"]
    assert [b.callback_data for b in message.buttons] == [f"confirm:{ref}", f"cancel:{ref}"]
    assert message.tone == "warning"


def test_a_tool_confirmation_shows_its_details_and_target() -> None:
    message = compose_result(SAMPLES["confirmation_tool"])
    assert "Delete note 'Buy milk'?" in _text(message)
    assert Note("delete note #7") in message.blocks
    assert [b.callback_data for b in message.buttons] == ["confirm:note:7", "cancel:note:7"]
    with_ref = compose_result(SAMPLES["confirmation_tool"].with_meta(ref="ap_1"))
    assert [b.callback_data for b in with_ref.buttons] == ["confirm:ap_1", "cancel:ap_1"]


def test_blocked_gives_reason_and_suggestion() -> None:
    text = _text(compose_result(SAMPLES["blocked"]))
    assert "Deleting notes is blocked on Fridays." in text
    assert "Suggestion: Archive it instead, or wait until Monday." in text


def test_validation_errors_list_each_field() -> None:
    message = compose_result(SAMPLES["error_validation"])
    assert message.blocks[0] == Heading("Invalid arguments", "⚠️")
    assert _blocks(message, ItemList)[0].items == (
        "page: Input should be a valid integer",
        "query: Missing required field",
    )
    assert Note(f"Tool: delete_note · Request: {BASE_META['request_id']}") in message.blocks
    joined = compose_result(ToolResult.error("a: bad; b: worse", code="VALIDATION_ERROR"))
    assert _blocks(joined, ItemList)[0].items == ("a: bad", "b: worse")
    in_meta = compose_result(
        ToolResult.error("x", meta={"errors": [{"loc": ["a", 0], "msg": "m"}]}, code="VALIDATION_ERROR")
    )
    assert _blocks(in_meta, ItemList)[0].items == ("a.0: m",)


@pytest.mark.parametrize(
    ("name", "heading", "expected"),
    [
        ("error_forbidden", "Not allowed", "Missing required scope: notes:write"),
        ("error_rate_limited", "Too many requests", "Try again in 42 seconds."),
        ("error_tool_not_found", "Unknown tool", "Did you mean `delete_note`?"),
        ("error_internal", "Something went wrong", "Internal error while running delete_note"),
        ("error_plain", "Error", "Something odd happened"),
    ],
)
def test_each_error_code_says_what_happened(name: str, heading: str, expected: str) -> None:
    message = compose_result(SAMPLES[name])
    assert isinstance(message.blocks[0], Heading) and message.blocks[0].text == heading
    assert expected in _text(message) and message.tone == "danger"


def test_tool_not_found_says_did_you_mean_once() -> None:
    text = _text(compose_result(SAMPLES["error_tool_not_found"]))
    assert text.count("Did you mean") == 1 and "Tool not found: delet_note." in text
    closest = compose_result(
        ToolResult.error(
            "Tool not found: lst", meta={"tool": "lst", "available": ["list", "last", "zzz"]}, code="TOOL_NOT_FOUND"
        )
    )
    assert "Did you mean `list` or `last`?" in _text(closest) or "Did you mean `last` or `list`?" in _text(closest)


def test_rate_limited_without_a_time_still_says_to_wait() -> None:
    text = _text(compose_result(ToolResult.error("slow down", meta={"retry_after_seconds": None}, code="RATE_LIMITED")))
    assert "Try again in a little while." in text
    assert "Try again in 1 second." in _text(
        compose_result(ToolResult.error("x", meta={"retry_after_seconds": 1}, code="RATE_LIMITED"))
    )


def test_plan_mode_is_a_dry_run() -> None:
    text = _text(compose_result(SAMPLES["plan"]))
    assert "Dry run: delete_note" in text and "Nothing was run (plan mode)." in text and '"note_id": 7' in text


def test_soft_timeout_is_mentioned() -> None:
    assert "Took 31.25 s, longer than its 30 s limit." in _text(compose_result(SAMPLES["success_timeout"]))


def test_a_failed_result_with_a_success_shape_is_shown_as_an_error() -> None:
    odd = ToolResult(False, [1, 2], None, "list failed", {"type": "list"})
    assert compose_result(odd).blocks[0] == Heading("Error", "❌")


def test_limits_shorten_and_offer_the_whole_result() -> None:
    big = ToolResult.success([{"id": i, "name": "n" * 10} for i in range(1000)])
    message = compose_result(big)
    assert message.truncated and Note("… and 900 more items") in message.blocks
    document = message.document()
    assert document is not None and document.filename == "result.json"
    assert b'"id": 999' in document.content
    text = compose_result(ToolResult.success("x" * 10_000))
    assert text.truncated and "… [+7,000 characters]" in _text(text)
    assert text.document() is not None and text.document().filename == "result.txt"  # type: ignore[union-attr]


def test_results_are_redacted_unless_asked_not_to() -> None:
    shown = _text(compose_result(SAMPLES["success_secrets"]))
    assert "sk-live-1" not in shown and "Bearer x" not in shown and "cs-1" not in shown
    assert "***REDACTED***" in shown and "mail" in shown and "ana" in shown
    raw = _text(compose_result(SAMPLES["success_secrets"], redact=False))
    assert "sk-live-1" in raw
    assert b"sk-live-1" not in compose_result(SAMPLES["success_secrets"]).document().content  # type: ignore[union-attr]


def test_actions_block_is_last() -> None:
    for result in SAMPLES.values():
        blocks = compose_result(result).blocks
        actions = [i for i, b in enumerate(blocks) if isinstance(b, Actions)]
        assert actions in ([], [len(blocks) - 1])
