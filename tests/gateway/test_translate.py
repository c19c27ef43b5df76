"""OpenAI chat format <-> Anthropic Messages translation, without HTTP."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings

from milpa_chat.gateway.translate import (
    MalformedResponseError,
    anthropic_tools,
    from_anthropic,
    from_openai,
    object_schema,
    openai_tools,
    parse_arguments,
    to_anthropic,
    tool_spec,
)
from milpa_chat.testing.llm.wire import anthropic_problem, openai_problem
from tests.gateway.strategies import histories


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


# --- outbound ------------------------------------------------------------------------------------


def test_every_system_message_goes_to_the_top_level_system_text() -> None:
    request = to_anthropic(
        [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": "hi"},
            {"role": "system", "content": [{"type": "text", "text": "Plan: say hi."}]},
        ]
    )
    assert request.system == "You are terse.\nPlan: say hi."
    assert request.messages == [{"role": "user", "content": "hi"}]


def test_no_system_message_means_no_system_text() -> None:
    assert to_anthropic([{"role": "user", "content": "hi"}]).system is None


def test_assistant_tool_calls_become_tool_use_blocks_with_parsed_input_and_kept_ids() -> None:
    request = to_anthropic(
        [
            {"role": "user", "content": "add"},
            {
                "role": "assistant",
                "content": "Let me add.",
                "tool_calls": [_call("call_A", "add", '{"a": 1, "b": "ü"}'), _call("call_B", "noop", "")],
            },
            {"role": "tool", "tool_call_id": "call_A", "content": "3"},
            {"role": "tool", "tool_call_id": "call_B", "content": "ok"},
        ]
    )
    assert request.messages[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me add."},
            {"type": "tool_use", "id": "call_A", "name": "add", "input": {"a": 1, "b": "ü"}},
            {"type": "tool_use", "id": "call_B", "name": "noop", "input": {}},
        ],
    }
    # consecutive tool messages are one user turn of tool_result blocks
    assert request.messages[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_A", "content": "3"},
            {"type": "tool_result", "tool_use_id": "call_B", "content": "ok"},
        ],
    }
    assert len(request.messages) == 3


@pytest.mark.parametrize("arguments", ["", "[]", "null", "not json", '"text"', "[1, 2]", "{}"])
def test_arguments_that_are_not_an_object_are_sent_as_an_empty_object(arguments: str) -> None:
    assert parse_arguments(arguments) == {}
    blocks = to_anthropic([{"role": "assistant", "tool_calls": [_call("c", "t", arguments)]}]).messages[0]["content"]
    assert blocks[0]["input"] == {}
    assert json.dumps(blocks[0]["input"]) == "{}"


def test_a_user_message_after_tool_results_joins_their_turn_after_the_results() -> None:
    request = to_anthropic(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [_call("c1", "t", "{}")]},
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
            {"role": "user", "content": "and now?"},
        ]
    )
    assert request.messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c1", "content": "done"},
        {"type": "text", "text": "and now?"},
    ]
    assert anthropic_problem({"model": "m", "max_tokens": 5, "messages": request.messages}) is None


def test_blank_text_is_dropped_and_empty_turns_vanish() -> None:
    request = to_anthropic(
        [
            {"role": "user", "content": "one"},
            {"role": "assistant", "content": "  "},
            {"role": "user", "content": "two"},
        ]
    )
    assert request.messages == [
        {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}
    ]


def test_user_content_parts_and_images_are_translated() -> None:
    request = to_anthropic(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
                    {"type": "image_url", "image_url": {"url": "https://example.org/cat.png"}},
                ],
            }
        ]
    )
    assert request.messages[0]["content"][1:] == [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
        {"type": "image", "source": {"type": "url", "url": "https://example.org/cat.png"}},
    ]


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ([{"role": "tool", "content": "x"}], "tool_call_id"),
        ([{"role": "assistant", "tool_calls": [{"function": {"name": "t"}}]}], "'id'"),
        ([{"role": "wizard", "content": "x"}], "unknown role 'wizard'"),
    ],
)
def test_malformed_histories_are_refused_with_the_index(messages: list[dict[str, Any]], fragment: str) -> None:
    with pytest.raises(ValueError, match="messages\\[0\\]") as info:
        to_anthropic(messages)
    assert fragment in str(info.value)


# --- tools ---------------------------------------------------------------------------------------


def test_tool_shapes_are_read_from_summaries_openai_tools_and_definitions() -> None:
    class Definition:
        name = "from_object"
        description = "d"
        input_schema: ClassVar[dict[str, Any]] = {"type": "object", "properties": {"x": {}}, "required": ["x"]}

    specs = [
        tool_spec({"name": "summary", "description": "s", "inputSchema": {"properties": {"q": {"type": "string"}}}}),
        tool_spec({"type": "function", "function": {"name": "openai", "parameters": {"type": "object"}}}),
        tool_spec({"name": "anthropic", "input_schema": {"type": "object", "properties": []}}),
        tool_spec(Definition()),
    ]
    assert [s.name for s in specs] == ["summary", "openai", "anthropic", "from_object"]
    assert specs[0].schema == {"type": "object", "properties": {"q": {"type": "string"}}}
    assert specs[1].schema == {"type": "object", "properties": {}}
    assert specs[2].schema["properties"] == {}
    assert specs[3].schema["required"] == ["x"]


def test_empty_properties_become_an_empty_object_in_both_formats() -> None:
    summaries = [{"name": "get_time", "description": "Get the current time", "inputSchema": []}]
    assert anthropic_tools(summaries) == [
        {
            "name": "get_time",
            "description": "Get the current time",
            "input_schema": {"type": "object", "properties": {}},
        }
    ]
    assert openai_tools(summaries)[0] == {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Get the current time",
            "parameters": {"type": "object", "properties": {}},
        },
    }
    assert json.dumps(object_schema(None)) == '{"type": "object", "properties": {}}'


def test_a_tool_without_a_name_is_refused() -> None:
    with pytest.raises(ValueError, match="name"):
        tool_spec({"description": "nameless"})


# --- inbound -------------------------------------------------------------------------------------


def test_content_blocks_flatten_into_text_and_tool_calls() -> None:
    message = from_anthropic(
        [
            {"type": "thinking", "thinking": "hmm", "signature": "x"},
            {"type": "text", "text": "Checking "},
            {"type": "text", "text": "twice."},
            {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "ñandú/1"}},
            {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}},
        ]
    )
    assert message == {
        "role": "assistant",
        "content": "Checking twice.",
        "tool_calls": [
            {"id": "toolu_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q":"ñandú/1"}'}},
            {"id": "toolu_2", "type": "function", "function": {"name": "now", "arguments": "{}"}},
        ],
    }


def test_text_only_and_missing_content_have_no_tool_calls_key() -> None:
    assert from_anthropic([{"type": "text", "text": "hi"}]) == {"role": "assistant", "content": "hi"}
    assert from_anthropic(None) == {"role": "assistant", "content": ""}


def test_openai_messages_are_normalised() -> None:
    raw = {
        "role": "assistant",
        "content": None,
        "refusal": None,
        "annotations": [],
        "tool_calls": [_call("call_1", "t", '{"a":1}')],
    }
    assert from_openai(raw) == {"role": "assistant", "content": "", "tool_calls": [_call("call_1", "t", '{"a":1}')]}
    assert from_openai({"role": "assistant", "content": None, "refusal": "I can't help with that."}) == {
        "role": "assistant",
        "content": "I can't help with that.",
    }
    with pytest.raises(MalformedResponseError):
        from_openai({"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {}}]})
    with pytest.raises(MalformedResponseError):
        from_openai(None)


# --- properties ----------------------------------------------------------------------------------


def _assistant_text(message: dict[str, Any]) -> str:
    text = message.get("content") or ""
    return text if text.strip() else ""


@settings(max_examples=300, deadline=None)
@given(histories())
def test_translated_histories_are_valid_for_both_apis(messages: list[dict[str, Any]]) -> None:
    assert openai_problem({"model": "gpt-test", "messages": messages}) is None
    request = to_anthropic(messages)
    assert anthropic_problem({"model": "claude-test", "max_tokens": 10, "messages": request.messages}) is None
    systems = [m["content"] for m in messages if m["role"] == "system"]
    assert request.system == ("\n".join(systems).strip() or None)


@settings(max_examples=300, deadline=None)
@given(histories())
def test_flattening_back_preserves_ids_names_arguments_and_text(messages: list[dict[str, Any]]) -> None:
    request = to_anthropic(messages)
    assistants = [m for m in messages if m["role"] == "assistant" and (_assistant_text(m) or m.get("tool_calls"))]
    translated = [m for m in request.messages if m["role"] == "assistant"]
    assert len(translated) == len(assistants)  # histories never hold two assistant turns in a row
    for original, sent in zip(assistants, translated, strict=True):
        blocks = sent["content"] if isinstance(sent["content"], list) else [{"type": "text", "text": sent["content"]}]
        back = from_anthropic(blocks)
        assert back["content"] == _assistant_text(original)
        want = [
            (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in original.get("tool_calls", [])
        ]
        got = [
            (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"])) for c in back.get("tool_calls", [])
        ]
        assert got == want
    results = [b for m in request.messages if isinstance(m["content"], list) for b in m["content"]]
    sent_results = [(b["tool_use_id"], b["content"]) for b in results if b["type"] == "tool_result"]
    assert sent_results == [(m["tool_call_id"], m["content"]) for m in messages if m["role"] == "tool"]
