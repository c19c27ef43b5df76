"""Canonical: one line of plain text over every code point, the canonical JSON and digest, what a reader is shown."""

from __future__ import annotations

import hashlib
import json
import sys
import time
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from milpa_chat.command.canonical import UNIDATA_VERSION
from milpa_chat.command.grants import Canonical
from tests.command.grants.rules import covers, rule

one_line = Canonical.one_line

#: The format characters (Cf) of Unicode 16, as the contract lists them.
CF_16 = [
    (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD), (0x070F, 0x070F), (0x0890, 0x0891),
    (0x08E2, 0x08E2), (0x180E, 0x180E), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F),
    (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD), (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001), (0xE0020, 0xE007F),
]  # fmt: skip
ZS_16 = [(0x00A0, 0x00A0), (0x1680, 0x1680), (0x2000, 0x200A), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000)]
VARIATION = [(0x180B, 0x180D), (0x180F, 0x180F), (0xFE00, 0xFE0F), (0xE0100, 0xE01EF), (0x034F, 0x034F)]
BLANKS = [0x17B4, 0x17B5, 0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x13441, 0x13442, 0x16FE4, 0x1D159]
#: Default_Ignorable_Code_Point under Unicode 16 (DerivedCoreProperties.txt).
DEFAULT_IGNORABLE = [
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
]  # fmt: skip


def points(ranges: list[tuple[int, int]]) -> list[int]:
    return [cp for a, b in ranges for cp in range(a, b + 1)]


def inside(cp: int) -> str:
    return f"a{chr(cp)}b"


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        rule("SG-060", "Mañana — ✓ 日本", True, note="letters of every language, accents, symbols"),
        rule("SG-060", "عربي ελληνικά русский 한국어 😀", True, note="other scripts and emoji"),
        rule("SG-061", " a", False, note="space first"),
        rule("SG-061", "a ", False, note="space last"),
        rule("SG-061", "a  b", True, note="double inner space"),
        rule("SG-061", "", False, note="empty"),
        rule("SG-062", "a\tb", False, note="tab"),
        rule("SG-062", "a\nb", False, note="line feed"),
        rule("SG-062", "a\x85b", False, note="C1 control"),
        rule("SG-062", "a\x7fb", False, note="DEL"),
        rule("SG-064", "a\u2028b", False, note="line separator"),
        rule("SG-064", "a\u2029b", False, note="paragraph separator"),
        rule("SG-069", "a\ud800b", False, note="lone surrogate"),
        rule("SG-071", "\u0301a", False, note="begins with a combining mark"),
        rule("SG-071", "a\u0301", True, note="a mark after a letter"),
        rule("SG-072", "e" + "\u0301" * 8, True, note="eight marks in a row"),
        rule("SG-072", "e" + "\u0301" * 9, False, note="nine marks in a row"),
        rule("SG-072", "e" + "\u0301" * 8 + "e" + "\u0301" * 8, True, note="eight, a letter, eight"),
        rule("SG-074", "pаypal", True, note="a Cyrillic a that looks Latin is text"),
    ],
)
def test_one_line_table(text: str, kept: bool) -> None:
    assert one_line(text) is kept


@covers("SG-063")
def test_every_format_character_is_refused() -> None:
    for cp in points(CF_16):
        assert not one_line(inside(cp)), hex(cp)


@covers("SG-065")
def test_every_space_but_the_ordinary_one_is_refused() -> None:
    for cp in points(ZS_16):
        assert not one_line(inside(cp)), hex(cp)
    assert one_line("a b")


@covers("SG-066", "SG-067")
def test_variation_selectors_joiner_and_blanks_are_refused() -> None:
    for cp in points(VARIATION) + BLANKS:
        assert not one_line(inside(cp)), hex(cp)


@covers("SG-068")
def test_private_use_noncharacters_and_unassigned_are_refused() -> None:
    for cp in (0xE000, 0xF8FF, 0xF0000, 0x10FFFD, 0xFFFE, 0xFFFF, 0x1FFFE, 0xFDD0, 0xE0080, 0x0378):
        assert not one_line(inside(cp)), hex(cp)


@covers("SG-070")
def test_every_default_ignorable_code_point_is_refused() -> None:
    for cp in points(DEFAULT_IGNORABLE):
        assert not one_line(inside(cp)), hex(cp)


@covers("SG-073", "SG-069")
def test_the_whole_range_refuses_957526_and_keeps_154538() -> None:
    started = time.perf_counter()
    kept = sum(one_line(f"a{chr(cp)}b") for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF)
    elapsed = time.perf_counter() - started
    print(f"\none_line over 1,112,064 code points: {kept} kept, {1_112_064 - kept} refused in {elapsed:.2f}s")
    assert UNIDATA_VERSION == "16.0.0"
    assert (kept, 1_112_064 - kept) == (154_538, 957_526)
    assert not any(one_line(f"a{chr(cp)}b") for cp in range(0xD800, 0xE000))


def _oracle(char: str) -> bool | None:
    """What the contract says of ``a<char>b`` from the interpreter's own tables, where those are certain."""
    cp = ord(char)
    category = unicodedata.category(char)
    listed = any(a <= cp <= b for a, b in CF_16 + ZS_16 + VARIATION + DEFAULT_IGNORABLE) or cp in BLANKS
    if listed or category in ("Cc", "Cf", "Zl", "Zp", "Co", "Cs") or (category == "Zs" and cp != 0x20):
        return False
    if category == "Cn":
        return None  # may be assigned since the interpreter's Unicode version
    return True


