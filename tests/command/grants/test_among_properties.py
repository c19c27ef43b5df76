"""Properties of among(): a stop is never walked around, and adding a grant never lifts one."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from milpa_chat.command.grants import GrantStanding, GrantState, StandingGrant, StandingJudge
from tests.command.grants import builders as b

GRANTS = [
    b.grant(),
    b.grant(id="any", operations=[{"operation": "release:publish", "arguments": {}}]),
    b.grant(id="beta", operations=[{"operation": "release:publish", "arguments": {"channel": "beta", "n": 7}}]),
]
STANDINGS = [
    b.standing(),
    b.standing(GrantState.SUSPENDED),
    b.standing(GrantState.REVOKED),
    b.standing(record_fault="unreadable"),
    b.standing(receipts=[None]),
    b.standing(receipts=[]),
    b.standing(signature_fault="bad"),
]
_values = st.sampled_from([None, "", "stable", "beta", "stable ", 7, 8, "7", True, False, ["beta"]])
_arguments = st.dictionaries(st.sampled_from(["channel", "n", "archive"]), _values, max_size=3)
_entries = st.lists(st.tuples(st.sampled_from(GRANTS), st.sampled_from(STANDINGS)), max_size=4)


def _stops(entries: list[tuple[StandingGrant, GrantStanding]], arguments: dict[str, Any]) -> bool:
    call = b.call(arguments)
    return any(s.stopped and StandingJudge.may_be_naming(g, call) for g, s in entries)


@settings(max_examples=300, deadline=None)
@given(_entries, _arguments)
def test_a_stopped_grant_that_may_be_naming_the_call_is_never_walked_around(
    entries: list[tuple[StandingGrant, GrantStanding]], arguments: dict[str, Any]
) -> None:
    answer = StandingJudge.among(entries, b.call(arguments), record_fault=None)
    if _stops(entries, arguments):
        assert answer is not None and not answer.passes() and answer.stopped
    if answer is not None and answer.passes():
        assert answer.grant is not None and answer.grant.names(b.call(arguments))


@settings(max_examples=300, deadline=None)
@given(_entries, st.tuples(st.sampled_from(GRANTS), st.sampled_from(STANDINGS)), _arguments)
def test_adding_a_grant_never_lifts_a_stop(
    entries: list[tuple[StandingGrant, GrantStanding]], extra: tuple[StandingGrant, GrantStanding],
    arguments: dict[str, Any],
) -> None:  # fmt: skip
    call = b.call(arguments)
    before = StandingJudge.among(entries, call, record_fault=None)
    after = StandingJudge.among([*entries, extra], call, record_fault=None)
    if before is not None and before.stopped:
        assert after is not None and after.stopped and not after.passes()


@settings(max_examples=100, deadline=None)
@given(_entries, _arguments, st.text(min_size=1, max_size=20))
def test_a_record_fault_never_lends(
    entries: list[tuple[StandingGrant, GrantStanding]], arguments: dict[str, Any], fault: str
) -> None:
    answer = StandingJudge.among(entries, b.call(arguments), record_fault=fault)
    assert answer is not None and not answer.passes() and answer.grant is None
