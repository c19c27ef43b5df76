"""The request bodies Slack sends to an app: slash commands, Events API callbacks, ``block_actions``.

With a :class:`SlackApiServer` attached, payloads carry a working ``response_url`` and ``trigger_id`` from that
server, user messages that events refer to are recorded there, and the channels they mention exist there.
"""

from __future__ import annotations

import secrets
import string
import time
from collections.abc import Mapping
from typing import Any

from milpa_chat.testing.slack.models import SlackMessage, SlackView
from milpa_chat.testing.slack.server import SlackApiServer
from milpa_chat.testing.slack.signing import SlackRequest

LEGACY_TOKEN = "verification-token"


def _now_ts() -> str:
    return f"{time.time():.6f}"


def new_event_id() -> str:
    """``Ev`` followed by ten upper-case letters and digits, like Slack's event ids."""
    alphabet = string.ascii_uppercase + string.digits
    return "Ev" + "".join(secrets.choice(alphabet) for _ in range(10))


class SlackPayloads:
    """Builds Slack's request bodies for one workspace and one app."""

    def __init__(
        self,
        *,
        api: SlackApiServer | None = None,
        team_id: str | None = None,
        team_domain: str = "test-team",
        api_app_id: str = "A0APP",
        bot_user_id: str | None = None,
    ) -> None:
        self.api = api
        self.team_id = team_id or (api.workspace.team_id if api else "T1")
        self.team_domain = team_domain
        self.api_app_id = api_app_id
        self.bot_user_id = bot_user_id or (api.workspace.bot_user_id if api else "U0BOT")

    # --- slash commands ----------------------------------------------------------------------------------------

    def command(
        self,
        command: str,
        text: str = "",
        *,
        user: str = "U1",
        channel: str = "C1",
        user_name: str | None = None,
        channel_name: str | None = None,
        response_url: str | None = None,
        trigger_id: str | None = None,
    ) -> SlackRequest:
        """A slash command (form body), e.g. ``command("/milpa", "tools", user="U1", channel="C1")``."""
        fields: dict[str, Any] = {
            "token": LEGACY_TOKEN,
            "team_id": self.team_id,
            "team_domain": self.team_domain,
            "channel_id": channel,
            "channel_name": channel_name or self._channel_name(channel),
            "user_id": user,
            "user_name": user_name or user.lower(),
            "command": command,
            "text": text,
            "api_app_id": self.api_app_id,
            "is_enterprise_install": "false",
        }
        url = response_url or self._response_url(channel, user=user, message_ts=None, ephemeral=False)
        if url is not None:
            fields["response_url"] = url
        fields["trigger_id"] = trigger_id or self._trigger_id()
        return SlackRequest.form("command", fields)

    # --- Events API --------------------------------------------------------------------------------------------

    def event(
        self, event: Mapping[str, Any], *, event_id: str | None = None, event_time: int | None = None
    ) -> SlackRequest:
        """An ``event_callback`` envelope around ``event`` (``event_ts`` is added when missing)."""
        inner = dict(event)
        inner.setdefault("event_ts", inner.get("ts") or _now_ts())
        envelope = {
            "token": LEGACY_TOKEN,
            "team_id": self.team_id,
            "api_app_id": self.api_app_id,
            "event": inner,
            "type": "event_callback",
            "event_id": event_id or new_event_id(),
            "event_time": event_time if event_time is not None else int(time.time()),
            "authorizations": [
                {
                    "enterprise_id": None,
                    "team_id": self.team_id,
                    "user_id": self.bot_user_id,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
            "event_context": "4-" + secrets.token_urlsafe(24),
        }
        return SlackRequest.json("event", envelope)

    def app_mention(
        self,
        text: str,
        *,
        user: str = "U1",
        channel: str = "C1",
        thread_ts: str | None = None,
        event_id: str | None = None,
    ) -> SlackRequest:
        """An ``app_mention`` event; ``<@BOT>`` is put in front of ``text`` unless it already mentions the bot."""
        mention = f"<@{self.bot_user_id}>"
        full = text if mention in text else f"{mention} {text}"
        ts = self._user_message(channel, full, user=user, thread_ts=thread_ts)
        event: dict[str, Any] = {
            "type": "app_mention",
            "user": user,
            "text": full,
            "ts": ts,
            "channel": channel,
            "team": self.team_id,
            "client_msg_id": secrets.token_hex(16),
        }
        if thread_ts is not None:
            event["thread_ts"] = thread_ts
        return self.event(event, event_id=event_id)

    def direct_message(
        self,
        text: str,
        *,
        user: str = "U1",
        channel: str | None = None,
        thread_ts: str | None = None,
        event_id: str | None = None,
    ) -> SlackRequest:
        """A ``message`` event in the app's DM with ``user`` (the ``message.im`` subscription); ``thread_ts``: a
        reply in that thread (a message in a thread of the assistant pane)."""
        dm = channel or "D" + user[1:]
        ts = self._user_message(dm, text, user=user, thread_ts=thread_ts)
        event: dict[str, Any] = {
            "type": "message",
            "channel": dm,
            "user": user,
            "text": text,
            "ts": ts,
            "channel_type": "im",
            "team": self.team_id,
            "client_msg_id": secrets.token_hex(16),
        }
        if thread_ts is not None:
            event["thread_ts"] = thread_ts
            event["parent_user_id"] = self.bot_user_id
        return self.event(event, event_id=event_id)

    # --- the assistant pane ------------------------------------------------------------------------------------

    def assistant_thread_started(
        self,
        *,
        user: str = "U1",
        channel: str | None = None,
        thread_ts: str | None = None,
        context_channel: str | None = None,
        event_id: str | None = None,
    ) -> SlackRequest:
        """``assistant_thread_started``: ``user`` opened the app's pane (from ``context_channel``, if given). With a
        :class:`SlackApiServer` attached, the thread is opened there (``thread_ts`` is then the server's); read it
        back with ``api.assistant_thread(channel, thread_ts)``, or from the request's ``event``."""
        return self.event(
            {
                "type": "assistant_thread_started",
                "assistant_thread": self._assistant_thread(user, channel, thread_ts, context_channel),
            },
            event_id=event_id,
        )

    def assistant_thread_context_changed(
        self,
        *,
        user: str = "U1",
        channel: str | None = None,
        thread_ts: str,
        context_channel: str,
        event_id: str | None = None,
    ) -> SlackRequest:
        """``assistant_thread_context_changed``: ``user`` moved to ``context_channel`` with the pane open."""
        dm, context = channel or "D" + user[1:], self._context(context_channel)
        thread = {"user_id": user, "context": context, "channel_id": dm, "thread_ts": thread_ts}
        if self.api is not None:
            self.api.assistant_thread(dm, thread_ts).context = dict(context)
        return self.event({"type": "assistant_thread_context_changed", "assistant_thread": thread}, event_id=event_id)

    def _assistant_thread(
        self, user: str, channel: str | None, thread_ts: str | None, context_channel: str | None
    ) -> dict[str, Any]:
        context = self._context(context_channel) if context_channel else {}
        dm = channel or "D" + user[1:]
        if self.api is not None:
            opened = self.api.open_assistant_thread(user, channel=dm, context=context)
            if thread_ts is not None and thread_ts != opened.thread_ts:
                raise ValueError("with a server attached, the server names the thread: leave thread_ts out")
            thread_ts = opened.thread_ts
        return {"user_id": user, "context": context, "channel_id": dm, "thread_ts": thread_ts or _now_ts()}

    def _context(self, channel: str) -> dict[str, Any]:
        return {"channel_id": channel, "team_id": self.team_id, "enterprise_id": None}

    def url_verification(self, challenge: str | None = None) -> SlackRequest:
        """The handshake Slack sends when the request URL is configured."""
        return SlackRequest.json(
            "url_verification",
            {"token": LEGACY_TOKEN, "challenge": challenge or secrets.token_urlsafe(24), "type": "url_verification"},
        )

    # --- interactivity -----------------------------------------------------------------------------------------

    def click(
        self, message: SlackMessage, action_id: str, *, user: str = "U1", value: str | None = None
    ) -> SlackRequest:
        """``block_actions`` for ``user`` tapping the element ``action_id`` (and ``value``) on ``message``."""
        block, element = message.find_action(action_id, value)
        action: dict[str, Any] = {
            key: element[key] for key in ("type", "action_id", "value", "text", "style") if key in element
        }
        if element.get("type") == "feedback_buttons":  # the tapped one of its two buttons sends its value
            chosen = [b for b in (element["positive_button"], element["negative_button"]) if b["value"] == value]
            action["value"] = (chosen or [element["positive_button"]])[0]["value"]
        return self.block_action(
            action,
            block_id=str(block.get("block_id", "")),
            user=user,
            channel=message.channel,
            message_ts=message.ts,
            message=None if message.ephemeral else message.to_api(),
            ephemeral=message.ephemeral,
            thread_ts=message.thread_ts,
        )

    def block_action(
        self,
        action: Mapping[str, Any],
        *,
        block_id: str,
        user: str = "U1",
        channel: str = "C1",
        message_ts: str,
        message: Mapping[str, Any] | None = None,
        ephemeral: bool = False,
        response_url: str | None = None,
        trigger_id: str | None = None,
        thread_ts: str | None = None,
    ) -> SlackRequest:
        """A ``block_actions`` payload for one action (``{"type": "button", "action_id": ..., "value": ...}``)."""
        full_action = {"block_id": block_id, "action_ts": _now_ts(), **action}
        full_action.setdefault("type", "button")
        payload: dict[str, Any] = {
            "type": "block_actions",
            "user": self._user(user),
            "api_app_id": self.api_app_id,
            "token": LEGACY_TOKEN,
            "container": {
                "type": "message",
                "message_ts": message_ts,
                "channel_id": channel,
                "is_ephemeral": ephemeral,
            },
            "trigger_id": trigger_id or self._trigger_id(),
            "team": {"id": self.team_id, "domain": self.team_domain},
            "enterprise": None,
            "is_enterprise_install": False,
            "channel": {"id": channel, "name": self._channel_name(channel)},
            "state": {"values": {}},
            "actions": [full_action],
        }
        if thread_ts is not None:  # a message in a thread: Slack names the thread in the container
            payload["container"]["thread_ts"] = thread_ts
        if message is not None:
            payload["message"] = dict(message)
        url = response_url or self._response_url(channel, user=user, message_ts=message_ts, ephemeral=ephemeral)
        if url is not None:
            payload["response_url"] = url
        return SlackRequest.interactive(payload)

    def view_submission(
        self, view: SlackView, values: Mapping[str, str] | None = None, *, user: str = "U1"
    ) -> SlackRequest:
        """``view_submission`` for ``user`` pressing Submit on the modal ``view`` (as ``views.open`` stored it):
        each input block's plain-text element holds ``values[block_id]``, else its ``initial_value``."""
        state: dict[str, Any] = {}
        for block in view.view.get("blocks", []):
            element = block.get("element") or {}
            if block.get("type") != "input" or "action_id" not in element:
                continue
            text = (values or {}).get(str(block.get("block_id")), element.get("initial_value"))
            state[str(block["block_id"])] = {
                element["action_id"]: {"type": element.get("type", "plain_text_input"), "value": text}
            }
        payload: dict[str, Any] = {
            "type": "view_submission",
            "team": {"id": self.team_id, "domain": self.team_domain},
            "user": self._user(user),
            "api_app_id": self.api_app_id,
            "token": LEGACY_TOKEN,
            "trigger_id": self._trigger_id(),
            "view": {
                **view.view,
                "id": view.id,
                "hash": view.hash,
                "team_id": self.team_id,
                "state": {"values": state},
            },
            "response_urls": [],
            "is_enterprise_install": False,
        }
        return SlackRequest.interactive(payload)

    # --- helpers -----------------------------------------------------------------------------------------------

    def _user(self, user: str) -> dict[str, str]:
        return {"id": user, "username": user.lower(), "name": user.lower(), "team_id": self.team_id}

    def _channel_name(self, channel: str) -> str:
        if channel.startswith("D"):
            return "directmessage"
        if self.api is not None and channel in self.api.workspace.channels:
            return self.api.workspace.channels[channel].name
        return channel.lower()

    def _response_url(self, channel: str, *, user: str, message_ts: str | None, ephemeral: bool) -> str | None:
        if self.api is None:
            return None
        self.api.add_channel(channel)
        return self.api.new_response_url(channel, user=user, message_ts=message_ts, ephemeral=ephemeral)

    def _trigger_id(self) -> str:
        if self.api is not None:
            return self.api.new_trigger_id()
        return f"{secrets.randbelow(10**10)}.{secrets.randbelow(10**10)}.{secrets.token_hex(16)}"

    def _user_message(self, channel: str, text: str, *, user: str, thread_ts: str | None) -> str:
        if self.api is None:
            return _now_ts()
        return self.api.add_user_message(channel, text, user=user, thread_ts=thread_ts).ts
