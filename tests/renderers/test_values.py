"""Turning any Python value into text: plain data, cleaning, clipping, labels, timestamps."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
from typing import Any

import pydantic

from milpa_chat.renderers import CliRenderer
from milpa_chat.renderers._build import when
from milpa_chat.renderers._plain import to_plain, to_plain_within
from milpa_chat.renderers._redact import hide_key
from milpa_chat.renderers._text import clean, clip, label, utf16_len
from milpa_chat.runtime.result import ToolResult


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: int


class User(pydantic.BaseModel):
    name: str
    joined: dt.date


def test_to_plain_converts_what_tools_return() -> None:
    cyclic: list[Any] = [1]
    cyclic.append(cyclic)
    plain = to_plain(
        {
            "model": User(name="Ana", joined=dt.date(2026, 1, 2)),
            "point": Point(1, 2),
            "colour": Colour.RED,
            "when": dt.datetime(2026, 8, 15, 14, 8, tzinfo=dt.UTC),
            "tags": {"a"},
            "pair": (1, 2),
            "blob": b"\x00\x01",
            "nan": float("nan"),
            "cyclic": cyclic,
            1: "int key",
            None: "none key",
            "obj": object.__new__(Unprintable),
        }
    )
    assert plain["model"] == {"name": "Ana", "joined": "2026-01-02"}
    assert plain["point"] == {"x": 1, "y": 2}
    assert plain["colour"] == "red"
    assert plain["when"] == "2026-08-15T14:08:00+00:00"
    assert (plain["tags"], plain["pair"], plain["blob"], plain["nan"]) == (["a"], [1, 2], "<2 bytes>", "nan")
    assert plain["cyclic"] == [1, "<cycle>"]
    assert plain["1"] == "int key" and plain["null"] == "none key"
    assert plain["obj"] == "<Unprintable>"


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")


def test_a_budget_converts_only_what_is_shown() -> None:
    big = {"items": list(range(10_000)), "password": "hunter2", "_ctx": object()}
    plain, cut = to_plain_within(big, hide_key, 50)
    assert cut and plain["password"] == "***REDACTED***" and "_ctx" not in plain
    assert plain["items"][-1] == "… 9,953 more" and len(plain["items"]) == 48
    assert to_plain_within({"a": [1, 2]}, None, 50) == ({"a": [1, 2]}, False)
    wide, cut = to_plain_within({f"k{i}": i for i in range(100)}, None, 10)
    assert cut and wide["…"] == "90 more" and len(wide) == 11


def test_deep_nesting_is_cut() -> None:
    deep: Any = "bottom"
    for _ in range(200):
        deep = [deep]
    text = CliRenderer().render(ToolResult.success({"deep": deep}))
    assert "<too deep>" in text


def test_clean_makes_hidden_and_reordering_characters_visible() -> None:
    assert clean("a\u202eb\u200bc\x1b[0m\x00") == "a⟨U+202E⟩b⟨U+200B⟩c⟨U+001B⟩[0m⟨U+0000⟩"
    assert clean("one\r\ntwo\rthree\u2028four") == "one\ntwo\nthree\nfour"
    assert clean("\ud800x") == "\ufffdx"
    kept = "👨‍👩‍👧 שלום مرحبا e\u0301 \u200c\u200d\u200e\t"
    assert clean(kept) == kept  # joiners, marks, RTL marks and tabs are text, not tricks


def test_clip_never_splits_a_character_from_its_marks() -> None:
    assert clip("abc", 5) == ("abc", 0)
    assert clip("cafe\u0301s", 4) == ("caf", 3)
    assert clip("x👨‍👩‍👧", 3) == ("x", 5)
    assert clip("\u0301" * 10, 4) == ("\u0301" * 4, 6)  # an endless combining run is still cut


def test_utf16_length_counts_astral_characters_twice() -> None:
    assert utf16_len("ab") == 2 and utf16_len("👍") == 2 and utf16_len("é") == 1


def test_labels_and_timestamps() -> None:
    assert label("due_date") == "Due date" and label("") == "" and label(3) == "3"
    assert when(dt.datetime(2026, 8, 15, 9, 8, tzinfo=dt.timezone(dt.timedelta(hours=-5)))) == "2026-08-15 14:08 UTC"
    assert when("2026-08-15T14:08:11+00:00") == "2026-08-15 14:08 UTC"
    assert when("tomorrow") == "tomorrow"
    assert when("x" * 500).endswith("…") and len(when("x" * 500)) == 81
