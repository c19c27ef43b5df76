"""StandingJudge.judge: seven checks in order, the first failure is the verdict; a pass cites its receipts."""

from __future__ import annotations

import copy
from datetime import timedelta
from typing import Any

import pytest

from milpa_chat.command import EffectProfile
from milpa_chat.command.grants import (
    Canonical,
    ConditionReceipt,
    GrantStanding,
    GrantState,
    StandingCall,
    StandingCheck,
    StandingGrant,
    StandingJudge,
)
from milpa_chat.command.levels import Authority, Externality, Mutation, Reversibility, Subject
from tests.command.grants import builders as b
from tests.command.grants.rules import covers, rule

judge = StandingJudge.judge
GREEN_LINT = ConditionReceipt("release:lint", {}, b.CONTENT, "sha256:" + "33" * 32, True)


def case(
    standing: GrantStanding | None = None, call: StandingCall | None = None, grant: StandingGrant | None = None
) -> tuple[StandingGrant, GrantStanding, StandingCall]:
    return grant or b.grant(), standing or b.standing(), call or b.call()


@pytest.mark.parametrize(
    ("facts", "failed", "says"),
    [
        rule(
            "SG-140",
            case(call=b.call(seat="other-bot")),
            StandingCheck.NAMED,
            "does not lend to seat",
            note="1 named: another seat",
        ),
        rule(
            "SG-140",
            case(call=b.call(operation="release:unpublish")),
            StandingCheck.NAMED,
            "does not cover",
            note="1 named: another operation",
        ),
        rule(
            "SG-140",
            case(call=b.call({"channel": "beta"})),
            StandingCheck.NAMED,
            'channel="stable"',
            note="1 named: another fixed value",
        ),
        rule(
            "SG-142",
            case(b.standing(signature_fault="the key was rotated")),
            StandingCheck.SIGNATURE,
            "does not hold: the key was rotated",
            note="2 signature: the signature",
        ),
        rule(
            "SG-142",
            case(b.standing(record_fault="line 4 cannot be read")),
            StandingCheck.SIGNATURE,
            "does not read whole: line 4 cannot be read",
            note="2 signature: the record",
        ),
        rule(
            "SG-142",
            case(b.standing(receipts=[b.green(), "green"])),
            StandingCheck.SIGNATURE,
            "not a receipt (item 1)",
            note="2 signature: a non-receipt",
        ),
        rule(
            "SG-142",
            case(b.standing(signature_fault="two\nlines")),
            StandingCheck.SIGNATURE,
            '"two\\nlines"',
            note="2 signature: a reason spelled out",
        ),
        rule(
            "SG-143",
            case(b.standing(GrantState.SUSPENDED, stopped_because="a leak was reported")),
            StandingCheck.IN_FORCE,
            "suspended: a leak was reported; a person lifts",
            note="3 in_force: suspended",
        ),
        rule(
            "SG-143",
            case(b.standing(GrantState.SUPERSEDED)),
            StandingCheck.IN_FORCE,
            "superseded",
            note="3 in_force: superseded",
        ),
        rule(
            "SG-143",
            case(b.standing(GrantState.REVOKED)),
            StandingCheck.IN_FORCE,
            "revoked",
            note="3 in_force: revoked",
        ),
        rule(
            "SG-143",
            case(grant=b.grant(expires_at="2026-10-20T12:00:00Z")),
            StandingCheck.IN_FORCE,
            "expired at 2026-10-20T12:00:00Z",
            note="3 in_force: past its date",
        ),
        rule(
            "SG-144",
            case(b.standing(falsifier_seen_at=None)),
            StandingCheck.WATCHED,
            "no sign of life",
            note="4 watched: never seen",
        ),
        rule(
            "SG-144",
            case(b.standing(falsifier_seen_at=b.NOW - timedelta(seconds=86401))),
            StandingCheck.WATCHED,
            "longer ago than its window of 86400 seconds",
            note="4 watched: seen too long ago",
        ),
        rule(
            "SG-144",
            case(b.standing(falsifier_seen_at=b.NOW + timedelta(seconds=1))),
            StandingCheck.WATCHED,
            "in the future",
            note="4 watched: a sign of life in the future",
        ),
        rule(
            "SG-145",
            case(call=b.call(content=None)),
            StandingCheck.SUBJECT,
            "cannot say what content",
            note="5 subject: no content",
        ),
        rule(
            "SG-146",
            case(
                call=b.call(
                    effect=EffectProfile(
                        Mutation.PERSISTENT,
                        Externality.PUBLIC,
                        Reversibility.COMPENSATABLE,
                        Authority.PRIVILEGED,
                        subject=Subject.DATA,
                    )
                )
            ),
            StandingCheck.CEILING,
            "authority privileged above write_as_user",
            note="6 ceiling: authority above",
        ),
        rule(
            "SG-146",
            case(call=b.call(effect=EffectProfile.unclassified())),
            StandingCheck.CEILING,
            "mutation unknown above persistent",
            note="6 ceiling: an unclassified call",
        ),
        rule(
            "SG-147",
            case(b.standing(receipts=[])),
            StandingCheck.CONDITIONS,
            'condition "no-host-names" was never measured',
            note="7 conditions: never measured",
        ),
        rule(
            "SG-147",
            case(b.standing(receipts=[b.green(), b.red()])),
            StandingCheck.CONDITIONS,
            'condition "no-host-names": its last receipt',
            note="7 conditions: the last says no",
        ),
        rule(
            "SG-147",
            case(call=b.call(content=b.OTHER_CONTENT)),
            StandingCheck.CONDITIONS,
            "was never measured on content",
            note="7 conditions: measured on another content",
        ),
    ],
)
def test_each_check_decides(facts: tuple[StandingGrant, GrantStanding, StandingCall], failed: StandingCheck,
                            says: str) -> None:  # fmt: skip
    verdict = judge(*facts)
    assert verdict.failed is failed
    assert says in verdict.sentence, verdict.sentence
    assert not verdict.passes() and verdict.cited == ()
    assert verdict.named() is (failed is not StandingCheck.NAMED)


