"""NamedCall: names given as text, what may be fixed, and open versus closed matching."""

from __future__ import annotations

from typing import Any

import pytest

from milpa_chat.command import OperationId
from milpa_chat.command.grants import (
    ConditionReceipt,
    InvalidGrant,
    NamedCall,
    StandingCall,
    StandingGrant,
    StandingJudge,
    is_operation_name,
)
from tests.command.grants import builders as b
from tests.command.grants.rules import covers, rule


class Spelled:
    def __str__(self) -> str:
        return "release:publish"


@pytest.mark.parametrize(
    "build",
    [
        rule("SG-022", lambda name: NamedCall(name), note="NamedCall"),
        rule("SG-022", lambda name: ConditionReceipt(name, {}, b.CONTENT, b.SCANNER, True), note="ConditionReceipt"),
        rule("SG-022", lambda name: b.call(operation=name), note="StandingCall"),
    ],
)
@pytest.mark.parametrize("name", [OperationId("release:publish"), Spelled(), b"release:publish", None, 7])
def test_a_name_is_given_as_text(build: Any, name: object) -> None:
    with pytest.raises(TypeError, match="text"):
        build(name)


@covers("SG-022")
def test_a_str_subclass_is_not_text() -> None:
    class Name(str):
        pass

    with pytest.raises(TypeError):
        NamedCall(Name("release:publish"))


@pytest.mark.parametrize(
    "name",
    [
        rule("SG-023", " release:publish", note="a space before"),
        rule("SG-023", "release:publish\n", note="a line break after"),
        rule("SG-023", "\trelease:publish", note="a tab before"),
    ],
)
def test_constructors_never_trim(name: str) -> None:
    with pytest.raises(InvalidGrant):
        NamedCall(name)
    with pytest.raises(InvalidGrant):
        ConditionReceipt(name, {}, b.CONTENT, b.SCANNER, True)


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        rule("SG-030", "channel", True, note="a name"),
        rule("SG-030", "Channel_2", True, note="capitals, digits, underscore"),
        rule("SG-030", "_x", False, note="underscore first"),
        rule("SG-030", "1x", False, note="digit first"),
        rule("SG-030", "chan nel", False, note="a space inside"),
        rule("SG-030", "channel ", False, note="a space after"),
        rule("SG-030", "\u0441hannel", False, note="a Cyrillic letter"),
        rule("SG-030", "c" * 64, True, note="64 characters"),
        rule("SG-030", "c" * 65, False, note="65 characters"),
    ],
)
def test_argument_names(name: str, ok: bool) -> None:
    for build in (lambda: NamedCall("release:publish", {name: "x"}), lambda: NamedCall("release:scan", free=(name,))):
        if ok:
            build()
        else:
            with pytest.raises(InvalidGrant, match="argument name"):
                build()


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        rule("SG-031", "stable", True, note="text"),
        rule("SG-031", "a b", True, note="a single inner space"),
        rule("SG-031", "<=*/", True, note="any visible ASCII"),
        rule("SG-031", "a  b", False, note="a double inner space"),
        rule("SG-031", " a", False, note="a space before"),
        rule("SG-031", "é", False, note="not ASCII"),
        rule("SG-031", "strict\u200b", False, note="a zero-width space"),
        rule("SG-031", 7, True, note="a whole number"),
        rule("SG-031", -3, True, note="a negative whole number"),
        rule("SG-031", True, True, note="true"),
        rule("SG-031", False, True, note="false"),
        rule("SG-032", "", False, note="the empty text"),
        rule("SG-033", None, False, note="null"),
        rule("SG-033", 7.0, False, note="a whole float"),
        rule("SG-033", 7.5, False, note="a fraction"),
        rule("SG-033", ["a"], False, note="a list"),
        rule("SG-033", {"a": 1}, False, note="an object"),
        rule("SG-033", 2**63, False, note="above 64 bits"),
    ],
)
def test_fixed_values(value: object, ok: bool) -> None:
    if ok:
        assert NamedCall("release:publish", {"channel": value}).arguments == {"channel": value}  # type: ignore[dict-item]
    else:
        with pytest.raises(InvalidGrant, match="fixed value"):
            NamedCall("release:publish", {"channel": value})  # type: ignore[dict-item]


@covers("SG-035")
def test_a_name_is_fixed_or_free_and_listed_once() -> None:
    with pytest.raises(InvalidGrant, match="fixed or free"):
        NamedCall("release:scan", {"archive": "a"}, ("archive",))
    with pytest.raises(InvalidGrant, match="twice"):
        NamedCall("release:scan", {}, ("archive", "archive"))


