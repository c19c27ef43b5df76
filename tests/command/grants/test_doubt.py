"""StandingJudge.may_be_naming: what a stopped grant reaches — everything but "beyond doubt another value"."""

from __future__ import annotations

from typing import Any

import pytest

from milpa_chat.command.grants import GrantState, StandingGrant, StandingJudge
from tests.command.grants import builders as b
from tests.command.grants.rules import covers, rule

may_be_naming = StandingJudge.may_be_naming
ABSENT = object()


def fixing(**fixed: Any) -> StandingGrant:
    return b.grant(operations=[{"operation": "release:publish", "arguments": fixed}])


def carrying(value: Any, name: str = "channel") -> Any:
    return b.call({} if value is ABSENT else {name: value, "archive": "a.tgz"})


CHANNEL = fixing(channel="stable")
N = fixing(n=7)
DRY = fixing(dry=True)


@pytest.mark.parametrize(
    ("grant", "name", "value", "doubt"),
    [
        rule("SG-183", CHANNEL, "channel", ABSENT, True, note="key absent"),
        rule("SG-183", CHANNEL, "channel", None, True, note="null"),
        rule("SG-183", CHANNEL, "channel", "", True, note="empty text"),
        rule("SG-183", CHANNEL, "channel", "stable ", True, note="a space after"),
        rule("SG-183", CHANNEL, "channel", " beta", True, note="a space before"),
        rule("SG-183", CHANNEL, "channel", "be  ta", True, note="a double inner space"),
        rule("SG-183", CHANNEL, "channel", "bêta", True, note="not ASCII"),
        rule("SG-183", CHANNEL, "channel", "beta\u200b", True, note="a zero-width space"),
        rule("SG-183", CHANNEL, "channel", 7, True, note="a number for text"),
        rule("SG-183", CHANNEL, "channel", True, True, note="a boolean for text"),
        rule("SG-183", CHANNEL, "channel", ["beta"], True, note="a list"),
        rule("SG-183", CHANNEL, "channel", {"x": 1}, True, note="an object"),
        rule("SG-183", CHANNEL, "channel", "beta", False, note="another value"),
        rule("SG-183", CHANNEL, "channel", "Stable", False, note="another value by bytes"),
        rule("SG-183", N, "n", 8, False, note="another whole number"),
        rule("SG-183", N, "n", "8", True, note="the text 8"),
        rule("SG-184", N, "n", "07", True, note="07"),
        rule("SG-184", N, "n", " 7", True, note="space 7"),
        rule("SG-184", N, "n", "7.0", True, note="the text 7.0"),
        rule("SG-184", N, "n", "+7", True, note="+7"),
        rule("SG-184", N, "n", "7e0", True, note="7e0"),
        rule("SG-183", N, "n", 7.0, True, note="a float 7.0"),
        rule("SG-183", N, "n", 8.5, True, note="a fraction"),
        rule("SG-183", N, "n", True, True, note="a boolean for a number"),
        rule("SG-183", N, "n", 2**64, True, note="a number no grant can fix"),
        rule("SG-183", DRY, "dry", False, False, note="false for true"),
        rule("SG-184", DRY, "dry", "false", True, note="the word false"),
        rule("SG-183", DRY, "dry", 0, True, note="0 for true"),
        rule("SG-183", DRY, "dry", "no", True, note="the word no"),
    ],
)
def test_the_doubt_table(grant: StandingGrant, name: str, value: Any, doubt: bool) -> None:
    assert may_be_naming(grant, carrying(value, name)) is doubt
    suspended = b.standing(GrantState.SUSPENDED)
    verdict = StandingJudge.among(
        [
            (grant, suspended),
            (b.grant(id="wide", operations=[{"operation": "release:publish", "arguments": {}}]), b.standing()),
        ],
        carrying(value, name),
        record_fault=None,
    )
    assert verdict is not None
    assert verdict.stopped_beside is doubt and verdict.passes() is not doubt


@covers("SG-181", "SG-182")
def test_every_entry_must_be_excluded_and_one_fixed_thing_suffices() -> None:
    two = b.grant(operations=[
        {"operation": "release:publish", "arguments": {"channel": "stable", "region": "eu"}},
        {"operation": "release:publish", "arguments": {"channel": "beta"}},
    ])  # fmt: skip
    assert may_be_naming(two, b.call({"channel": "nightly", "region": "eu"})) is False
    assert may_be_naming(two, b.call({"channel": "beta", "region": "us"})) is True  # the second entry names it
    # One fixed thing beyond doubt excludes an entry: region for the first, channel for the second.
    assert may_be_naming(two, b.call({"channel": "stable", "region": "us"})) is False
    assert may_be_naming(two, b.call({"channel": "stable"})) is True  # region left out: doubt for the first
    assert may_be_naming(fixing(), b.call({"anything": 1})) is True  # an entry fixing nothing is never excluded


@covers("SG-187")
def test_the_operations_own_reading_is_the_hosts_to_hand_in() -> None:
    # "Stable" is another value to the judge; a host whose operation folds case hands in "stable".
    folded = b.call({"channel": "Stable".lower(), "archive": "a.tgz"})
    assert not may_be_naming(CHANNEL, carrying("Stable")) and may_be_naming(CHANNEL, folded)


@covers("SG-188")
def test_while_stopped_even_a_certainly_other_default_is_refused() -> None:
    suspended = b.standing(GrantState.SUSPENDED)
    verdict = StandingJudge.among([(CHANNEL, suspended)], b.call({"archive": "a.tgz"}), record_fault=None)
    assert verdict is not None and verdict.stopped_beside
    assert StandingJudge.among([(CHANNEL, suspended)], carrying("beta"), record_fault=None) is None
