"""Standing grants in chat: "Always allow…" drafts, a second person signs on the signature's own card,
the next matching call runs without a card, ``/grants`` lists with state and uses, and a stop edits every copy.
Every tap and command goes through the assistant, as a platform delivers it."""

from __future__ import annotations

from milpa_chat.chat import Assistant, ChatUser, Identities
from milpa_chat.grants.chat import GrantChat, grant_card
from milpa_chat.store import MemoryStore
from milpa_chat.testing.transport import RecordingTransport
from tests.grants.house import PUBLISHED, house, measured

RITA = ChatUser("100", "Rita", "rita")
ABEL = ChatUser("200", "Abel", "abel")
SARA = ChatUser("300", "Sara", "sara")
APPROVERS = "-900"
IDENTITIES = {
    "roles": {"dev": ["release:publish"], "lead": ["release:approve", "grants:sign"], "signer": ["grants:sign"]},
    "users": {"telegram:100": ["dev"], "telegram:200": ["lead"], "telegram:300": ["signer"]},
    "approvers": {"telegram": [APPROVERS]},
}


def setup() -> tuple[Assistant, GrantChat, RecordingTransport]:
    registry, desk = house(MemoryStore())
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES))
    tg = RecordingTransport("telegram")
    assistant.attach(tg)
    return assistant, GrantChat(assistant, desk), tg


async def test_always_allow_then_a_second_person_signs_then_the_next_call_runs_without_a_card() -> None:
    assistant, chat, tg = setup()
    await measured(assistant.registry, "clean.tgz")
    await tg.say(assistant, RITA, "/release_publish clean.tgz stable")
    [first] = await assistant.approvals.listing(state="pending")
    assert chat.always_button(first, "approver") is not None and chat.always_button(first, "requester") is None

    # "Always allow…" on the approver's card drafts; nothing is signed yet
    card = tg.last(APPROVERS)
    assert "Always allow…" in [b.label for b in card.buttons]
    assert all("Always" not in b.label for b in tg.last(RITA.id).buttons)  # not on the requester's copy
    await tg.tap(assistant, ABEL, card, "Always allow…")
    assert "lends nothing until a person signs it" in tg.answers_to(ABEL)[-1]
    [draft] = await chat.desk.listing()
    assert draft.state == "draft" and draft.readable() is not None
    assert draft.document().to == ("telegram:100",)
    signature_card = tg.last(APPROVERS)
    assert "standing:sign" in signature_card.text and '"channel":"stable"' in signature_card.text

    await tg.tap(assistant, ABEL, signature_card, "Approve")  # the drafter may not sign (four-eyes)
    assert "four-eyes" in tg.answers_to(ABEL)[-1]
    assert (await chat.desk.get(draft.id)).state == "draft"  # type: ignore[union-attr]
    await tg.tap(assistant, SARA, signature_card, "Approve")  # the second, separate step
    signed = await chat.desk.get(draft.id)
    assert signed is not None and signed.state == "in_force" and signed.signer == "Sara"

    cards_before = len(tg.in_chat(APPROVERS))
    await tg.say(assistant, RITA, "/release_publish clean.tgz stable")
    assert PUBLISHED == [("clean.tgz", "stable")] and len(tg.in_chat(APPROVERS)) == cards_before
    assert "published clean.tgz to stable" in tg.last(RITA.id).text

    await tg.say(assistant, RITA, "/release_publish other.tgz stable")  # other content: a card, as before
    assert len(tg.in_chat(APPROVERS)) == cards_before + 1 and len(PUBLISHED) == 1


async def test_grants_lists_state_and_uses_and_a_suspension_edits_every_copy() -> None:
    assistant, chat, tg = setup()
    slack = RecordingTransport("slack")
    assistant.attach(slack)
    await measured(assistant.registry, "clean.tgz")
    from tests.grants.house import signed

    grant_id = await signed(chat.desk)
    await tg.say(assistant, RITA, "/release_publish clean.tgz stable")

    await tg.say(assistant, ABEL, "/grants", APPROVERS)
    await tg.say(assistant, RITA, "/grants")
    lead_copy, dev_copy = tg.last(APPROVERS), tg.last(RITA.id)
    assert "in force" in lead_copy.text and "Uses: 1" in lead_copy.text.replace("*", "")
    assert {b.label for b in lead_copy.buttons} == {"Suspend", "Revoke"} and dev_copy.buttons == ()

    await tg.tap(assistant, RITA, lead_copy, "Suspend")  # seeing the button confers nothing
    assert "grants:sign" in tg.answers_to(RITA)[-1]
    await tg.tap(assistant, ABEL, lead_copy, "Suspend")
    assert (await chat.desk.get(grant_id)).state == "suspended"  # type: ignore[union-attr]
    for copy in (lead_copy, dev_copy):
        assert "suspended" in copy.text and "Uses: 1" in copy.text.replace("*", "")
    assert {b.label for b in lead_copy.buttons} == {"Lift", "Revoke"}

    await tg.say(assistant, RITA, "/release_publish clean.tgz stable")
    assert "suspended" in tg.last(RITA.id).text and len(PUBLISHED) == 1


