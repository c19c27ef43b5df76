"""Payload limits: hostile arguments are refused cheaply, before the validator, with the limit named."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from milpa_chat.errors import DeclarationError, MilpaError
from milpa_chat.runtime.definition import ArgumentError, InvalidArguments
from milpa_chat.runtime.limits import MAX_PROBLEMS, PayloadLimits, check_payload, payload_problems

LIMITS = PayloadLimits()


def _nested(depth: int, kind: str = "dict") -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value} if kind == "dict" else [value]
    return value


def _messages(value: Any, limits: PayloadLimits = LIMITS) -> list[str]:
    return [str(p) for p in payload_problems(value, limits)]


# ----------------------------------------------------------------------------- examples
def test_realistic_agent_call_passes() -> None:
    args = {
        "query": "notes about the trip to Oaxaca",
        "filters": {"tags": ["travel", "food"], "since": "2026-01-01", "limit": 50},
        "rows": [{"id": i, "title": f"row {i}", "done": i % 2 == 0, "score": i / 3} for i in range(500)],
        "body": "ünïcödé text " * 1000,
        "big_but_fine": 10**300,
    }
    assert payload_problems(args) == []
    check_payload(args)  # does not raise


class _Looked:
    """Counts the containers the walk opened (a mapping's items read, a list's values read)."""

    def __init__(self) -> None:
        self.opened = 0


class _CountedDict(Mapping[str, Any]):
    def __init__(self, looked: _Looked, data: dict[str, Any]) -> None:
        self.looked, self.data = looked, data

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def __len__(self) -> int:
        return len(self.data)

    def __iter__(self) -> Iterator[str]:
        self.looked.opened += 1
        return iter(self.data)


class _CountedList(list[Any]):
    looked: _Looked

    def __iter__(self) -> Iterator[Any]:
        self.looked.opened += 1
        return super().__iter__()


def _counted(looked: _Looked, value: Any) -> Any:
    if isinstance(value, dict):
        return _CountedDict(looked, {k: _counted(looked, v) for k, v in value.items()})
    if isinstance(value, list):
        counted = _CountedList(_counted(looked, v) for v in value)
        counted.looked = looked
        return counted
    return value


def _counted_nested(looked: _Looked, depth: int, kind: str) -> Any:
    value: Any = "leaf"
    for _ in range(depth):  # built level by level: _counted would recurse 10,000 deep
        if kind == "dict":
            value = _CountedDict(looked, {"a": value})
        else:
            value = _CountedList([value])
            value.looked = looked
    return value


def test_ten_thousand_deep_is_one_cheap_problem() -> None:
    for kind in ("dict", "list"):
        looked = _Looked()
        value = {"x": _counted_nested(looked, 10_000, kind)}
        started = time.perf_counter()
        problems = payload_problems(value)
        took = time.perf_counter() - started
        assert len(problems) == 1
        assert "nested deeper than 64 levels" in problems[0].message
        assert "PayloadLimits.max_depth" in problems[0].message
        assert "ToolRegistry(limits=PayloadLimits(max_depth=...))" in problems[0].message
        # cheap: the walk stopped at the limit, never opening the 9,936 levels below it
        assert looked.opened <= LIMITS.max_depth, looked.opened
        print(f"\n10,000 levels of {kind}: {looked.opened} opened, refused in {took * 1000:.2f} ms")


def test_million_items_stop_at_the_item_limit() -> None:
    looked = _Looked()
    item = _counted(looked, {"a": 1})
    value = {"items": _counted(looked, [item] * 1_000_000)}
    started = time.perf_counter()
    problems = payload_problems(value)
    took = time.perf_counter() - started
    assert [p.path for p in problems] == ["items"]
    assert "more than 10,000 values" in problems[0].message and "max_items" in problems[0].message
    # cheap: the million-item list was refused by its length; neither it nor any of its items was read
    assert looked.opened == 0, looked.opened
    print(f"\na million items: refused in {took * 1000:.2f} ms")


def test_nan_infinity_surrogates_keys_and_huge_ints_are_named_by_path() -> None:
    secret = "s3cr3t-\ud800-value"
    problems = payload_problems(
        {
            "x": float("nan"),
            "deep": {"list": [1, float("-inf")]},
            "confirm_token": "\ud800",
            "note": secret,
            "\udcff": 1,
            "ids": {7: "a"},
            "n": 10**5000,
        }
    )
    by_path = {p.path: p.message for p in problems}
    assert "NaN is not a JSON number" in by_path["x"]
    assert "Infinity is not a JSON number" in by_path["deep.list.1"]
    assert "lone surrogate" in by_path["confirm_token"]
    assert "lone surrogate" in by_path["'\\udcff'"]  # the path shows the bad key escaped
    assert "object key is of type int" in by_path["ids"]
    assert "about 5,001 digits" in by_path["n"] and "max_int_digits" in by_path["n"]
    text = "; ".join(str(p) for p in problems)
    assert "s3cr3t" not in text
    text.encode("utf-8")  # the messages themselves are always valid text


def test_long_strings_and_total_size() -> None:
    assert "max_string" in _messages({"s": "x" * 1_000_001})[0]
    assert "max_string" in _messages({"x" * 1_000_001: 1})[0]
    assert "max_string" in _messages({"b": b"x" * 1_000_001})[0]
    [problem] = payload_problems({"parts": ["y" * 900_000] * 5})
    assert problem.path == "" and "larger than 4,000,000 bytes as JSON" in problem.message
    assert "max_bytes" in problem.message
    assert payload_problems({"s": "x" * 1_000_000}) == []


def test_limits_are_configurable() -> None:
    small = PayloadLimits(max_depth=2, max_items=3, max_string=5, max_bytes=100, max_int_digits=3)
    assert payload_problems({"a": {"b": 1}}, small) == []
    assert "deeper than 2 levels" in _messages({"a": {"b": {}}}, small)[0]
    assert "more than 3 values" in _messages({"a": [1, 2, 3]}, small)[0]
    assert "longer than 5" in _messages({"a": "abcdef"}, small)[0]
    assert "more than 3" in _messages({"a": 1234}, small)[0]
    assert payload_problems({"a": 999}, small) == []
    bigger = PayloadLimits(max_depth=20_000, max_items=100_000)
    assert payload_problems({"x": _nested(10_000)}, bigger) == []


def test_check_payload_raises_invalid_arguments_a_milpa_error() -> None:
    with pytest.raises(InvalidArguments) as caught:
        check_payload({"x": float("nan")})
    assert isinstance(caught.value, MilpaError)
    assert caught.value.errors == [ArgumentError("x", "NaN is not a JSON number; send a finite number or null")]


def test_many_problems_are_capped() -> None:
    problems = payload_problems({"xs": [float("nan")] * 5000})
    assert len(problems) == MAX_PROBLEMS


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "64", None])
def test_bad_limits_fail_at_declaration(bad: Any) -> None:
    with pytest.raises(DeclarationError, match=r"PayloadLimits\(max_depth=\.\.\.\) must be a positive whole number"):
        PayloadLimits(max_depth=bad)


def test_cycles_do_not_hang() -> None:
    loop: list[Any] = []
    loop.append(loop)
    assert "nested deeper" in _messages({"loop": loop})[0]


# ---------------------------------------------------------------------- property tests
_HAZARDS = ("deep", "wide", "nan", "surrogate", "surrogate_key", "huge_int", "non_str_key", "long_string")
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(exclude_categories=["Cs"]), max_size=20),
)
_plain = st.recursive(
    _scalars,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=20,
)


def _hazard(kind: str, size: int) -> tuple[Any, Any]:
    """A hostile value and the key it goes under."""
    if kind == "deep":
        return "deep", _nested(65 + size * 50, "dict" if size % 2 else "list")
    if kind == "wide":
        return "wide", [size] * (10_001 + size * 20_000)
    if kind == "nan":
        return "nan", [float("nan"), float("inf"), float("-inf")][size % 3]
    if kind == "surrogate":
        return "s", "ok" + chr(0xD800 + size % 0x800)
    if kind == "surrogate_key":
        return "k" + chr(0xDC00 + size % 0x400), 1
    if kind == "huge_int":
        return "n", (-1) ** size * 10 ** (4_001 + size * 100)
    if kind == "non_str_key":
        return [size, None, 1.5, (1, 2), True][size % 5], "v"
    return "long", "z" * (1_000_001 + size)


_worst = {"seconds": 0.0, "checked": 0}


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.dictionaries(st.text(max_size=8), _plain, max_size=5),
    hazard=st.sampled_from(_HAZARDS),
    size=st.integers(0, 40),
    where=st.integers(0, 3),
)
def test_hostile_payloads_are_refused_cheaply(base: dict[str, Any], hazard: str, size: int, where: int) -> None:
    key, value = _hazard(hazard, size)
    payload: Any = dict(base)
    target = payload
    for i in range(where):  # bury the hazard a few levels down
        target[f"level{i}"] = {}
        target = target[f"level{i}"]
    target[key] = value
    started = time.perf_counter()
    problems = payload_problems(payload)
    took = time.perf_counter() - started
    _worst["seconds"] = max(_worst["seconds"], took)
    _worst["checked"] += 1
    assert problems, (hazard, size)
    assert len(problems) <= MAX_PROBLEMS
    for p in problems:
        str(p).encode("utf-8")  # a message never carries a surrogate on to the store or a log


@settings(max_examples=1500, deadline=None)
@given(st.dictionaries(st.text(max_size=8), _plain, max_size=6))
def test_accepted_payloads_are_json(payload: dict[str, Any]) -> None:
    """Whatever passes is valid JSON text (finite numbers, real Unicode, string keys)."""
    assert payload_problems(payload) == []
    json.dumps(payload, allow_nan=False, ensure_ascii=False).encode("utf-8")


def test_zz_print_the_worst_time() -> None:
    """Printed, not asserted (the machine is shared): run with -s to see it."""
    print(f"\nlimits: {_worst['checked']:,} hostile payloads checked, worst {_worst['seconds'] * 1000:.1f} ms")
    assert math.isfinite(_worst["seconds"])
