"""StandingJudge.among: which answer stands when a house holds several grants — shrinking wins."""

from __future__ import annotations

from typing import Any

import pytest

from milpa_chat.command.grants import (
    GrantStanding,
    GrantState,
    StandingCall,
    StandingCheck,
    StandingGrant,
    StandingJudge,
)
from tests.command.grants import builders as b
from tests.command.grants.rules import covers, rule

among = StandingJudge.among
may_be_naming = StandingJudge.may_be_naming

#: A wider grant over the same operation: no fixed channel.
WIDE = b.grant(id="release-any-1", operations=[{"operation": "release:publish", "arguments": {}}])
NARROW = b.grant()
SUSPENDED = b.standing(GrantState.SUSPENDED, stopped_because="a machine name was found in 1.4.2")
UNREAD = b.standing(record_fault="the second line of its receipts cannot be read")


def answer(*entries: tuple[StandingGrant, GrantStanding], call: StandingCall | None = None, fault: Any = None) -> Any:
    return among(list(entries), call or b.call(), record_fault=fault)


@covers("SG-160", "SG-168")
def test_one_grant_that_passes_is_enough() -> None:
    verdict = answer((NARROW, b.standing()))
    assert verdict is not None and verdict.passes() and verdict.grant is NARROW
    assert verdict.cited == (b.green(),)
    first = answer((NARROW, b.standing(receipts=[])), (WIDE, b.standing()), (NARROW, b.standing()))
    assert first.passes() and first.grant is WIDE


@covers("SG-161", "SG-162")
def test_a_record_fault_lends_nothing_to_anyone() -> None:
    with pytest.raises(TypeError):
        among([(NARROW, b.standing())], b.call())  # type: ignore[call-arg]
    verdict = answer((NARROW, b.standing()), (WIDE, b.standing()), fault="grants.db line 12 names no grant")
    assert verdict is not None and not verdict.passes() and verdict.grant is None
    assert verdict.failed is StandingCheck.SIGNATURE and verdict.stopped
    assert "grants.db line 12 names no grant" in verdict.sentence
    assert answer(fault="unreadable") is not None  # never None, even with no grant handed in


@covers("SG-163", "SG-180")
def test_grants_that_do_not_lend_to_the_seat_or_cover_the_operation_are_ignored() -> None:
    other_seat = b.grant(id="other", to=["deploy-bot"])
    other_op = b.grant(id="other-op", operations=[{"operation": "release:tag", "arguments": {}}])
    assert answer((other_seat, SUSPENDED), (other_op, UNREAD)) is None
    assert answer((other_seat, SUSPENDED), (NARROW, b.standing())).grant is NARROW
    assert not may_be_naming(other_seat, b.call()) and not may_be_naming(other_op, b.call())


@pytest.mark.parametrize(
    ("stopped", "failed"),
    [
        rule("SG-165", SUSPENDED, StandingCheck.IN_FORCE, note="a suspension that names the call"),
        rule("SG-165", UNREAD, StandingCheck.SIGNATURE, note="a record that does not read"),
        rule(
            "SG-164",
            b.standing(GrantState.REVOKED, receipts=[None]),
            StandingCheck.SIGNATURE,
            note="unread whatever its state",
        ),
    ],
)
def test_shrinking_wins_over_a_grant_that_would_lend(stopped: GrantStanding, failed: StandingCheck) -> None:
    verdict = answer((WIDE, b.standing()), (NARROW, stopped))
    assert verdict is not None and not verdict.passes()
    assert verdict.grant is NARROW and verdict.failed is failed and verdict.stopped and not verdict.stopped_beside


@pytest.mark.parametrize(
    "arguments",
    [
        rule("SG-166", {"archive": "a.tgz"}, note="the fixed argument left out"),
        rule("SG-166", {"channel": ""}, note="empty"),
        rule("SG-166", {"channel": "stable "}, note="a space after"),
        rule("SG-166", {"channel": 7}, note="a number where text is fixed"),
    ],
)
def test_a_stopped_grant_that_may_be_naming_the_call_refuses_it_beside(arguments: dict[str, Any]) -> None:
    call = b.call(arguments)
    for stopped, failed in ((SUSPENDED, StandingCheck.IN_FORCE), (UNREAD, StandingCheck.SIGNATURE)):
        verdict = answer((WIDE, b.standing()), (NARROW, stopped), call=call)
        assert verdict is not None and verdict.stopped_beside and verdict.stopped and not verdict.named()
        assert verdict.failed is failed and verdict.grant is NARROW
        alone = answer((NARROW, stopped), call=call)
        assert alone is not None and alone.stopped_beside


