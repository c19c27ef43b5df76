"""Approving at scale in the playground (``MILPA_PLAYGROUND_AT_SCALE``): a comment and a question from the approvers'
group show on the payment's card; without the setting the playground is as before."""

from __future__ import annotations

import asyncio

from milpa_chat.playground.world import AT_SCALE_ENV, TELEGRAM_APPROVERS, World


async def test_the_playground_offers_the_actions_around_a_decision() -> None:
    async with World(env={AT_SCALE_ENV: "1"}) as world:
        alice, maria = world.persona("alice"), world.persona("maria")
        await world.telegram_say(alice, alice.telegram_id, "/send_payment ACME 120")
        card = await world.telegram.wait_until(
            lambda: next((m for m in world.telegram.messages(TELEGRAM_APPROVERS) if m.button_labels), None), 15
        )
        ref = (card.text or "").split("Ref ")[1][:8]
        await recorded(world)  # Maria acts on a card she has seen
        await world.telegram_say(maria, TELEGRAM_APPROVERS, f"/comment {ref} invoice 7 matches")
        await world.telegram_say(maria, TELEGRAM_APPROVERS, f"/ask {ref} is this the March invoice?")
        now = lambda: world.telegram.message(card.chat.id, card.message_id).text or ""  # noqa: E731
        # the two commands are handled concurrently (either may be written first); the card converges to both
        shown = lambda: "Maria asked: is this the March invoice?" in now() and "Maria: invoice 7 matches" in now()  # noqa: E731
        await world.telegram.wait_until(lambda: shown() or None, 15)
        assert now().index("Maria: invoice 7 matches") < now().index("Ref "), "the notes sit above the reference line"


async def test_without_the_setting_cards_carry_no_reference() -> None:
    async with World(env={}) as world:
        alice = world.persona("alice")
        await world.telegram_say(alice, alice.telegram_id, "/send_payment ACME 120")
        card = await world.telegram.wait_until(
            lambda: next((m for m in world.telegram.messages(TELEGRAM_APPROVERS) if m.button_labels), None), 15
        )
        assert "Ref " not in (card.text or "")


async def recorded(world: World) -> None:
    for _ in range(300):
        if all(c.get("message_id") for r in await world.store.scan("approvals") for c in r.value["cards"]):
            return
        await asyncio.sleep(0.05)
    raise TimeoutError("the cards were not recorded")
