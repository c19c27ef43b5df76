"""Record values as callers see them: ``Record`` (built from a backend's stored text or from a dict),
``copy_value`` (a deep copy as through JSON) and ``encode_parts`` (a value encoded once, re-encoding only the
fields a write changes)."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from milpa_chat.errors import StoreError
from milpa_chat.store import MemoryStore, Record
from milpa_chat.store.base import Encoded, check_text, copy_value, encode_parts

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5),
    max_leaves=40,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=8)


@given(json_objects)
def test_copy_value_equals_a_json_round_trip_and_shares_no_container(value: dict[str, Any]) -> None:
    copied = copy_value(value)
    assert copied == json.loads(json.dumps(value))

    def containers(tree: Any) -> list[int]:
        if isinstance(tree, dict):
            return [id(tree), *(i for v in tree.values() for i in containers(v))]
        if isinstance(tree, list):
            return [id(tree), *(i for v in tree for i in containers(v))]
        return []

    assert not set(containers(copied)) & set(containers(value))


def test_copy_value_turns_tuples_into_lists_as_json_would() -> None:
    value = {"pair": (1, {"x": (2, 3)})}
    assert copy_value(value) == json.loads(json.dumps(value)) == {"pair": [1, {"x": [2, 3]}]}


def test_a_copy_changes_independently_of_its_original() -> None:
    value = {"cards": [{"chat_id": "1", "shown": None}], "lease": {"until": 1.0}}
    copied = copy_value(value)
    copied["cards"][0]["shown"] = "k1"
    copied["lease"]["until"] = 2.0
    copied["cards"].append({"chat_id": "2"})
    assert value == {"cards": [{"chat_id": "1", "shown": None}], "lease": {"until": 1.0}}


@given(json_objects)
def test_a_record_from_stored_text_equals_one_from_its_value(value: dict[str, Any]) -> None:
    text = json.dumps(value)
    stored = Record.from_text("c", "k", text, 2, 1.0, 2.0, None, 5.0)
    built = Record("c", "k", json.loads(text), 2, 1.0, 2.0, None, 5.0)
    assert stored == built and stored.value == built.value
    assert repr(stored) == repr(built)
    assert stored.value is stored.value  # decoded once: a caller's changes to it stay on this record


def test_records_copy_and_pickle_like_values() -> None:
    record = Record.from_text("c", "k", '{"a": [1, 2]}', 3, 1.0, 2.0, 9.0, None)
    for again in (copy.deepcopy(record), pickle.loads(pickle.dumps(record)), copy.copy(record)):
        assert again == record and again.value == {"a": [1, 2]} and again.expires_at == 9.0
    assert copy.deepcopy(record).value is not record.value


def test_records_are_immutable_and_unhashable() -> None:
    record = Record.from_text("c", "k", '{"a": 1}', 1, 1.0, 1.0)
    with pytest.raises(AttributeError, match="immutable"):
        record.version = 2
    with pytest.raises(AttributeError, match="immutable"):
        del record.key
    with pytest.raises(TypeError):
        hash(record)
    assert record != Record("c", "k", {"a": 2}, 1, 1.0, 1.0) and record != ("c", "k")


# ------------------------------------------------------------------ a value encoded once, in parts
scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()


@given(json_objects, st.dictionaries(st.text(max_size=8), json_values, max_size=4), st.sets(st.text(max_size=8)))
def test_encoding_in_parts_writes_what_check_text_writes(
    base: dict[str, Any], changes: dict[str, Any], dropped: set[str]
) -> None:
    text, parts = encode_parts("c", "k", base)
    assert text == check_text("c", "k", base) and json.loads(text) == json.loads(json.dumps(base))
    value = {k: v for k, v in base.items() if k not in dropped}
    value.update(changes)  # changed, added and removed fields; every other one is base's own object
    again, _ = encode_parts("c", "k", value, base, parts)
    assert again == check_text("c", "k", value)
    assert check_text("c", "k", Encoded(value, again)) == again


@given(json_objects, scalars)
def test_a_part_is_reused_only_for_the_very_object_it_was_made_from(base: dict[str, Any], other: Any) -> None:
    _, parts = encode_parts("c", "k", base)
    value = {k: copy_value({"v": v})["v"] for k, v in base.items()}  # equal values, other objects (but None...)
    value["x"] = other
    # a wrong part for every field whose object is another one: never used
    stale = {k: part if value[k] is base[k] else '"stale":0' for k, part in parts.items()}
    assert encode_parts("c", "k", value, base, stale)[0] == check_text("c", "k", value)


def test_encoding_in_parts_refuses_what_check_text_refuses() -> None:
    base = {"a": 1, "b": [1, 2]}
    _, parts = encode_parts("c", "k", base)
    circular: dict[str, Any] = {"a": 1}
    circular["self"] = circular
    for bad in ({**base, "n": float("nan")}, {**base, "s": {1, 2}}, {**base, "b": [object()]}, circular):
        with pytest.raises(StoreError, match="c/k is not JSON-serialisable"):
            check_text("c", "k", bad)
        with pytest.raises(StoreError, match="c/k is not JSON-serialisable"):
            encode_parts("c", "k", bad, base, parts)
    with pytest.raises(StoreError, match="must be a JSON object"):
        encode_parts("c", "k", [1, 2])  # type: ignore[arg-type]
    odd: dict[Any, Any] = {**base, 1: "one", 2.5: True, None: None}  # keys JSON makes strings of, as check_text
    assert encode_parts("c", "k", odd, base, parts)[0] == check_text("c", "k", odd)


async def test_an_encoded_value_is_stored_as_its_text_unless_changed_at_the_top() -> None:
    store = MemoryStore()
    value = {"state": "pending", "cards": [{"shown": None}]}
    text, _ = encode_parts("c", "k", value)
    encoded = Encoded(value, text)
    assert encoded == value and json.loads(json.dumps(encoded)) == value
    await store.insert("c", "k", encoded)
    stored = await store.get("c", "k")
    assert stored is not None and stored.value == value
    for change in (
        lambda e: e.__setitem__("state", "approved"),
        lambda e: e.update(state="approved"),
        lambda e: e.pop("cards"),
        lambda e: e.setdefault("new", 1),
        lambda e: e.__delitem__("cards"),
        lambda e: e.clear(),
        lambda e: e.popitem(),
        lambda e: e.__ior__({"state": "approved"}),
    ):
        changed = Encoded(value, text)
        change(changed)
        await store.put("c", "k", changed)
        stored = await store.get("c", "k")
        assert stored is not None and stored.value == json.loads(json.dumps(dict(changed)))
