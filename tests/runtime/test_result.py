"""ToolResult: fields, factories, helpers and the wire envelope."""

from __future__ import annotations

import json

import pytest

from milpa_chat import ErrorCode, ToolResult


def test_success_is_a_factory_on_the_class_and_a_field_on_an_instance() -> None:
    r = ToolResult.success({"notes": [], "page": 1}, "ok", {"x": 1})
    assert r.success is True
    assert (r.data, r.message, r.error, r.meta) == ({"notes": [], "page": 1}, "ok", None, {"x": 1})
    assert r.type == "generic"


def test_error_sets_type_and_code_and_overrides_a_callers_type() -> None:
    r = ToolResult.error("boom", {"f": 1}, {"type": "list", "k": "v"}, code=ErrorCode.FORBIDDEN)
    assert r.success is False and r.error == "boom" and r.data == {"f": 1}
    assert r.meta == {"type": "error", "k": "v", "code": "FORBIDDEN"}
    assert r.code == "FORBIDDEN"


@pytest.mark.parametrize(
    ("page", "total", "limit", "pages", "prev", "nxt"),
    [(1, 30, 10, 3, False, True), (3, 30, 10, 3, True, False), (1, 5, 10, 1, False, False), (2, 50, 10, 5, True, True)],
)
def test_paginated_flags(page: int, total: int, limit: int, pages: int, prev: bool, nxt: bool) -> None:
    r = ToolResult.paginated([], page, total, limit, extra_meta={"type": "x", "pagination": 1, "q": "a"})
    assert r.type == "list" and r.meta["q"] == "a"
    assert r.pagination == {
        "page": page,
        "total_pages": pages,
        "total_items": total,
        "limit": limit,
        "has_prev": prev,
        "has_next": nxt,
    }


def test_paginated_rejects_a_zero_page_size_with_a_clear_message() -> None:
    with pytest.raises(ValueError, match="limit must be a positive page size"):
        ToolResult.paginated([], 1, 10, 0)


def test_detail_confirmation_blocked_shapes() -> None:
    d = ToolResult.detail({"id": 5}, "note", "Note 5", [{"label": "Delete", "action": "delete_note"}])
    assert d.meta == {"type": "detail", "entity": "note", "actions": [{"label": "Delete", "action": "delete_note"}]}
    assert d.actions == [{"label": "Delete", "action": "delete_note"}]
    c = ToolResult.confirmation("Delete note 5?", {"id": 5}, "delete", "note", 5)
    assert c.meta == {
        "type": "confirmation",
        "requires_confirmation": True,
        "action": "delete",
        "target": "note",
        "target_id": 5,
    }
    assert c.requires_confirmation()
    b = ToolResult.blocked("Outside office hours")
    assert (b.success, b.error, b.meta) == (
        False,
        "Outside office hours",
        {"type": "blocked", "blocked_by_rule": True, "suggestion": None},
    )
    assert b.is_blocked()


def test_asks_for_confirmation_looks_at_meta_and_top_level_only() -> None:
    assert ToolResult.asks_for_confirmation({"meta": {"requires_confirmation": True}})
    assert ToolResult.asks_for_confirmation('{"requires_confirmation": true}')
    assert not ToolResult.asks_for_confirmation({"plan": {"requires_confirmation": True}})
    assert not ToolResult.asks_for_confirmation({"meta": {"requires_confirmation": 1}})
    assert not ToolResult.asks_for_confirmation("not json")
    assert not ToolResult.asks_for_confirmation("[1, 2]")


def test_confirm_token_and_with_meta() -> None:
    r = ToolResult.success({"confirm_token": "abc"})
    assert r.confirm_token == "abc"
    assert ToolResult.success([1]).confirm_token is None
    r2 = r.with_meta({"a": 1}, b=2)
    assert r2.meta == {"a": 1, "b": 2} and r.meta == {}


def test_results_are_immutable() -> None:
    r = ToolResult.success(1)
    with pytest.raises(AttributeError, match="immutable"):
        r.success = False


def test_json_envelope_round_trip_keeps_key_order_and_unicode() -> None:
    r = ToolResult.error("¡falló! 🚫 a/b", code="INTERNAL_ERROR")
    text = r.to_json()
    assert list(json.loads(text)) == ["success", "data", "message", "error", "meta"]
    assert "¡falló! 🚫 a/b" in text
    assert ToolResult.from_json(text) == r
    assert ToolResult.from_dict(r.to_dict()) == r


def test_from_dict_names_what_is_missing() -> None:
    with pytest.raises(ValueError, match="'success' key"):
        ToolResult.from_dict({"data": 1})
    with pytest.raises(ValueError, match="'meta' must be an object"):
        ToolResult.from_dict({"success": True, "meta": [1]})
