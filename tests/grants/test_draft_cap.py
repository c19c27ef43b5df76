"""One person may have at most ``max_drafts_per_principal`` standing-grant drafts waiting for a signature: one more
is refused with the cap named; another person is unaffected; a draft signed or declined frees its slot."""

from __future__ import annotations

import pytest

from milpa_chat.runtime import ApprovalRefused
from milpa_chat.store import Store
from tests.grants.house import APPROVER, REQUESTER, SIGNER, grant, house


async def test_drafts_past_the_cap_are_refused_until_one_is_signed_or_declined(store: Store) -> None:
    _, desk = house(store, max_drafts_per_principal=2)
    (_, first), _ = [await desk.draft(grant(id=f"g-{n}"), APPROVER, via="slack") for n in (1, 2)]

    with pytest.raises(ApprovalRefused, match="max_drafts_per_principal=2") as refused:
        await desk.draft(grant(id="g-3"), APPROVER, via="slack")
    assert refused.value.code == "RATE_LIMITED" and "standing-grant drafts" in str(refused.value)
    assert await desk.get("g-3") is None  # nothing kept

    await desk.draft(grant(id="g-4"), SIGNER, via="telegram")  # another person: unaffected

    await desk.decide(first.id, "reject", SIGNER, via="telegram")  # declined: the slot frees
    record, _ = await desk.draft(grant(id="g-3"), APPROVER, via="slack")
    assert record.state == "draft"
    with pytest.raises(ApprovalRefused, match="max_drafts_per_principal"):
        await desk.draft(grant(id="g-5", to=(REQUESTER.principal,)), APPROVER, via="slack")
