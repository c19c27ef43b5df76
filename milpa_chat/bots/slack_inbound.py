"""Slack request bodies -> :class:`~milpa_chat.chat.inbound.Inbound` events (no Slack SDK needed).

Who acted always comes from what Slack authenticated (``user_id`` of a command, ``event.user``, the
``user`` of an interaction), never from a button's value. Delivery ids are chosen so that Slack's
retries and repeated deliveries of one thing collide, and different things never do:

* slash command: ``cmd:<trigger_id>``;
* event: ``ev:<event_id>`` (retries carry the same ``event_id``);
* button: ``act:<message_ts>:<action_ts>:<user>`` (one tap, however often it is delivered).

A tap comes from the message's conversation; the assistant pane (:mod:`milpa_chat.bots.slack_pane`) makes a tap
inside one of its threads come from that thread's chat (``"<channel>/<thread_ts>"``), where the kit posted it.

Text is decoded from Slack's markup into values a tool can use (:func:`decode`): ``&amp; &lt; &gt;``
become ``& < >``; a person ``<@U123>`` (or ``<@U123|name>``) becomes their member id ``U123``; a channel
``<#C123|general>`` its name ``#general`` (``#C123`` when Slack gives no name); a link ``<https://x|label>``
its URL ``https://x`` (``mailto:`` dropped); ``<!here>`` ``@here``; a user group or a date its label.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final, TypeGuard

from milpa_chat.chat.inbound import ChatUser, Inbound
from milpa_chat.renderers.model import parse_callback_data

__all__ = [
    "SURFACE",
    "action_inbound",
    "command_inbound",
    "decode",
    "event_inbound",
    "strip_mention",
    "tap_delivery_id",
]

SURFACE: Final = "slack"
_MENTION = re.compile(r"^\s*<@[A-Z0-9]+(?:\|[^>]*)?>[\s:,]*")
_MARKUP = re.compile(r"<([^<>|]*)(?:\|([^<>]*))?>")


def chat_type(channel_id: str) -> str:
    """``private`` for a direct message (``D…``), ``group`` for channels and group DMs."""
    return "private" if channel_id.startswith("D") else "group"


def command_inbound(body: Mapping[str, Any]) -> Inbound:
    """``/milpa tools`` -> text ``/tools``; ``/milpa pay ACME 10`` -> ``/pay ACME 10``; ``/milpa`` -> ``/help``."""
    rest = decode(str(body.get("text") or "")).strip()
    if rest.startswith("/"):
        rest = rest[1:]
    channel = str(body["channel_id"])
    user = ChatUser(
        id=str(body["user_id"]),
        name=str(body.get("user_name") or ""),
        username=body.get("user_name") or None,
        team=_team(body),
    )
    trigger = body.get("trigger_id")
    return Inbound(
        surface=SURFACE,
        chat_id=channel,
        user=user,
        text="/" + (rest or "help"),
        delivery_id=f"cmd:{trigger}" if trigger else None,
        chat_type=chat_type(channel),
        raw=body,
    )


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _value(match: re.Match[str]) -> str:
    target, label = match.group(1), match.group(2)
    if target.startswith("@"):
        return target[1:]
    if target.startswith("#"):
        return f"#{label}" if label else target
    if target.startswith("!"):
        special = target[1:].split("^", 1)[0]
        if special in ("here", "channel", "everyone"):
            return f"@{special}"
        return label or special
    if target.startswith("mailto:"):
        return target[len("mailto:") :]
    return target


def decode(text: str) -> str:
    """Slack's message markup as plain values: ``"Q&amp;A <@U1> <#C1|general> <https://x|site>"`` ->
    ``"Q&A U1 #general https://x"`` (see the module's docstring)."""
    return _unescape(_MARKUP.sub(lambda m: _value(m), text))


def strip_mention(text: str) -> str:
    """``"<@U0BOT> pay ACME 10"`` -> ``"pay ACME 10"`` (only a leading mention is removed)."""
    return _MENTION.sub("", text, count=1).strip()


def event_inbound(body: Mapping[str, Any]) -> Inbound | None:
    """An ``app_mention`` or a person's direct message; ``None`` for anything the assistant ignores
    (edits, deletions, bot messages, messages in channels that do not mention the app)."""
    event = body.get("event") or {}
    kind = event.get("type")
    if kind == "message" and (event.get("channel_type") != "im" or event.get("subtype") or event.get("bot_id")):
        return None
    if kind not in ("message", "app_mention") or not event.get("user"):
        return None
    channel = str(event["channel"])
    text = str(event.get("text") or "")
    event_id = body.get("event_id")
    thread = event.get("thread_ts") or event.get("ts")
    return Inbound(
        surface=SURFACE,
        chat_id=channel,
        user=ChatUser(id=str(event["user"]), team=str(event.get("team") or body.get("team_id") or "") or None),
        text=decode(strip_mention(text) if kind == "app_mention" else text).strip(),
        delivery_id=f"ev:{event_id}" if event_id else None,
        chat_type=chat_type(channel),
        thread=str(thread) if thread else None,
        raw=body,
    )


def action_inbound(body: Mapping[str, Any], action: Mapping[str, Any]) -> Inbound | None:
    """A button tap; ``None`` when its value is not ``"<action>:<ref>"`` (nothing our cards carry)."""
    try:
        verb, ref = parse_callback_data(str(action.get("value") or ""))
    except ValueError:
        return None
    container = body.get("container") or {}
    channel = str(container.get("channel_id") or (body.get("channel") or {}).get("id") or "")
    message_ts = container.get("message_ts") or (body.get("message") or {}).get("ts")
    raw_user = body.get("user") or {}
    user = ChatUser(
        id=str(raw_user["id"]),
        name=str(raw_user.get("name") or raw_user.get("username") or ""),
        username=raw_user.get("username") or None,
        team=_team(body),
    )
    return Inbound(
        surface=SURFACE,
        chat_id=channel,
        user=user,
        action=verb,
        ref=ref,
        delivery_id=tap_delivery_id(body, action),
        message_id=str(message_ts) if message_ts else None,
        chat_type=chat_type(channel),
        buttons=tapped_buttons(body),
        raw=body,
    )


def tap_delivery_id(body: Mapping[str, Any], action: Mapping[str, Any]) -> str | None:
    """A tap's delivery id, ``act:<message_ts>:<action_ts>:<user>`` (``None`` without an ``action_ts``)."""
    action_ts, user = action.get("action_ts"), body.get("user") or {}
    if not action_ts or "id" not in user:
        return None
    message_ts = (body.get("container") or {}).get("message_ts") or (body.get("message") or {}).get("ts")
    return f"act:{message_ts}:{action_ts}:{user['id']}"


def tapped_buttons(body: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The ``value`` of every button of the tapped message as Slack reported it (``message.blocks``: the
    elements of ``actions`` blocks and sections' accessories); ``None`` when Slack did not send the message
    (an ephemeral message, a modal)."""
    message = body.get("message")
    if not _is_mapping(message) or (body.get("container") or {}).get("is_ephemeral"):
        return None
    found: list[str] = []
    for block in message.get("blocks") or ():
        if not _is_mapping(block):
            continue
        if block.get("type") in ("actions", "context_actions"):
            for element in block.get("elements") or ():
                _button_values(element, found)
        accessory = block.get("accessory")
        if accessory is not None:
            _button_values(accessory, found)
    return tuple(found)


def _button_values(element: Any, found: list[str]) -> None:
    """Add an element's ``value``, and a feedback element's two buttons' (each with its own value), to ``found``."""
    if not _is_mapping(element):
        return
    for part in (element, element.get("positive_button"), element.get("negative_button")):
        if part is not None and _is_mapping(part) and isinstance(part.get("value"), str):
            found.append(str(part["value"]))


def _is_mapping(value: object) -> TypeGuard[Mapping[str, Any]]:
    """``isinstance(value, Mapping)``, without the ABC's check for the dicts a parsed body holds."""
    return type(value) is dict or isinstance(value, Mapping)


def _team(body: Mapping[str, Any]) -> str | None:
    """The acting user's team: ``user.team_id`` of interactions, ``team_id`` of commands, ``team.id``."""
    user = body.get("user")
    if _is_mapping(user) and user.get("team_id"):
        return str(user["team_id"])
    if body.get("team_id"):
        return str(body["team_id"])
    team = body.get("team")
    if isinstance(team, Mapping) and team.get("id"):
        return str(team["id"])
    return None
