"""The host side of standing grants: kept in the store, judged before an approval, cited, stopped, counted."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from milpa_chat.command.levels import Authority, Externality, Mutation, Reversibility, Subject
from milpa_chat.runtime import ApprovalRefused, ToolContext
from milpa_chat.runtime.trail import AuditTrail
from milpa_chat.store import Store
from milpa_chat.testing import ManualClock
from tests.grants.house import (
    APPROVER,
    NOBODY,
    PUBLISHED,
    REQUESTER,
    SIGNER,
    grant,
    house,
    measured,
    signed,
)

CLEAN = {"archive": "clean.tgz", "channel": "stable"}


async def test_a_signed_grant_lends_the_next_matching_call_without_a_card_and_cites_it(store: Store) -> None:
    registry, desk = house(store)
    await measured(registry, "clean.tgz")
    grant_id = await signed(desk)
    before = len(await registry.approvals.listing())

    result = await registry.call("release_publish", CLEAN, REQUESTER)

    assert result.success and result.data == "published clean.tgz to stable"
    assert PUBLISHED == [("clean.tgz", "stable")]
    assert len(await registry.approvals.listing()) == before  # no card, no approval opened
    assert result.meta["standing_grant"] == grant_id
    [receipt] = result.meta["standing_receipts"]
    assert receipt["operation"] == "release:scan" and receipt["holds"] is True
    assert "lends this call" in result.meta["standing_sentence"]
    assert (await desk.get(grant_id)).uses == 1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("arguments", "who", "why"),
    [
        ({"archive": "other.tgz", "channel": "stable"}, REQUESTER, "other content: never scanned"),
        ({"archive": "leaky.tgz", "channel": "stable"}, REQUESTER, "its scan said no"),
        ({"archive": "clean.tgz", "channel": "beta"}, REQUESTER, "another value than the one the grant fixes"),
        (CLEAN, NOBODY, "a seat the grant does not lend to"),
    ],
)
async def test_a_call_the_grant_does_not_lend_gets_its_approval_card(
    store: Store, arguments: dict[str, str], who: object, why: str
) -> None:
    registry, desk = house(store)
    await measured(registry, "clean.tgz", "leaky.tgz")
    await signed(desk)

    result = await registry.call("release_publish", arguments, who)  # type: ignore[arg-type]

    assert result.success and result.meta.get("requires_verification") is True, why
    assert "standing_grant" not in result.meta and PUBLISHED == []
    approval = await registry.approvals.get(result.meta["approval_id"])
    assert approval is not None and approval.state == "pending"


async def test_a_call_wider_than_the_ceiling_gets_a_card(store: Store) -> None:
    from milpa_chat.command import EffectProfile

    registry, desk = house(store)
    await measured(registry, "clean.tgz")
    narrow = EffectProfile(
        Mutation.PERSISTENT,
        Externality.THIRD_PARTY,
        Reversibility.COMPENSATABLE,
        Authority.WRITE_AS_USER,
        subject=Subject.DATA,
    )
    await signed(desk, grant(ceiling=narrow))

    result = await registry.call("release_publish", CLEAN, REQUESTER)

    assert result.meta.get("requires_verification") is True and PUBLISHED == []


async def test_a_suspension_stops_the_next_call_with_the_way_out_and_a_lift_restores_it(store: Store) -> None:
    registry, desk = house(store)
    await measured(registry, "clean.tgz")
    grant_id = await signed(desk)
    assert (await registry.call("release_publish", CLEAN, REQUESTER)).success

    record, approval = await desk.request("suspend", grant_id, APPROVER, via="slack", note="a leak was reported")
    assert record.state == "suspended" and approval.state == "approved"
    assert approval.data["decided_by"] == APPROVER.principal and approval.data["decided_via"] == "slack"

    stopped = await registry.call("release_publish", CLEAN, REQUESTER)
    assert not stopped.success and stopped.code == "FORBIDDEN"
    assert "is suspended: a leak was reported" in (stopped.error or "")
    assert "a person lifts the suspension" in (stopped.error or "")
    # a stop reaches a call that only may be naming it (no channel said beyond doubt), and opens no card
    assert len(PUBLISHED) == 1

    _, lift = await desk.request("lift", grant_id, SIGNER, via="telegram")
    assert lift.state == "pending"  # growing back waits for a decision of its own
    with pytest.raises(ApprovalRefused, match="four-eyes"):
        await desk.decide(lift.id, "approve", SIGNER, via="telegram")
    lifted, _ = await desk.decide(lift.id, "approve", APPROVER, via="slack")
    assert lifted is not None and lifted.state == "in_force"
    assert (await registry.call("release_publish", CLEAN, REQUESTER)).meta["standing_grant"] == grant_id
    assert (await desk.get(grant_id)).uses == 2  # type: ignore[union-attr]


async def test_a_revoked_or_superseded_grant_lends_nothing_and_the_call_gets_its_card(store: Store) -> None:
    registry, desk = house(store)
    await measured(registry, "clean.tgz")
    first = await signed(desk)
    second = await signed(desk, grant(id="release-stable-2", supersedes=(first,)))
    assert (await desk.get(first)).state == "superseded"  # type: ignore[union-attr]
    assert (await registry.call("release_publish", CLEAN, REQUESTER)).meta["standing_grant"] == second

    await desk.request("revoke", second, SIGNER, via="telegram", note="no longer needed")
    assert (await desk.get(second)).state == "revoked"  # type: ignore[union-attr]
    result = await registry.call("release_publish", CLEAN, REQUESTER)
    assert result.meta.get("requires_verification") is True


async def test_superseding_a_suspended_grant_must_say_what_it_lifts(store: Store) -> None:
    _, desk = house(store)
    first = await signed(desk)
    await desk.request("suspend", first, SIGNER, via="telegram")
    with pytest.raises(ApprovalRefused, match="lifts"):
        await desk.draft(grant(id="again", supersedes=(first,)), APPROVER, via="slack")
    await signed(desk, grant(id="again", supersedes=(first,), lifts="the leak was a false alarm"))
    assert (await desk.get(first)).state == "superseded"  # type: ignore[union-attr]


async def test_an_expired_grant_lends_nothing(store: Store, clock: ManualClock) -> None:
    from datetime import timedelta

    from milpa_chat.grants.records import when

    registry, desk = house(store)
    await signed(desk, grant(expires_at=when(clock()) + timedelta(hours=2)))
    clock.advance(3 * 3600)
    await measured(registry, "clean.tgz")
    assert (await registry.call("release_publish", CLEAN, REQUESTER)).meta.get("requires_verification") is True


async def test_a_silent_falsifier_watcher_lends_nothing(store: Store, clock: ManualClock) -> None:
    registry, desk = house(store)
    await measured(registry, "clean.tgz")
    await signed(desk)
    clock.advance(86400 + 1)  # the watcher's window passed without a sign of life
    assert (await registry.call("release_publish", CLEAN, REQUESTER)).meta.get("requires_verification") is True
    await registry.call("reports_watch", {}, REQUESTER)
    assert (await registry.call("release_publish", CLEAN, REQUESTER)).meta.get("standing_grant")


async def test_signing_is_a_second_step_by_another_person_and_is_decided_once(store: Store) -> None:
    registry, desk = house(store)
    record, approval = await desk.draft(grant(), APPROVER, via="slack")
    assert record.state == "draft" and approval.state == "pending"
    assert approval.data["reason"] == grant().to_json()  # shown whole, in canonical spelling
    assert (await registry.call("release_publish", CLEAN, REQUESTER)).meta.get("requires_verification") is True

    with pytest.raises(ApprovalRefused, match="four-eyes"):
        await desk.decide(approval.id, "approve", APPROVER, via="slack")
    with pytest.raises(ApprovalRefused, match="grants:sign"):
        await desk.decide(approval.id, "approve", NOBODY, via="slack")
    done, decided = await desk.decide(approval.id, "approve", SIGNER, via="telegram")
    assert done is not None and done.state == "in_force" and done.signer == "Sara"
    assert decided.data["decided_by"] == SIGNER.principal
    late = ToolContext("slack:U400", "slack", ("grants:sign",))
    with pytest.raises(ApprovalRefused, match="already approved"):
        await desk.decide(approval.id, "approve", late, via="slack")
    assert [h["action"] for h in done.data["history"]] == ["sign"]


async def test_the_drafter_may_sign_when_the_grant_says_so_still_in_a_second_step(store: Store) -> None:
    _, desk = house(store)
    _, approval = await desk.draft(grant(), APPROVER, via="slack", four_eyes=False)
    assert approval.state == "pending"
    done, _ = await desk.decide(approval.id, "approve", APPROVER, via="slack")
    assert done is not None and done.state == "in_force"


async def test_a_rejected_signature_leaves_a_declined_draft_that_lends_nothing(store: Store) -> None:
    registry, desk = house(store)
    await measured(registry, "clean.tgz")
    _, approval = await desk.draft(grant(), APPROVER, via="slack")
    done, _ = await desk.decide(approval.id, "reject", SIGNER, via="telegram", note="not this week")
    assert done is not None and done.state == "declined"
    assert (await registry.call("release_publish", CLEAN, REQUESTER)).meta.get("requires_verification") is True


async def test_a_grant_change_is_never_decided_by_a_tool(store: Store) -> None:
    registry, desk = house(store)
    _, approval = await desk.draft(grant(), APPROVER, via="slack")
    with pytest.raises(ApprovalRefused, match="no tool decides it"):
        await registry.approvals.decide(approval.id, "approve", SIGNER)  # what resolve_verification does
    assert (await registry.approvals.get(approval.id)).state == "pending"  # type: ignore[union-attr]


async def test_a_text_that_was_not_the_one_signed_is_a_signature_fault(store: Store) -> None:
    from milpa_chat.grants.records import COLLECTION

    registry, desk = house(store)
    await measured(registry, "clean.tgz")
    grant_id = await signed(desk)
    record = await desk.get(grant_id)
    assert record is not None
    wider = grant(to=(REQUESTER.principal, NOBODY.principal)).to_json()
    await store.put(COLLECTION, grant_id, {**record.data, "document": wider})
    result = await registry.call("release_publish", CLEAN, NOBODY)
    assert result.meta.get("requires_verification") is True and PUBLISHED == []


async def test_a_kept_text_that_does_not_read_stops_every_seat(store: Store) -> None:
    from milpa_chat.grants.records import COLLECTION

    registry, desk = house(store)
    await measured(registry, "clean.tgz")
    grant_id = await signed(desk)
    record = await desk.get(grant_id)
    assert record is not None
    await store.put(COLLECTION, grant_id, {**record.data, "document": record.text[:-1]})
    result = await registry.call("release_publish", CLEAN, REQUESTER)
    assert result.code == "FORBIDDEN" and "does not read whole" in (result.error or "")


async def test_a_lent_call_is_audited_and_on_the_trail(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    registry, desk = house(store)
    trail = AuditTrail(store).attach(registry)
    await measured(registry, "clean.tgz")
    grant_id = await signed(desk)
    with caplog.at_level(logging.INFO, logger="milpa_chat.audit"):
        await registry.call("release_publish", CLEAN, REQUESTER)
    [line] = [r.getMessage() for r in caplog.records if "[GrantAudit]" in r.getMessage()]
    assert f"grant={grant_id}" in line and "release:scan@sha256:" in line
    lent = [e for e in await trail.entries() if e.kind == "lent"]
    assert lent and lent[0].fields["grant"] == grant_id
    assert any(e.subject.startswith("standing:sign") or e.kind == "decided" for e in await trail.entries())
    assert (await trail.verify()).ok


async def test_everything_stands_on_new_objects_over_the_same_store(opener: Callable[[], Store]) -> None:
    first = opener()
    registry, desk = house(first)
    await measured(registry, "clean.tgz")
    grant_id = await signed(desk)
    assert (await registry.call("release_publish", CLEAN, REQUESTER)).meta.get("standing_grant") == grant_id
    await desk.request("suspend", grant_id, SIGNER, via="telegram", note="checking a report")

    again = opener()
    registry2, desk2 = house(again)
    record = await desk2.get(grant_id)
    assert record is not None and record.state == "suspended" and record.uses == 1
    assert (await registry2.call("release_publish", CLEAN, REQUESTER)).code == "FORBIDDEN"
    _, lift = await desk2.request("lift", grant_id, SIGNER, via="telegram")
    await desk2.decide(lift.id, "approve", APPROVER, via="slack")
    result = await registry2.call("release_publish", CLEAN, REQUESTER)
    assert result.meta.get("standing_grant") == grant_id
    assert (await desk2.get(grant_id)).uses == 2  # type: ignore[union-attr]
    if again is not first:
        await again.close()
    await first.close()


async def test_a_decision_a_crash_left_unwritten_is_applied_by_the_sweep(store: Store) -> None:
    registry, desk = house(store)
    _, approval = await desk.draft(grant(), APPROVER, via="slack")
    registry.approvals.dispatcher._listeners.pop("verification.granted")  # the process dies before applying
    await registry.approvals.decide(approval.id, "approve", SIGNER, via="telegram")
    assert (await desk.get("release-stable")).state == "draft"  # type: ignore[union-attr]
    assert await desk.sweep() == 1
    assert (await desk.get("release-stable")).state == "in_force"  # type: ignore[union-attr]
    assert await desk.sweep() == 0


@pytest.mark.parametrize("name", ["notes__delete", "_private", "notes_delete"])
async def test_a_confirm_tool_whose_name_no_grant_can_cover_still_asks_for_its_confirmation(
    store: Store, name: str
) -> None:
    registry, desk = house(store)
    await signed(desk)
    deleted: list[int] = []

    def delete(args, ctx):
        deleted.append(args["id"])
        return "deleted"

    registry.register(
        name,
        "Delete a note",
        {"type": "object", "properties": {"id": {"type": "integer"}}},
        delete,
        confirm=True,
    )
    result = await registry.call(name, {"id": 3}, REQUESTER)
    assert result.success and result.meta.get("requires_confirmation") is True and deleted == []
    assert "standing_grant" not in result.meta
