"""The handlers a :class:`~milpa_chat.bots.telegram.TelegramBot` adds to its application (see
:mod:`milpa_chat.bots.telegram_routing` for what each claims)."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from milpa_chat.bots.telegram_routing import claimed_elsewhere
from milpa_chat.chat.commands import CommandError, parse_command
from milpa_chat.chat.inbound import ChatUser, Inbound
from milpa_chat.renderers.model import parse_callback_data

if TYPE_CHECKING:
    from telegram import CallbackQuery, Update
    from telegram import Message as TgMessage
    from telegram import User as TgUser
    from telegram.ext import BaseHandler, ContextTypes

    from milpa_chat.bots.telegram_transport import TelegramTransport
    from milpa_chat.chat.assistant import Assistant

__all__ = ["TelegramHandlers", "chat_user", "known_commands"]

log = logging.getLogger("milpa_chat.bots.telegram")

INVALID_BUTTON = "This button is not valid."
#: A tap of the kit's form (``action:ref``) whose action the bot does not know (a removed tool's button).
STALE_BUTTON = "This button is not valid any more."
WORKING = "Working on it…"
FAILED = "Something went wrong while handling this button; check the chat for what was done."


def chat_user(user: TgUser) -> ChatUser:
    """The platform identity of a Telegram user (``from`` of an update)."""
    return ChatUser(str(user.id), user.full_name, user.username)


class TelegramHandlers:
    """What the kit does with the updates it claims."""

    assistant: Assistant
    transport: TelegramTransport
    application: Any
    answer_within: float
    _late_answers: set[asyncio.Future[bool]]
    _handlers: list[BaseHandler[Any, Any, Any]]

    # ------------------------------------------------------------ what the kit claims
    def _claims_data(self, data: object) -> bool:
        """Callback data of a kit button (the pattern of the kit's ``CallbackQueryHandler``)."""
        if not isinstance(data, str):
            return False
        try:
            action, _ = parse_callback_data(data)
        except ValueError:
            return False
        return self.assistant.knows_action(action)

    def _not_claimed(self, data: object) -> bool:
        """Callback data of no kit button (the pattern of the stray-tap fallback)."""
        return not self._claims_data(data)

    def claims_command(self, text: str) -> bool:
        """Whether ``text`` is a command the assistant knows, addressed to this bot."""
        if not text.startswith("/"):
            return False
        try:
            command = parse_command(text, self.transport.bot_username)
        except CommandError:
            return False  # /cmd@another_bot
        return self.assistant.knows_command(command.name)

    # ------------------------------------------------------------ handlers
    async def _on_message(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message, user = update.message, update.effective_user
        if message is None or message.text is None or user is None or user.is_bot:
            return
        if message.chat.type != "private" and not self._addressed(message):
            return  # group chatter that is not for the bot
        inbound = Inbound(
            "telegram",
            str(message.chat.id),
            chat_user(user),
            text=message.text,
            delivery_id=str(update.update_id),
            chat_type=message.chat.type,
            raw=update,
        )
        await self.assistant.handle(inbound, self.transport)

    async def _on_fallback_message(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """Unknown commands and free text, unless another handler of the application takes the update."""
        message = update.message
        if message is None or message.text is None or self.claims_command(message.text):
            return  # a kit command was handled in the kit's group
        if claimed_elsewhere(self.application, update, self._handlers):
            return
        await self._on_message(update, context)

    async def _on_stray_tap(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        """A button no handler claims (stale, forged, or another bot's): told it is not valid."""
        query = update.callback_query
        if query is None or self._claims_data(query.data):
            return
        if claimed_elsewhere(self.application, update, self._handlers):
            return
        await self.transport.answer_query(query.id, _stray_answer(query.data), alert=True)

    def _addressed(self, message: TgMessage) -> bool:
        text = message.text or ""
        if text.startswith("/"):
            return True
        reply = message.reply_to_message
        if reply is not None and reply.from_user is not None and reply.from_user.id == self.application.bot.id:
            return True
        username = self.transport.bot_username
        return username is not None and f"@{username.lower()}" in text.lower()

    async def _on_callback(self, update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        query = update.callback_query
        if query is None:
            return
        inbound = _tap(update, query)
        if inbound is None:
            await self.transport.answer_query(query.id, INVALID_BUTTON, alert=True)
            return
        if self.answer_within <= 0:
            await self.transport.answer_query(query.id, WORKING)
            timer = None
        else:  # a spinner must not outlive answer_within, whatever the assistant is doing
            timer = asyncio.get_running_loop().call_later(self.answer_within, self._answer_late, query.id)
        try:
            await self.assistant.handle(inbound, self.transport)
        except Exception:
            await self.transport.answer_query(query.id, FAILED, alert=True)
            raise
        finally:
            if timer is not None:
                timer.cancel()
        await self.transport.answer_query(query.id)  # every query is answered once, also when ignored

    def _answer_late(self, query_id: str) -> None:
        if not self.transport.answered(query_id):
            task = asyncio.ensure_future(self.transport.answer_query(query_id, WORKING))
            self._late_answers.add(task)
            task.add_done_callback(self._late_answers.discard)

    async def _on_error(self, update: object, context: ContextTypes.DEFAULT_TYPE) -> None:
        update_id = getattr(update, "update_id", None)
        log.error("error while handling Telegram update %s", update_id, exc_info=context.error)


def _stray_answer(data: str | None) -> str:
    try:
        parse_callback_data(data or "")
    except ValueError:
        return INVALID_BUTTON
    return STALE_BUTTON


def _known_commands_filter() -> type:
    from telegram.ext import filters

    class KnownCommands(filters.MessageFilter):
        """Messages whose text is a command the bot's assistant knows."""

        def __init__(self, bot: TelegramHandlers) -> None:
            super().__init__(name="milpa_known_commands")
            self.bot = bot

        def filter(self, message: TgMessage) -> bool:
            return self.bot.claims_command(message.text or "")

    return KnownCommands


def known_commands(bot: TelegramHandlers) -> Any:
    return _known_commands_filter()(bot)


def _tap(update: Update, query: CallbackQuery) -> Inbound | None:
    """A button tap as an ``Inbound``, or ``None`` for data no milpa button produced (or no message)."""
    message = query.message
    if message is None or query.data is None:
        return None
    try:
        action, ref = parse_callback_data(query.data)
    except ValueError:
        return None
    return Inbound(
        "telegram",
        str(message.chat.id),
        chat_user(query.from_user),
        action=action,
        ref=ref,
        delivery_id=str(update.update_id),
        message_id=str(message.message_id),
        chat_type=message.chat.type,
        buttons=tapped_buttons(message),
        raw=query,
    )


def tapped_buttons(message: object) -> tuple[str, ...] | None:
    """The callback data of every button of the tapped message as Telegram reported it (its
    ``reply_markup``); ``None`` for a message too old for Telegram to report (an inaccessible message:
    ``date`` 0, no content)."""
    from telegram import Message

    if not isinstance(message, Message) or not message.is_accessible:
        return None
    keyboard = message.reply_markup.inline_keyboard if message.reply_markup is not None else ()
    return tuple(b.callback_data for row in keyboard for b in row if isinstance(b.callback_data, str))
