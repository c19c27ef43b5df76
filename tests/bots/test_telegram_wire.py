"""TelegramTransport sends and edits with exactly the parameters PTB's typed methods send, whichever way it calls
the Bot API (without parsing the answer into a ``Message`` on PTB's own bot classes, through the typed methods on
a bot with ``Defaults``, arbitrary callback data or a class of its own)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from telegram import Bot
from telegram.ext import ApplicationBuilder, Defaults, ExtBot

from milpa_chat.bots.telegram_transport import TelegramTransport, _kwargs
from milpa_chat.chat import cards
from milpa_chat.chat.streaming import feedback_buttons
from milpa_chat.renderers.model import Actions, Message
from milpa_chat.testing import BotApiServer, TelegramUser

ALICE = TelegramUser(1001, "Alice", "alice")


def with_buttons(body: str) -> Message:
    message = cards.text(body)
    return replace(message, blocks=(*message.blocks, Actions.row(*feedback_buttons("a1"))))


def sent(server: BotApiServer, mark: int, method: str) -> list[dict[str, str]]:
    """The parameters (as sent, in order) of the ``method`` calls since ``mark``, less the message id."""
    return [
        {k: v for k, v in c.params.items() if k != "message_id"}
        for c in server.calls[mark:]
        if c.method == method and c.ok
    ]


async def test_sends_and_edits_carry_what_the_typed_methods_send() -> None:
    async with BotApiServer() as server:
        server.private_chat(ALICE)
        bot = Bot(server.token, base_url=server.base_url)
        async with bot:
            transport = TelegramTransport(bot)
            chat = str(ALICE.id)
            for message in (with_buttons("<b>bold</b> & https://example.org"), cards.text("plain")):
                part = transport.renderer.render_message(message).messages[0]
                mark = server.mark()
                ref = await transport.send(chat, message)
                typed = await bot.send_message(chat, **_kwargs(part))
                ours, theirs = sent(server, mark, "sendMessage")
                assert ours == theirs and list(ours) == list(theirs)
                assert server.message(ALICE.id, int(ref.message_id)).text == typed.text

                edited = with_buttons("changed")
                part = transport._edit_renderer.render_message(edited).messages[0]
                mark = server.mark()
                await transport.edit(ref, edited)
                await bot.edit_message_text(chat_id=chat, message_id=typed.message_id, **_kwargs(part))
                ours, theirs = sent(server, mark, "editMessageText")
                assert ours == theirs and list(ours) == list(theirs)
                assert (
                    server.message(ALICE.id, int(ref.message_id)).buttons
                    == server.message(ALICE.id, typed.message_id).buttons
                )


class OwnBot(ExtBot[None]):
    """A bot class of the application's own (which may override the typed methods)."""


async def test_a_bot_with_defaults_or_a_class_of_its_own_keeps_the_typed_methods() -> None:
    async with BotApiServer() as server:
        server.private_chat(ALICE)
        builders: list[Any] = [
            ApplicationBuilder()
            .token(server.token)
            .base_url(server.base_url)
            .defaults(Defaults(disable_notification=True)),
            ApplicationBuilder().bot(OwnBot(server.token, base_url=server.base_url)),
        ]
        for builder in builders:
            app = builder.build()
            async with app:
                transport = TelegramTransport(app.bot)
                assert transport._post is None
                mark = server.mark()
                ref = await transport.send(str(ALICE.id), cards.text("hello"))
                await transport.edit(ref, cards.text("hello again"))
                assert server.message(ALICE.id, int(ref.message_id)).text == "hello again"
                if app.bot.defaults is not None:  # the default reaches the request, as PTB's typed method sends it
                    assert sent(server, mark, "sendMessage")[0]["disable_notification"] == "true"
