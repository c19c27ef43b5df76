"""Whatever text a drafter hands in, the reader answers with a grant or an InvalidGrant that says what was wrong."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from milpa_chat.command.grants import Canonical, InvalidGrant, StandingGrant
from tests.command.grants import builders as b

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)
_paths = st.sampled_from(
    [
        ("id",), ("to",), ("operations",), ("ceiling",), ("conditions",), ("falsifier",), ("undo",), ("expires_at",),
        ("supersedes",), ("lifts",), ("ceiling", "mutation"), ("ceiling", "escalates_on"), ("falsifier", "window"),
        ("falsifier", "by"), ("operations", 0, "arguments"), ("conditions", 0, "by", "free"), ("note",),
    ]
)  # fmt: skip


def _read(text: str | bytes) -> None:
    try:
        grant = StandingGrant.from_json(text)
    except InvalidGrant as refused:
        message = str(refused)
        assert refused.field and message.isprintable() and len(message) < 2_000
        return
    assert StandingGrant.from_json(grant.to_json()) == grant


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes(data: bytes) -> None:
    _read(data)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(b.text()) - 1), st.text(max_size=4))
def test_the_document_with_a_few_characters_changed(at: int, inserted: str) -> None:
    text = b.text()
    _read(text[:at] + inserted + text[at + len(inserted) :])


@settings(max_examples=300, deadline=None)
@given(_paths, _json)
def test_any_value_at_any_field(path: tuple[Any, ...], value: Any) -> None:
    data = b.document()
    target: Any = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    try:
        text = json.dumps(data, allow_nan=False)
    except ValueError:
        return
    _read(text)
    try:
        StandingGrant.from_dict(data)
    except InvalidGrant as refused:
        assert Canonical.one_line(str(refused)) and str(refused).isprintable()
