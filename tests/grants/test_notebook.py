"""Standing grants in the notebook: the panel lists state and uses; its buttons suspend, lift, sign — as the
configured notebook user, through the one decision path; the inbox signs a waiting signature like any card."""

from __future__ import annotations

from milpa_chat.chat import Assistant, Identities
from milpa_chat.jupyter.grants import GrantsPanel
from milpa_chat.store import MemoryStore
from tests.grants.house import APPROVER, REQUESTER, grant, house, measured, signed

CLEAN = {"archive": "clean.tgz", "channel": "stable"}


async def test_the_panel_suspends_and_a_lift_is_signed_by_another_notebook_user() -> None:
    registry, desk = house(MemoryStore())
    await measured(registry, "clean.tgz")
    grant_id = await signed(desk)
    await registry.call("release_publish", CLEAN, REQUESTER)

    maria = GrantsPanel(desk, principal="maria", scopes=["grants:sign"])
    await maria.idle()
    assert set(maria.buttons(grant_id)) == {"Suspend", "Revoke"}
    assert "in force · 1 use" in maria.rows.children[0].children[0].value
    maria.reason.value = "a leak was reported"
    maria.buttons(grant_id)["Suspend"].click()
    await maria.idle()
    assert (await desk.get(grant_id)).state == "suspended"  # type: ignore[union-attr]
    stopped = await registry.call("release_publish", CLEAN, REQUESTER)
    assert stopped.code == "FORBIDDEN" and "a leak was reported" in (stopped.error or "")
    [entry] = [h for h in (await desk.get(grant_id)).data["history"] if h["action"] == "suspend"]  # type: ignore[union-attr]
    assert entry["by"] == "jupyter:maria" and entry["via"] == "jupyter"

    maria.buttons(grant_id)["Lift"].click()
    await maria.idle()
    [change] = (await desk.get(grant_id)).pending  # type: ignore[union-attr]
    assert await maria.sign(change) is None and "four-eyes" in maria.status.value
    viewer = GrantsPanel(desk, principal="vera")  # no signer scope: no buttons, and nothing to decide
    await viewer.idle()
    assert viewer.buttons(grant_id) == {} and viewer.buttons(change) == {}
    pedro = GrantsPanel(desk, principal="pedro", scopes=["grants:sign"])
    await pedro.idle()
    pedro.buttons(change)["Sign"].click()
    await pedro.idle()
    assert (await desk.get(grant_id)).state == "in_force"  # type: ignore[union-attr]
    assert (await registry.call("release_publish", CLEAN, REQUESTER)).meta.get("standing_grant") == grant_id


async def test_the_inbox_signs_a_waiting_signature_as_the_notebook_user() -> None:
    from milpa_chat.jupyter import ApprovalInbox

    registry, desk = house(MemoryStore())
    assistant = Assistant(registry, Identities.from_dict({"users": {"jupyter:pedro": ["grants:sign"]}}))
    _, approval = await desk.draft(grant(), APPROVER, via="slack")
    inbox = ApprovalInbox(assistant, principal="pedro", refresh_every=3600)
    try:
        await inbox.refresh()
        assert approval.id in [item.id for item in inbox.pending]
        await inbox.approve(approval.id)
        record = await desk.get("release-stable")
        assert record is not None and record.state == "in_force" and record.signer == "pedro"
        assert record.data["signed_by"]["via"] == "jupyter"
    finally:
        inbox.close()


async def test_always_allow_in_the_inbox_drafts_and_another_notebook_user_signs() -> None:
    from milpa_chat.jupyter import ApprovalInbox
    from milpa_chat.standing import GrantChat
    from tests.grants.house import PUBLISHED

    registry, desk = house(MemoryStore())
    identities = Identities.from_dict(
        {"users": {"jupyter:abel": ["release:approve", "grants:sign"], "jupyter:pedro": ["grants:sign"]}}
    )
    assistant = Assistant(registry, identities)
    GrantChat(assistant, desk)
    await measured(registry, "clean.tgz")
    asked = await registry.call("release_publish", CLEAN, REQUESTER)
    request = asked.meta["approval_id"]
    abel = ApprovalInbox(assistant, principal="abel", refresh_every=3600)
    pedro = ApprovalInbox(assistant, principal="pedro", refresh_every=3600)
    try:
        await abel.refresh()
        item = abel.item(request)
        assert item.always_button in item.widget.children[1].children
        item.always_button.click()
        await abel._bg.idle()
        [draft] = await desk.listing()
        assert draft.state == "draft" and draft.data["drafted_by"]["principal"] == "jupyter:abel"

        await pedro.refresh()
        [signature] = [i for i in pedro.pending if i.approval.data.get("subject") == "standing:sign"]
        assert draft.text in signature.text.replace("\n", "")  # the whole text, as signed
        assert signature.always_button not in signature.widget.children[1].children  # no grant of a grant
        signature.approve_button.click()
        await pedro._bg.idle()
        assert (await desk.get(draft.id)).state == "in_force"  # type: ignore[union-attr]
        assert (await registry.call("release_publish", CLEAN, REQUESTER)).meta.get("standing_grant") == draft.id
        assert PUBLISHED == [("clean.tgz", "stable")]
    finally:
        abel.close()
        pedro.close()