ENTRY = NamedCall("release:publish", {"channel": "stable"})
BY = NamedCall("release:scan", {"strict": True}, ("archive",))


def run(operation: str, **arguments: Any) -> ConditionReceipt:
    return ConditionReceipt(operation, arguments, b.CONTENT, b.SCANNER, True)


@pytest.mark.parametrize(
    ("call", "matches"),
    [
        rule("SG-110", run("release.publish", channel="stable", archive="a.tgz"), True, note="the rest is free"),
        rule("SG-110", run("release:publish", channel="beta"), False, note="another value"),
        rule("SG-110", run("release:publish"), False, note="the fixed one missing"),
        rule("SG-110", run("release:publish", channel="Stable"), False, note="other case"),
        rule("SG-034", run("release:publish", channel="stable\u200b"), False, note="a zero-width space"),
        rule("SG-110", run("release:unpublish", channel="stable"), False, note="another operation"),
    ],
)
def test_open_match(call: ConditionReceipt, matches: bool) -> None:
    assert ENTRY.matches(call) is matches


@pytest.mark.parametrize(
    ("fixed", "carried"),
    [
        rule("SG-034", 7, "7", note="a number against its text"),
        rule("SG-034", True, 1, note="true against 1"),
        rule("SG-034", 1, True, note="1 against true"),
        rule("SG-034", "strict", "strict\u200b", note="another run"),
        rule("SG-034", 0, False, note="0 against false"),
    ],
)
def test_fixed_values_compare_type_for_type(fixed: Any, carried: Any) -> None:
    assert not NamedCall("release:publish", {"x": fixed}).matches(run("release:publish", x=carried))
    assert NamedCall("release:publish", {"x": fixed}).matches(run("release:publish", x=fixed))


@covers("SG-111")
def test_an_entry_with_no_fixed_arguments_matches_every_call_to_its_operation() -> None:
    entry = NamedCall("release:publish")
    assert entry.matches(run("release:publish")) and entry.matches(run("Release_Publish", channel="anything"))


@pytest.mark.parametrize(
    ("call", "matches"),
    [
        rule("SG-112", run("release:scan", strict=True, archive="a"), True, note="fixed and free"),
        rule("SG-112", run("release:scan", strict=True), True, note="a free one absent"),
        rule("SG-113", run("release:scan", strict=True, archive="a", lenient=True), False, note="one argument more"),
        rule("SG-112", run("release:scan", archive="a"), False, note="the fixed one missing"),
        rule("SG-112", run("release:scan", strict="true"), False, note="the fixed one as text"),
    ],
)
def test_closed_match(call: ConditionReceipt, matches: bool) -> None:
    assert BY.matches_exactly(call) is matches
    assert BY.matches(call) is (matches or "lenient" in call.arguments)


@covers("SG-036")
def test_a_fixed_value_is_shown_through_canonical_shown() -> None:
    grant = StandingGrant.from_dict(
        b.document(operations=[{"operation": "release:publish", "arguments": {"channel": "stable", "n": 7}}])
    )
    sentence = StandingJudge.judge(grant, b.standing(), b.call({"channel": "beta"})).sentence
    assert 'channel="stable", n=7' in sentence


def test_a_standing_call_takes_an_aware_now_and_a_profile() -> None:
    with pytest.raises(TypeError, match="timezone-aware"):
        b.call(now=b.NOW.replace(tzinfo=None))
    with pytest.raises(TypeError, match="EffectProfile"):
        b.call(effect="persistent")
    with pytest.raises(InvalidGrant, match="content"):
        b.call(content="sha256:ab\n")
    assert isinstance(b.call(), StandingCall)


@covers("SG-034")
def test_named_calls_are_equal_type_for_type_and_hashable() -> None:
    assert NamedCall("release:publish", {"n": 1}) != NamedCall("release:publish", {"n": True})
    assert NamedCall("release:publish", {"n": 1}) == NamedCall("release:publish", {"n": 1})
    assert NamedCall("release:publish") != NamedCall("Release:Publish")  # same identity, not the same spelling
    assert len({b.grant(), b.grant(), b.grant(id="other")}) == 2


@covers("SG-051")
def test_a_host_can_ask_whether_a_tool_name_is_an_operation_name() -> None:
    for name in ("release:publish", "notes.list", "get-weather", "A1"):
        assert is_operation_name(name), name
    for other in ("notes__list", "_x", "x_", "a--b", "a b", "", None, OperationId("a.b")):
        assert not is_operation_name(other), other
        if isinstance(other, str):
            with pytest.raises(InvalidGrant):
                NamedCall(other)
