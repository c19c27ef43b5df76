"""Record values as callers see them: ``Record`` (built from a backend's stored text or from a dict) and
``copy_value``, the deep copy every compare-and-set starts from."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from milpa_chat.store import Record
from milpa_chat.store.base import copy_value

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
