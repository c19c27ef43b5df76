"""StandingGrant.from_json: the signed text is read as it is shown, or refused saying what and how to fix it."""

from __future__ import annotations

import json

import pytest

from milpa_chat.command.grants import LONGEST, InvalidGrant, StandingGrant
from tests.command.grants import builders as b
from tests.command.grants.rules import covers, rule

TEXT = json.dumps(b.DOCUMENT, ensure_ascii=False)


def swapped(old: str, new: str) -> str:
    assert old in TEXT, old
    return TEXT.replace(old, new, 1)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        rule("SG-042", TEXT.encode("utf-8") + b"\xff", "UTF-8", note="bytes that are not UTF-8"),
        rule("SG-042", b"\xef\xbb\xbf" + TEXT.encode(), "byte-order mark", note="a BOM"),
        rule("SG-042", "\ufeff" + TEXT, "byte-order mark", note="a BOM in a str"),
        rule("SG-042", swapped('"ci-bot"', '"ci-bot\\ud800"'), "surrogate", note="a lone surrogate escape"),
        rule(
            "SG-042",
            swapped('"undo": "unpublish', '"undo": "\\udc00unpublish'),
            "surrogate",
            note="a lone low surrogate in a sentence",
        ),
        rule("SG-042", "[" + TEXT + "]", "one JSON object", note="not an object"),
        rule("SG-042", TEXT[:-1], "not JSON", note="cut short"),
        rule(
            "SG-043",
            swapped('"to": ["ci-bot"]', '"to": ["ci-bot"], "to": ["other"]'),
            "said twice",
            note="a top-level key twice",
        ),
        rule(
            "SG-043",
            swapped('{"strict": true}', '{"strict": true, "strict": false}'),
            "said twice",
            note="a key twice inside by.arguments",
        ),
        rule(
            "SG-043",
            swapped('"to": ["ci-bot"]', '"to": ["ci-bot"], "t\\u006f": ["x"]'),
            "said twice",
            note="the same key spelled two ways",
        ),
        rule(
            "SG-045",
            swapped('"release:publish"', '"rele\\u0061se:publish"'),
            "\\u escape",
            note="an operation with an escaped letter",
        ),
        rule("SG-045", swapped('"to"', '"t\\u006f"'), "\\u escape", note="a key with an escaped letter"),
        rule(
            "SG-045",
            swapped('"what is published', '"\\u0077hat is published'),
            "\\u escape",
            note="a statement with an escaped letter",
        ),
        rule(
            "SG-045",
            swapped('"release-stable-1"', '"release\\u002Dstable-1"'),
            "\\u escape",
            note="an escaped dash, upper-case hex",
        ),
        rule("SG-045", swapped('"unpublish the', '"unpublish\\u0020the'), "\\u escape", note="an escaped space"),
        rule("SG-047", swapped('"ci-bot"', '"ci\\u002bbot"'), "printable ASCII", note="an escaped plus in a seat"),
        rule("SG-047", swapped('"stable"', '"st\\/able"'), "printable ASCII", note="an escaped slash in a value"),
        rule("SG-047", swapped('"stable"', '"\\u003c="'), "printable ASCII", note="an escaped < in a value"),
        rule(
            "SG-047",
            swapped('"free": ["archive"]', '"free": ["archive\\u0021"]'),
            "printable ASCII",
            note="an escaped ! in a free name",
        ),
        rule(
            "SG-048",
            swapped('"undo"', '"expires_at": "2026-11-01T00:00:00\\u002b01:00", "undo"'),
            "printable ASCII",
            note="an expiry whose plus is escaped",
        ),
        rule("SG-033", swapped('"window": 86400', '"window": 86400.0'), "whole number", note="a whole float"),
        rule("SG-033", swapped('{"strict": true}', '{"strict": 7e0}'), "whole number", note="an exponent"),
        rule("SG-033", swapped('{"strict": true}', '{"strict": -0}'), "whole number", note="negative zero"),
        rule(
            "SG-033",
            swapped('{"strict": true}', '{"strict": 9223372036854775808}'),
            "whole number",
            note="above 64 bits",
        ),
        rule("SG-033", swapped('{"strict": true}', '{"strict": NaN}'), "whole number", note="NaN"),
    ],
)
def test_a_text_that_is_refused(text: str | bytes, says: str) -> None:
    with pytest.raises(InvalidGrant) as refused:
        StandingGrant.from_json(text)
    assert says in str(refused.value)


