"""With standing grants attached, the Telegram command menu offers /grants (and without them it does not)."""

from __future__ import annotations

from milpa_chat.bots.telegram import TelegramBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.standing import GrantChat
from milpa_chat.store import MemoryStore
from milpa_chat.testing import BotApiServer
from tests.grants.house import house

IDENTITIES = {"roles": {"dev": ["release:publish"]}, "users": {"telegram:100": ["dev"]}}


async def _menu(with_grants: bool) -> list[str]:
    registry, desk = house(MemoryStore())
    assistant = Assistant(registry, Identities.from_dict(IDENTITIES))
    if with_grants:
        GrantChat(assistant, desk)
    async with BotApiServer() as server:
        bot = TelegramBot(assistant, server.token, server.base_url, sweep_interval=None)
        await bot.start(poll_timeout=1)
        try:
            await server.wait_for(lambda call: call.method == "setMyCommands", timeout=15)
        finally:
            await bot.stop()
        return [c["command"] for c in server.commands()]


async def test_the_menu_offers_grants_only_when_they_are_attached() -> None:
    with_grants, without = await _menu(True), await _menu(False)
    assert with_grants[:3] == ["tools", "help", "grants"]
    assert "grants" not in without and without[:2] == ["tools", "help"]