@covers("SG-142", "SG-143", "SG-144", "SG-145", "SG-146", "SG-147")
def test_the_first_failure_is_the_verdict() -> None:
    everything_wrong = b.standing(GrantState.SUSPENDED, signature_fault="bad", falsifier_seen_at=None, receipts=[])
    call = b.call(content=None, effect=EffectProfile.unclassified())
    assert judge(b.grant(), everything_wrong, call).failed is StandingCheck.SIGNATURE
    order: list[tuple[dict[str, Any], StandingCheck]] = [
        (dict(signature_fault="bad"), StandingCheck.SIGNATURE),
        (dict(record_fault="bad"), StandingCheck.SIGNATURE),
        (dict(state=GrantState.REVOKED), StandingCheck.IN_FORCE),
        (dict(falsifier_seen_at=None), StandingCheck.WATCHED),
    ]
    for i in range(len(order)):
        facts: dict[str, Any] = {}
        for changes, _ in order[i:]:
            facts.update(changes)
        state = facts.pop("state", GrantState.IN_FORCE)
        assert judge(b.grant(), b.standing(state, receipts=[], **facts), call).failed is order[i][1]
    assert judge(b.grant(), b.standing(receipts=[]), call).failed is StandingCheck.SUBJECT
    assert judge(b.grant(), b.standing(receipts=[]), b.call(effect=EffectProfile.unclassified())).failed is (
        StandingCheck.CEILING
    )


def test_a_window_of_any_length_and_the_edge_of_it() -> None:
    data = b.document()
    data["falsifier"]["window"] = 2**63 - 1
    forever = StandingGrant.from_dict(data)
    assert judge(forever, b.standing(falsifier_seen_at=b.NOW - timedelta(days=3650)), b.call()).passes()
    edge = b.standing(falsifier_seen_at=b.NOW - timedelta(seconds=86400))
    assert judge(b.grant(), edge, b.call()).passes()