@covers("SG-172")
def test_the_refusal_names_the_way_out_of_its_own_kind_of_stop() -> None:
    suspended = answer((NARROW, SUSPENDED))
    assert "a machine name was found in 1.4.2" in suspended.sentence
    assert 'a person lifts the suspension, or signs a grant that supersedes "release-stable-1" by name' in (
        suspended.sentence
    )
    unread = answer((NARROW, UNREAD), call=b.call({}))
    assert "out of the way when its record reads again (superseding leaves it where it was)" in unread.sentence
    assert unread.stopped_beside and "the second line of its receipts cannot be read" in unread.sentence


@covers("SG-167", "SG-196")
def test_revoked_superseded_and_expired_grants_stop_nobody_unless_still_suspended() -> None:
    for state in (GrantState.REVOKED, GrantState.SUPERSEDED):
        verdict = answer((NARROW, b.standing(state)), (WIDE, b.standing()), call=b.call({}))
        assert verdict is not None and verdict.passes() and verdict.grant is WIDE
    expired = b.grant(expires_at="2026-01-01T00:00:00Z")
    assert answer((expired, b.standing()), (WIDE, b.standing())).grant is WIDE
    still = answer((expired, SUSPENDED), (WIDE, b.standing()))
    assert still is not None and not still.passes() and still.grant is expired  # a date does not lift a stop
    # A superseding grant does not clear an unreadable record: the stopped one still refuses.
    successor = b.grant(id="release-stable-2", supersedes=["release-stable-1"])
    assert not answer((successor, b.standing()), (NARROW, UNREAD)).passes()


@covers("SG-169")
def test_when_none_passes_the_refusal_that_got_furthest_speaks() -> None:
    unwatched = b.standing(falsifier_seen_at=None)
    unmeasured = b.standing(receipts=[])
    verdict = answer((NARROW, unwatched), (WIDE, unmeasured))
    assert verdict.failed is StandingCheck.CONDITIONS and verdict.grant is WIDE and not verdict.stopped
    tie = answer((NARROW, unmeasured), (WIDE, unmeasured))
    assert tie.grant is NARROW


@covers("SG-170")
def test_nobodys_call_is_none() -> None:
    assert answer(call=b.call()) is None
    assert answer((NARROW, b.standing()), call=b.call({"channel": "beta"})) is None
    assert answer((NARROW, b.standing(GrantState.REVOKED)), call=b.call({"channel": "beta"})) is None


@covers("SG-171")
def test_precedence() -> None:
    beside = b.grant(id="beside-1", operations=[{"operation": "release:publish", "arguments": {"tag": "x"}}])
    named_stop = (NARROW, SUSPENDED)
    stop_beside = (beside, b.standing(GrantState.SUSPENDED))
    passing = (WIDE, b.standing())
    refusing = (b.grant(id="r-1", operations=[{"operation": "release:publish", "arguments": {}}]),
                b.standing(falsifier_seen_at=None))  # fmt: skip
    assert answer(passing, stop_beside, named_stop, fault="bad").grant is None
    assert answer(passing, stop_beside, named_stop).grant is NARROW
    assert answer(passing, refusing, stop_beside).grant is beside
    assert answer(refusing, passing).grant is WIDE
    assert answer(refusing).grant is refusing[0]
    assert answer() is None


@covers("SG-173", "SG-186")
def test_judge_alone_lets_a_seat_walk_around_a_stop_that_may_be_naming_asks() -> None:
    call = b.call({"archive": "a.tgz"})  # the operation's default channel
    assert not StandingJudge.judge(NARROW, SUSPENDED, call).named()
    assert may_be_naming(NARROW, call)
    assert answer((NARROW, SUSPENDED), call=call).stopped_beside
    # among() asks it of stopped grants only: a grant in force that may be naming the call is the host's question.
    assert answer((NARROW, b.standing()), call=call) is None and may_be_naming(NARROW, call)


@covers("SG-185")
def test_for_lending_nothing_changes() -> None:
    assert answer((NARROW, b.standing()), call=b.call({"archive": "a.tgz"})) is None
    assert answer((NARROW, b.standing()), call=b.call({"channel": 7})) is None
