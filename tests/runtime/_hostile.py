"""A seeded generator of hostile tool-call payloads, and a store that fails when told to.

Used by the fuzz test: types a JSON decoder never produces, sizes and nesting far past the
limits, NaN/Infinity, lone surrogates in keys and values, integers past Python's 4,300-digit
``str()`` limit, non-string keys, and ``confirm_token`` / ``verification_id`` of every type.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any

from milpa_chat.errors import StoreError


class Nasty:
    """An object whose every conversion fails."""

    def __str__(self) -> str:
        raise RuntimeError("str of a Nasty")

    def __repr__(self) -> str:
        raise RuntimeError("repr of a Nasty")

    def __hash__(self) -> int:
        return 7

    def __eq__(self, other: object) -> bool:
        raise RuntimeError("eq of a Nasty")


class Colour(enum.Enum):
    RED = "red"


HUGE = 10**5000
WEIRD_STRINGS = [
    "",
    "\ud800",
    "a\udfffb",
    "\x00",
    "\u202e" * 50,
    "💥" * 1000,
    "x" * 200_000,
    "confirm_token",
    "../../etc/passwd",
    "%s%n",
    "{}",
    "null",
    "NaN",
]
WEIRD_SCALARS: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    2**63,
    -(2**1000),
    HUGE,
    -HUGE,
    float("nan"),
    float("inf"),
    float("-inf"),
    -0.0,
    1e308,
    5e-324,
    Decimal("NaN"),
    Decimal("1e999999"),
    1 + 2j,
    b"bytes",
    bytearray(b"\xff"),
    Colour.RED,
    object(),
    Nasty(),
    type,
    len,
    Ellipsis,
    NotImplemented,
]
WEIRD_KEYS: list[Any] = [
    1,
    None,
    1.5,
    float("nan"),
    (1, 2),
    frozenset(),
    True,
    b"k",
    "\ud800",
    "",
    "a" * 5000,
    "confirm_token",
    "verification_id",
    "_ctx",
    "__class__",
    Nasty(),
    Colour.RED,
]


_BUILT: dict[tuple[Any, ...], Any] = {}


def built(key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
    """Big values are built once per run and shared (no tool changes its arguments)."""
    if key not in _BUILT:
        _BUILT[key] = make()
    return _BUILT[key]


def deep(depth: int, kind: str) -> Any:
    return built(("deep", depth, kind), lambda: _deep(depth, kind))


def _deep(depth: int, kind: str) -> Any:
    node: Any = "leaf"
    for _ in range(depth):
        node = {"x": node} if kind == "dict" else [node]
    return node


def self_referencing() -> Any:
    d: dict[str, Any] = {"a": 1}
    d["self"] = d
    lst: list[Any] = [1]
    lst.append(lst)
    return d if random.random() < 0.5 else lst


class Hostile:
    """Seeded: the same seed gives the same payloads."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)

    def scalar(self) -> Any:
        r = self.r
        pick = r.random()
        if pick < 0.35:
            return r.choice(WEIRD_SCALARS)
        if pick < 0.65:
            return r.choice(WEIRD_STRINGS)
        if pick < 0.8:
            return r.randint(-(10**30), 10**30)
        if pick < 0.9:
            return r.uniform(-1e6, 1e6)
        return "".join(chr(r.choice([r.randint(0, 0x10FFFF), r.randint(0xD800, 0xDFFF)])) for _ in range(8))

    def key(self) -> Any:
        return self.r.choice(WEIRD_KEYS) if self.r.random() < 0.3 else self.r.choice(["a", "b", "query", "x", "k"])

    def value(self, budget: int = 3) -> Any:
        r = self.r
        pick = r.random()
        if budget <= 0 or pick < 0.45:
            return self.scalar()
        if pick < 0.6:
            return {self.key(): self.value(budget - 1) for _ in range(r.randint(0, 4))}
        if pick < 0.72:
            return [self.value(budget - 1) for _ in range(r.randint(0, 4))]
        if pick < 0.76:
            return tuple(self.value(budget - 1) for _ in range(r.randint(0, 3)))
        if pick < 0.79:
            return {r.choice([1, "s", None, (1, 2), float("nan"), "\ud800"]), "s"}
        if pick < 0.84:
            return deep(r.choice([50, 200, 1_000, 10_000, 50_000]), r.choice(["dict", "list"]))
        if pick < 0.87:
            size, item = r.choice([1_000, 100_000, 1_000_000]), r.choice(["s", 1, None])
            return built(("list", size, item), lambda: [item] * size)
        if pick < 0.89:
            size = r.choice([1_000, 100_000])
            return built(("dict", size), lambda: {f"k{i}": i for i in range(size)})
        if pick < 0.9:
            return self_referencing()
        return self.scalar()

    def args(self, fields: list[str]) -> Any:
        r = self.r
        pick = r.random()
        if pick < 0.04:
            return r.choice([None, [], "args", 5, [("a", 1)], Nasty(), {1: 2}])
        out: dict[Any, Any] = {}
        for name in fields:
            if r.random() < 0.7:
                out[name] = self.value() if r.random() < 0.6 else self.plausible(name)
        for _ in range(r.randint(0, 2)):
            out[self.key()] = self.value()
        if r.random() < 0.25:
            out["confirm_token"] = self.value(1) if r.random() < 0.8 else self.r.choice(WEIRD_STRINGS)
        if r.random() < 0.15:
            out["verification_id"] = self.value(1)
        return out

    def plausible(self, name: str) -> Any:
        return {
            "query": "milk",
            "page": 3,
            "tags": ["a", "b"],
            "note_id": 5,
            "colour": "red",
            "mode": "fast",
            "blob": {"a": [1, {"b": None}]},
            "person": {"name": "Ana", "age": 30},
            "items": [{"a": 1}],
            "amount": 12.5,
        }.get(name, "x")


STORE_CALLS = frozenset(
    {
        "get",
        "insert",
        "put",
        "update",
        "update_with",
        "take",
        "delete",
        "scan",
        "due",
        "append",
        "read",
        "trim",
        "hit",
        "purge_expired",
    }
)


class FailingStore:
    """Wraps a store; ``fail(every=n, kind=StoreError | OSError)`` makes every n-th call raise."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.every = 0
        self.kind: Callable[[str], BaseException] = StoreError
        self.calls = 0
        self.raised = 0

    def fail(self, every: int, kind: Callable[[str], BaseException] = StoreError) -> None:
        self.every, self.kind = every, kind

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.inner, name)
        if name not in STORE_CALLS:
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            if self.every and self.calls % self.every == 0:
                self.raised += 1
                raise self.kind(f"injected failure of {name}")
            return await attr(*args, **kwargs)

        return call


def describe(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:
        return "<unreprable>"
    return text if len(text) < 200 else text[:200] + "..."


def as_mapping(value: Any) -> Mapping[str, Any] | None:
    return value if isinstance(value, Mapping) else None