@pytest.mark.parametrize(
    ("text", "read"),
    [
        rule(
            "SG-046",
            swapped('"unpublish the', '"don\\u0027t unpublish the'),
            "don't unpublish the",
            note="an escaped apostrophe in undo",
        ),
        rule(
            "SG-046",
            swapped('"unpublish the', '"\\u003cb\\u003e \\u0026 \\u0022 unpublish the'),
            '<b> & " unpublish the',
            note="the HTML-safe escapes in undo",
        ),
        rule(
            "SG-046",
            swapped('"unpublish the', '"caf\\u00e9 \\ud83d\\ude00 unpublish the'),
            "café 😀 unpublish the",
            note="non-ASCII escapes in a sentence",
        ),
        rule(
            "SG-047",
            swapped('"stable"', '"say \\"hi\\" \\\\ now"'),
            'say "hi" \\ now',
            note="the mandatory escapes in a value",
        ),
    ],
)
def test_escapes_that_are_read(text: str, read: str) -> None:
    grant = StandingGrant.from_json(text)
    spelled = json.dumps(grant.to_dict(), ensure_ascii=False)
    assert read in grant.undo or read in json.loads(spelled)["operations"][0]["arguments"]["channel"]


def _padded(size: int) -> str:
    """The document, its undo padded so the text is ``size`` UTF-8 bytes."""
    base = len(TEXT.encode())
    return swapped('"unpublish the', '"' + "x" * (size - base) + "unpublish the")


@covers("SG-040")
def test_longest_is_256_kb_and_equal_is_read() -> None:
    assert LONGEST == StandingGrant.LONGEST == 262_144
    exact = _padded(LONGEST)
    assert len(exact.encode()) == LONGEST
    grant = StandingGrant.from_json(exact)
    assert StandingGrant.from_json(exact.encode()) == grant
    assert len(grant.undo) > 200_000
    with pytest.raises(InvalidGrant, match="at most 262144 bytes"):
        StandingGrant.from_json(exact + " ")
    with pytest.raises(InvalidGrant, match="at most 262144 bytes"):
        StandingGrant.from_json(("[" * (LONGEST + 1)).encode())  # refused before a byte is parsed
    multibyte = swapped('"unpublish the', '"' + "é" * (LONGEST // 2) + "unpublish the")
    assert len(multibyte) < LONGEST < len(multibyte.encode())
    with pytest.raises(InvalidGrant, match="bytes long"):
        StandingGrant.from_json(multibyte)


@covers("SG-041")
def test_a_text_whose_canonical_spelling_is_longer_is_refused() -> None:
    compact = json.dumps(b.DOCUMENT, separators=(",", ":"), ensure_ascii=False)
    canonical_extra = len(b.grant().to_json()) - len(compact)
    assert canonical_extra > 0  # the canonical spelling states expires_at, supersedes and lifts
    size = LONGEST - canonical_extra + 1
    base = len(compact.encode())
    text = compact.replace('"unpublish the', '"' + "x" * (size - base) + "unpublish the", 1)
    assert len(text.encode()) <= LONGEST
    with pytest.raises(InvalidGrant, match="canonical spelling"):
        StandingGrant.from_json(text)
    grant = StandingGrant.from_dict(json.loads(text))  # the limit is the reader's only
    assert len(grant.to_json().encode()) > LONGEST


@covers("SG-053")
def test_from_dict_cannot_see_a_repeated_key_but_applies_every_other_rule() -> None:
    repeated = swapped('"to": ["ci-bot"]', '"to": ["x y z"], "to": ["ci-bot"]')
    assert json.loads(repeated)["to"] == ["ci-bot"]
    assert StandingGrant.from_dict(json.loads(repeated)).to == ("ci-bot",)
    with pytest.raises(InvalidGrant, match="said twice"):
        StandingGrant.from_json(repeated)


def test_a_refusal_names_the_field_and_the_fix() -> None:
    with pytest.raises(InvalidGrant) as refused:
        StandingGrant.from_json(swapped('"ci-bot"', '"ci-bot\\n\\u001b[2J"'))
    message = str(refused.value)
    assert message.startswith("to[0]: ")
    assert "\x1b" not in message and "\n" not in message
    assert "write it without" in message
