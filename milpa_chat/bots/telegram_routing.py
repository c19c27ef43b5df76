"""Which updates a :class:`~milpa_chat.bots.telegram.TelegramBot` claims, and which it asks Telegram for.

The kit claims only its own updates, so it lives beside the handlers of the application it is in:

* button taps whose data a kit button carries (an approval decision, a page, a tool's detail action);
* commands the assistant knows (``/start``, ``/help``, ``/tools``, ``/approvals`` and its tools),
  addressed to this bot;
* in a later handler group (the fallback group): unknown commands, free text and buttons nobody
  claims — only when no other handler of the application would take the update.

``allowed_updates`` asks Telegram for what the kit needs and for what every other handler of the
application handles (a handler whose update types cannot be told asks for all of them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from telegram import Update

__all__ = ["KIT_UPDATES", "allowed_updates", "claimed_elsewhere"]

#: What the kit itself needs from Telegram.
KIT_UPDATES = ("message", "callback_query")
_MESSAGES = ("message", "edited_message", "channel_post", "edited_channel_post")
#: PTB handler class name -> the update types it handles.
_HANDLED: dict[str, tuple[str, ...]] = {
    "CallbackQueryHandler": ("callback_query",),
    "MessageHandler": _MESSAGES,
    "CommandHandler": ("message", "edited_message"),
    "PrefixHandler": ("message", "edited_message"),
    "InlineQueryHandler": ("inline_query",),
    "ChosenInlineResultHandler": ("chosen_inline_result",),
    "PollHandler": ("poll",),
    "PollAnswerHandler": ("poll_answer",),
    "ChatMemberHandler": ("my_chat_member", "chat_member"),
    "ChatJoinRequestHandler": ("chat_join_request",),
    "PreCheckoutQueryHandler": ("pre_checkout_query",),
    "ShippingQueryHandler": ("shipping_query",),
    "MessageReactionHandler": ("message_reaction", "message_reaction_count"),
    "ChatBoostHandler": ("chat_boost", "removed_chat_boost"),
    "BusinessConnectionHandler": ("business_connection",),
    "BusinessMessagesDeletedHandler": ("deleted_business_messages",),
    "PaidMediaPurchasedHandler": ("purchased_paid_media",),
}


def _types_of(handler: object) -> tuple[str, ...] | None:
    for cls in type(handler).__mro__:
        found = _HANDLED.get(cls.__name__)
        if found is not None:
            return found
    return None


def allowed_updates(handlers: Iterable[object], kit: Iterable[object] = ()) -> list[str]:
    """:data:`KIT_UPDATES` plus what every handler not in ``kit`` handles (all types for one that cannot
    be told, e.g. a ``TypeHandler`` or a ``ConversationHandler``)."""
    from telegram import Update

    mine = {id(h) for h in kit}
    wanted = list(KIT_UPDATES)
    for handler in handlers:
        if id(handler) in mine:
            continue
        types = _types_of(handler)
        if types is None:
            return list(Update.ALL_TYPES)
        wanted += [t for t in types if t not in wanted]
    return wanted


def claimed_elsewhere(application: Any, update: Update, kit: Iterable[object]) -> bool:
    """Whether a handler of ``application`` that is not the kit's would take ``update``."""
    mine = {id(h) for h in kit}
    for group in sorted(application.handlers):
        for handler in application.handlers[group]:
            if id(handler) in mine:
                continue
            check = handler.check_update(update)
            if check is not None and check is not False:
                return True
    return False