@given(st.characters())
def test_one_line_over_any_code_point_agrees_with_the_contract(char: str) -> None:
    expected = _oracle(char)
    if expected is not None:
        assert one_line(f"a{char}b") is expected
    assert one_line(char) in (True, False)
    assert one_line(f" {char}") is False
    assert one_line(f"a\n{char}") is False


@given(st.text())
def test_one_line_never_keeps_what_a_character_alone_refuses(text: str) -> None:
    if one_line(text):
        assert all(one_line(f"a{c}b") for c in text)
        assert text == text.strip(" ")


@pytest.mark.parametrize(
    ("value", "spelled"),
    [
        rule("SG-100", {"b": 1, "a": [3, 1, 2], "": {}}, '{"":{},"a":[3,1,2],"b":1}', note="keys sorted, lists kept"),
        rule("SG-100", {"é": "/", "z": None, "e": True}, '{"e":true,"z":null,"é":"/"}', note="bytes order, unescaped"),
        rule("SG-100", {"a": {"d": 1, "c": {}}}, '{"a":{"c":{},"d":1}}', note="recursively, empty map as {}"),
    ],
)
def test_canonical_json(value: object, spelled: str) -> None:
    assert Canonical.json(value) == spelled
    assert json.loads(spelled) == value


@pytest.mark.parametrize(
    "value",
    [
        rule("SG-103", 1.0, note="a whole float"),
        rule("SG-103", {"x": -0.0}, note="negative zero"),
        rule("SG-103", {"x": 0.1}, note="a float's precision"),
        rule("SG-103", {1: "a"}, note="a key that is not a text"),
        rule("SG-103", {"x": object()}, note="anything else"),
    ],
)
def test_canonical_json_refuses_what_would_not_survive(value: object) -> None:
    with pytest.raises(TypeError):
        Canonical.json(value)


@covers("SG-101")
def test_digest_is_sha256_of_the_canonical_json() -> None:
    value = {"b": [1, "x"], "a": None}
    expected = "sha256:" + hashlib.sha256(b'{"a":null,"b":[1,"x"]}').hexdigest()
    assert Canonical.digest(value) == expected
    assert Canonical.digest({"a": None, "b": [1, "x"]}) == expected


@pytest.mark.parametrize(
    ("value", "spelled"),
    [
        rule("SG-104", "no-host-names", '"no-host-names"', note="a name between quotes"),
        rule("SG-104", "é", '"\\u00e9"', note="non-ASCII as its escape"),
        rule("SG-104", "a\nb", '"a\\nb"', note="a line break as backslash-n"),
        rule("SG-104", 'a"b', '"a\\"b"', note="a quote cannot end it early"),
        rule("SG-104", "\ud800", '"\\ufffd"', note="not valid Unicode"),
        rule("SG-104", "\x1b[2J", '"\\u001b[2J"', note="a terminal escape"),
        rule("SG-036", 7, "7", note="a fixed number"),
        rule("SG-036", True, "true", note="a fixed boolean"),
    ],
)
def test_shown(value: object, spelled: str) -> None:
    assert Canonical.shown(value) == spelled
    assert Canonical.shown(value).isascii()


@covers("SG-104")
def test_shown_is_at_most_a_line_and_never_splits_an_escape() -> None:
    for filler in ("x", "é", "\n", "日"):
        for extra in range(8):
            shown = Canonical.shown("y" * extra + filler * 600)
            assert len(shown) <= 483 and shown.endswith("...")
            body = shown[:-3]
            assert body.count("\\") == 0 or json.loads(body + '"') is not None


@covers("SG-105")
def test_the_judge_names_a_condition_with_shown() -> None:
    assert f"condition {Canonical.shown('no-host-names')} was never measured" == (
        'condition "no-host-names" was never measured'
    )


@pytest.mark.parametrize(
    ("sentence", "said"),
    [
        rule("SG-106", "a leak was reported in #42", "a leak was reported in #42", note="one line, as it came"),
        rule("SG-106", "línea única ✓", "línea única ✓", note="non-ASCII kept in a one-line sentence"),
        rule("SG-106", "two\nlines", '"two\\nlines"', note="spelled out otherwise"),
        rule("SG-106", "x" * 500, "x" * 480, note="cut to 480"),
    ],
)
def test_said(sentence: str, said: str) -> None:
    assert Canonical.said(sentence) == said


@pytest.mark.parametrize(
    ("name", "short"),
    [
        rule("SG-107", "release:publish", "release:publish", note="whole"),
        rule("SG-107", "a" * 480, "a" * 480, note="exactly a line"),
        rule("SG-107", "a" * 481, "a" * 480 + "... (481 characters)", note="start and length"),
    ],
)
def test_short(name: str, short: str) -> None:
    assert Canonical.short(name) == short


def test_tables_do_not_follow_the_interpreter() -> None:
    assert sys.version_info >= (3, 11)
    # U+1FAE9 was assigned in Unicode 16: kept whatever unicodedata of this interpreter says.
    assert one_line("a\U0001fae9b")