@covers("SG-148")
def test_a_pass_cites_one_green_per_condition_in_condition_order() -> None:
    data = b.document()
    data["conditions"].append(
        {
            "name": "lint",
            "statement": "the archive lints",
            "by": {"operation": "release:lint", "arguments": {}, "free": []},
        }
    )
    grant = StandingGrant.from_dict(data)
    older = b.green()
    receipts = [GREEN_LINT, older, b.green(arguments={"strict": True, "archive": "b.tgz"})]
    standing = b.standing(
        receipts=receipts, instruments={"release:scan": b.SCANNER, "release.lint": GREEN_LINT.instrument}
    )
    verdict = judge(grant, standing, b.call())
    assert verdict.passes() and verdict.failed is None and verdict.named()
    assert verdict.cited == (receipts[2], GREEN_LINT)
    assert verdict.grant is grant
    assert "lends this call" in verdict.sentence and "citing 2 receipts" in verdict.sentence


@covers("SG-149", "SG-190", "SG-193", "SG-194")
def test_judge_is_pure_and_never_trims_folds_or_converts() -> None:
    grant, standing, call = b.grant(), b.standing(), b.call()
    before = (copy.deepcopy(grant.to_dict()), copy.deepcopy(standing.receipts), dict(call.arguments))
    verdicts = [judge(grant, standing, call) for _ in range(3)]
    assert verdicts[0] == verdicts[1] == verdicts[2] and verdicts[0].passes()
    assert (grant.to_dict(), standing.receipts, dict(call.arguments)) == before
    for carried in ("stable ", "Stable", "STABLE", " stable"):
        assert judge(grant, standing, b.call({"channel": carried})).failed is StandingCheck.NAMED
    # Receipts are joined by content only: an old receipt of this content still speaks, one of now on another doesn't.
    late = ConditionReceipt("release:scan", b.SCAN, b.OTHER_CONTENT, b.SCANNER, True, at=b.NOW)
    assert judge(grant, b.standing(receipts=[late]), call).failed is StandingCheck.CONDITIONS
    early = ConditionReceipt("release:scan", b.SCAN, b.CONTENT, b.SCANNER, True, at=b.NOW - timedelta(days=300))
    assert judge(grant, b.standing(receipts=[early]), call).passes()


@covers("SG-141", "SG-197")
def test_judge_never_answers_a_stop_beside_the_call() -> None:
    suspended = b.standing(GrantState.SUSPENDED, stopped_because="a leak")
    for arguments in ({}, {"channel": ""}, {"channel": "stable "}, {"channel": 7}):
        verdict = judge(b.grant(), suspended, b.call(arguments))
        assert verdict.failed is StandingCheck.NAMED and not verdict.named() and not verdict.stopped_beside
        assert StandingJudge.may_be_naming(b.grant(), b.call(arguments))


@covers("SG-195")
def test_no_axis_bounds_money() -> None:
    assert set(EffectProfile().to_dict()) - {"escalates_on", "rollback_contract", "fully_classified"} == {
        "mutation", "externality", "reversibility", "authority", "subject"
    }  # fmt: skip
    spend = b.call({"channel": "stable", "amount": 10**12})
    assert judge(b.grant(), b.standing(), spend).passes()


def test_a_verdict_spells_what_an_audit_line_cites() -> None:
    grant = b.grant()
    lent = judge(grant, b.standing(), b.call()).to_dict()
    assert lent["failed"] is None and lent["grant"] == "release-stable-1" and lent["grant_digest"] == grant.digest()
    assert lent["cited"] == [b.green().to_dict()]
    assert Canonical.json(lent)  # a line a host can store as it is
    refused = judge(grant, b.standing(GrantState.SUSPENDED), b.call()).to_dict()
    assert refused["failed"] == "in_force" and refused["stopped"] and refused["cited"] == []