def test_a_card_shows_the_whole_text() -> None:
    from milpa_chat.grants.records import GrantRecord
    from tests.grants.house import grant

    text = grant().to_json()
    card = grant_card(GrantRecord("release-stable", {"document": text, "state": "draft", "uses": 0}, 1))
    assert any(getattr(b, "text", None) == text for b in card.blocks) and card.buttons == ()


async def test_a_change_made_in_another_process_reaches_every_copy_at_the_next_sweep() -> None:
    from milpa_chat.runtime import ToolRegistry
    from milpa_chat.standing import GrantDesk
    from tests.grants.house import SIGNER, signed

    assistant, chat, tg = setup()
    grant_id = await signed(chat.desk)
    await tg.say(assistant, ABEL, "/grants", APPROVERS)
    copy = tg.last(APPROVERS)
    elsewhere = GrantDesk(ToolRegistry(store=assistant.store))  # e.g. milpa-chat grants suspend, same store
    await elsewhere.request("suspend", grant_id, SIGNER, via="cli", note="from the shell")
    assert "in force" in copy.text
    assert await chat.sweep() == 1 and "suspended" in copy.text and "from the shell" in copy.text
    assert await chat.sweep() == 0


def test_a_grant_whose_id_is_too_long_for_a_button_says_how_to_manage_it() -> None:
    from milpa_chat.grants.records import GrantRecord
    from tests.grants.house import grant

    long_id = "release-" + "x" * 60
    record = GrantRecord(long_id, {"document": grant(id=long_id).to_json(), "state": "in_force", "uses": 2}, 3)
    card = grant_card(record)
    assert card.buttons == () and any(
        f"milpa-chat grants suspend|revoke {long_id}" in getattr(b, "text", "") for b in card.blocks
    )


async def test_always_allow_under_a_suspended_grant_drafts_its_replacement_which_says_what_it_lifts() -> None:
    from tests.grants.house import SIGNER, signed

    assistant, chat, tg = setup()
    await measured(assistant.registry, "clean.tgz")
    old = await signed(chat.desk)
    await chat.desk.request("suspend", old, SIGNER, via="telegram", note="checking")
    await tg.say(assistant, RITA, "/release_publish clean.tgz beta")  # not the stopped grant's call: a card
    await tg.tap(assistant, ABEL, tg.last(APPROVERS), "Always allow…")
    [draft] = [r for r in await chat.desk.listing() if r.state == "draft"]
    document = draft.document()
    assert document.supersedes == (old,) and document.lifts is not None and old in document.lifts
    assert '"lifts":' in tg.last(APPROVERS).text and '"supersedes":["release-stable"]' in tg.last(APPROVERS).text
    await tg.tap(assistant, SARA, tg.last(APPROVERS), "Approve")
    assert (await chat.desk.get(old)).state == "superseded"  # type: ignore[union-attr]
    assert (await chat.desk.get(draft.id)).state == "in_force"  # type: ignore[union-attr]


async def test_the_assistants_sweeper_edits_the_copies_a_change_elsewhere_left_behind() -> None:
    import asyncio

    from milpa_chat.runtime import ToolRegistry
    from milpa_chat.standing import GrantDesk
    from tests.grants.house import SIGNER, signed

    assistant, chat, tg = setup()
    grant_id = await signed(chat.desk)
    await tg.say(assistant, ABEL, "/grants", APPROVERS)
    copy = tg.last(APPROVERS)
    elsewhere = GrantDesk(ToolRegistry(store=assistant.store))
    await elsewhere.request("suspend", grant_id, SIGNER, via="cli", note="from the shell")
    sweeper = asyncio.ensure_future(assistant.run_sweeper(interval=0.01))
    try:
        for _ in range(200):
            if "suspended" in copy.text:
                break
            await asyncio.sleep(0.01)
    finally:
        sweeper.cancel()
    assert "suspended" in copy.text and "from the shell" in copy.text
