"""Through the Telegram adapter (python-telegram-bot against the local Bot API server): a person who already has
as many payment requests pending as the cap allows is told so in one sentence naming the cap; another person is
not; a request decided on its card frees a slot."""

from __future__ import annotations

from milpa_chat import ToolRegistry
from milpa_chat.bots import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.examples import ExampleTools
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer, TelegramUser

from .telegram_support import ALICE, APPROVERS, BOB, IDENTITIES, MARIA, WAIT, label


async def test_a_request_past_the_cap_is_refused_in_the_chat_and_a_decision_frees_a_slot() -> None:
    store = MemoryStore()
    registry = ToolRegistry(store=store, approval_max_pending=2)
    registry.scan(ExampleTools(store))
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES), name="Test assistant")
    async with BotApiServer() as server:
        server.group(APPROVERS, "Approvers", members=[ALICE, MARIA, BOB])
        bot = TelegramBot(assistant, server.token, server.base_url, sweep_interval=None)
        await bot.start(poll_timeout=1)
        try:

            async def ask(user: TelegramUser, amount: int) -> str:
                update = await server.send_message(user.id, user, f"/send_payment ACME {amount}")
                return (await server.wait_for_message(user.id, since=update, timeout=WAIT)).text or ""

            for amount in (1, 2):
                assert "needs approval" in (await ask(ALICE, amount)).lower()
            refused = await ask(ALICE, 3)
            assert "You have 2 pending requests open" in refused and "max_pending_per_principal=2" in refused
            assert "needs approval" in (await ask(BOB, 4)).lower()  # another person: unaffected

            card = next(m for m in server.messages(APPROVERS) if '"amount": 1.0' in (m.text or ""))
            tap = await server.tap_button(card, label(card, "Reject"), MARIA)
            await server.wait_until(lambda: server.callback_query(tap).answered, WAIT)
            assert "needs approval" in (await ask(ALICE, 5)).lower()  # the rejected request freed a slot
        finally:
            await bot.stop()
            await store.close()
