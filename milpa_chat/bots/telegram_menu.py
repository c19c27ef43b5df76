"""The Telegram command menu (``setMyCommands``) of a :class:`~milpa_chat.bots.telegram.TelegramBot`.

Per scope where the Bot API allows it: the default scope gets the tools the identities' default scopes
may call; every ``telegram:<id>`` user of the identities gets their own menu in their private chat
(``BotCommandScopeChat``); every approver chat gets the commands of its scopes, and each listed user
there their own (``BotCommandScopeChatMember``). A scope whose menu equals the one it falls back to is
deleted (a member's menu equal to the chat's is not set).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from milpa_chat.chat.inbound import ChatUser
from milpa_chat.runtime.context import ToolContext

if TYPE_CHECKING:
    from telegram import Bot, BotCommandScope

    from milpa_chat.chat.identity import Identities
    from milpa_chat.command.projectors import TelegramCommand, TelegramCommandProjector
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["MenuPlan", "menu_plan", "merge_commands", "own_commands", "scope_text", "sync_menu"]

log = logging.getLogger("milpa_chat.bots.telegram")

#: One menu to set: the scope, its commands, and the commands shown there without it (``None``: none).
MenuPlan: TypeAlias = "list[tuple[BotCommandScope, list[TelegramCommand], list[TelegramCommand] | None]]"


def menu_plan(projector: TelegramCommandProjector, registry: ToolRegistry, ids: Identities) -> MenuPlan:
    """Every scope's menu from the registry and the identities."""
    from telegram import BotCommandScopeChat, BotCommandScopeChatMember, BotCommandScopeDefault

    def menu(scopes: tuple[str, ...]) -> list[TelegramCommand]:
        return projector.menu(registry, ToolContext("telegram:menu", "telegram", scopes))

    default = menu(tuple(ids.default_scopes))
    plan: MenuPlan = [(BotCommandScopeDefault(), default, None)]
    users = _telegram_users(ids.users)
    plan += [
        (BotCommandScopeChat(u), menu(ids.scopes_for("telegram", ChatUser(str(u)), str(u))), default) for u in users
    ]
    for chat in ids.approver_chats("telegram"):
        if not chat.lstrip("-").isdigit():
            log.info("Approver chat %r is not a Telegram chat id; it gets no command menu", chat)
            continue
        in_chat = menu(ids.scopes_for("telegram", ChatUser(""), chat))
        plan.append((BotCommandScopeChat(int(chat)), in_chat, default))
        plan += [
            (BotCommandScopeChatMember(int(chat), u), menu(ids.scopes_for("telegram", ChatUser(str(u)), chat)), in_chat)
            for u in users
        ]
    return plan


def own_commands(names: list[str], described: Mapping[str, str]) -> list[TelegramCommand]:
    """The application's own commands (``CommandHandler`` names, first seen first), described as ``described``
    says (the bot's current menu), else by their name."""
    from milpa_chat.command.projectors import TelegramCommand

    return [TelegramCommand(name, described.get(name) or f"/{name}") for name in dict.fromkeys(names)]


def merge_commands(kit: list[TelegramCommand], own: list[TelegramCommand]) -> list[TelegramCommand]:
    """The kit's menu, then the application's own commands it does not list (at most 100, the Bot API's limit)."""
    taken = {c.command for c in kit}
    return [*kit, *(c for c in own if c.command not in taken)][:100]


async def sync_menu(bot: Bot, plan: MenuPlan) -> int:
    """Set (or delete) every menu of ``plan``; returns how many were set. A refusal is logged, never raised."""
    from telegram import BotCommand, BotCommandScopeChatMember

    done = 0
    for scope, commands, fallback in plan:
        same = fallback is not None and commands == fallback
        if same and isinstance(scope, BotCommandScopeChatMember):
            continue
        try:
            if same:
                await bot.delete_my_commands(scope=scope)
            else:
                await bot.set_my_commands([BotCommand(c.command, c.description) for c in commands], scope=scope)
                done += 1
        except Exception as exc:  # the menu is a convenience: the bot runs without it
            log.warning(
                "Could not set the Telegram command menu of %s: %s: %s", scope_text(scope), type(exc).__name__, exc
            )
    return done


def scope_text(scope: Any) -> str:
    """``the default scope``, ``chat 1001``, ``member 1001 of chat -500``."""
    from telegram import BotCommandScopeChat, BotCommandScopeChatMember

    if isinstance(scope, BotCommandScopeChatMember):
        return f"member {scope.user_id} of chat {scope.chat_id}"
    if isinstance(scope, BotCommandScopeChat):
        return f"chat {scope.chat_id}"
    return "the default scope"


def _telegram_users(users: Mapping[str, object]) -> list[int]:
    """The user ids of ``telegram:<id>`` principals (each a private chat of that id)."""
    ids = [key.removeprefix("telegram:") for key in users if key.startswith("telegram:")]
    for odd in (i for i in ids if not i.isdigit()):
        log.info("Identity telegram:%s is not a Telegram user id; it gets no command menu of its own", odd)
    return [int(i) for i in ids if i.isdigit()]
