"""``SlackTransport``: the chat core's :class:`~milpa_chat.chat.inbound.Transport` over Slack's Web API.

* ``send`` -> ``chat.postMessage`` (Block Kit + fallback text from :class:`SlackRenderer`); a message the
  renderer had to shorten gets its full content uploaded next to it (``files_upload_v2``, needs
  ``files:write``; a failed upload is logged and the message stays);
* ``edit`` -> ``chat.update`` of the message's ``channel`` + ``ts``;
* ``answer`` -> ``chat.postEphemeral`` to the actor, or the interaction's ``response_url`` when the
  app cannot post in that conversation;
* ``whisper`` -> a whole message (help, lists, usage, refusals) the same way: only the actor sees it;
* ``typing`` -> in a thread of the assistant pane (a chat id ``"<channel>/<thread_ts>"``, see
  :mod:`milpa_chat.bots.slack_threads`), ``assistant.threads.setStatus`` ("is thinking…" with loading
  messages; Slack clears it when the reply is posted); elsewhere nothing: Slack has no typing indicator for apps;
* ``open_stream`` -> the agent's answer streamed into the thread of the message it answers
  (``chat.startStream`` / ``appendStream`` / ``stopStream``; see :mod:`milpa_chat.bots.slack_stream`).

A chat id ``"<channel>/<thread_ts>"`` posts, whispers and streams into that thread.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from milpa_chat.bots.slack_threads import split, thread_chat
from milpa_chat.chat.inbound import Inbound, MessageRef
from milpa_chat.chat.surface import Surface, Traits
from milpa_chat.renderers.slack import SlackRenderer

if TYPE_CHECKING:
    from slack_sdk.web.async_client import AsyncWebClient

    from milpa_chat.chat.streaming import Stream
    from milpa_chat.chat.surface import EditField
    from milpa_chat.renderers.model import Message
    from milpa_chat.runtime.approval import Approval

__all__ = ["SlackTransport", "mrkdwn_escape"]

log = logging.getLogger("milpa_chat.bots.slack")

#: Errors meaning "the app may not post there"; an answer then goes through the response_url.
NOT_POSTABLE: Final = frozenset({"not_in_channel", "channel_not_found", "is_archived", "restricted_action"})
#: The status a thread of the assistant pane shows while the model works, and the loading messages it rotates.
THINKING: Final = "is thinking…"
THINKING_MESSAGES: Final = ("Reading your request…", "Checking what you may do…", "Working on it…")


def mrkdwn_escape(text: str) -> str:
    """Escape ``& < >`` so user-visible text never turns into mentions or links."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class SlackTransport(Surface):
    """Posts, edits and answers in one Slack workspace through ``client`` (a bot-token ``AsyncWebClient``).

    ``notices``: also show non-refusal answers to taps ("Page 2", "Confirmed — running it now.") as
    ephemeral messages; by default only refusals and errors (``alert=True``) are shown, since the edited
    card already shows what happened.
    """

    surface: str = "slack"

    def __init__(
        self,
        client: AsyncWebClient,
        *,
        command: str = "/milpa",
        renderer: SlackRenderer | None = None,
        notices: bool = False,
    ) -> None:
        self.client = client
        self.renderer = renderer or SlackRenderer()
        self.notices = notices
        #: How users type a command here (``/milpa pay …``), for messages that explain commands. Slack has no
        #: ``/cmd@bot`` addressing: every ``/milpa`` command is ours.
        self.command_prefix = f"{command} "
        self._status_refused = False
        self._traits = Traits(
            command_prefix=self.command_prefix,
            whispers=True,
            edit_forms=True,
            reason_forms=True,
            reports_failures=True,
            streams=True,
        )

    async def send(self, chat_id: str, message: Message) -> MessageRef:
        payload = self.renderer.render_message(message)
        channel, thread = split(chat_id)
        resp = await self.client.chat_postMessage(channel=channel, thread_ts=thread, **payload.message)
        ref = MessageRef(self.surface, thread_chat(str(resp["channel"]), thread), str(resp["ts"]))
        if payload.document is not None:
            await self._upload(ref, payload.document.filename, payload.document.content)
        return ref

    async def edit(self, ref: MessageRef, message: Message) -> None:
        payload = self.renderer.render_message(message)
        await self.client.chat_update(channel=split(ref.chat_id)[0], ts=ref.message_id, **payload.message)

    async def answer(self, inbound: Inbound, text: str, *, alert: bool = False) -> None:
        if not (alert or self.notices):
            return
        from slack_sdk.errors import SlackApiError

        try:
            channel, thread = split(inbound.chat_id)
            await self.client.chat_postEphemeral(
                channel=channel, thread_ts=thread, user=inbound.user.id, text=mrkdwn_escape(text)
            )
        except SlackApiError as exc:
            url = _response_url(inbound)
            if url is None or exc.response.get("error") not in NOT_POSTABLE:
                raise
            await self.respond(url, text)

    async def whisper(self, inbound: Inbound, message: Message) -> None:
        """``message`` for the actor alone (``chat.postEphemeral``; the ``response_url`` where the app may not post)."""
        from slack_sdk.errors import SlackApiError

        payload = self.renderer.render_message(message).message
        try:
            channel, thread = split(inbound.chat_id)
            await self.client.chat_postEphemeral(channel=channel, thread_ts=thread, user=inbound.user.id, **payload)
        except SlackApiError as exc:
            url = _response_url(inbound)
            if url is None or exc.response.get("error") not in NOT_POSTABLE:
                raise
            await self._respond(url, payload)

    async def typing(self, chat_id: str) -> None:
        """In a thread of the assistant pane: "is thinking…" (``assistant.threads.setStatus``); elsewhere
        nothing (Slack offers apps no typing indicator)."""
        if split(chat_id)[1] is not None:
            await self.set_status(chat_id, THINKING, THINKING_MESSAGES)

    async def set_status(self, chat_id: str, status: str, loading: Sequence[str] = ()) -> bool:
        """Show ``status`` under the thread ``chat_id`` (``""`` clears it); False when Slack refused (the app
        lacks ``assistant:write``, the thread is gone): a status is a courtesy and never fails a request."""
        from slack_sdk.errors import SlackApiError

        channel, thread = split(chat_id)
        if thread is None:
            return False
        try:
            await self.client.assistant_threads_setStatus(
                channel_id=channel, thread_ts=thread, status=status, loading_messages=list(loading) or None
            )
        except SlackApiError as exc:
            if not self._status_refused:
                self._status_refused = True
                log.info("assistant.threads.setStatus answered %s; no status is shown", exc.response.get("error"))
            return False
        return True

    async def open_stream(self, inbound: Inbound) -> Stream | None:
        """The answer streamed as a reply in ``inbound``'s thread; ``None`` where there is no thread to answer
        in (a slash command)."""
        if not inbound.thread:
            return None
        from milpa_chat.bots.slack_stream import SlackStream

        channel, thread = split(inbound.chat_id)  # a thread of the assistant pane streams into that thread
        return SlackStream(
            self.client, self.renderer, channel, thread or inbound.thread, user=inbound.user.id, team=inbound.user.team
        )

    async def open_edit_form(self, inbound: Inbound, approval: Approval, fields: Sequence[EditField]) -> None:
        """The Edit modal for ``approval`` (``views.open`` with the tap's ``trigger_id``; see ``slack_edit``)."""
        from milpa_chat.bots.slack_edit import edit_view

        raw = inbound.raw if isinstance(inbound.raw, Mapping) else {}
        trigger = raw.get("trigger_id")
        if not trigger:
            await self.answer(inbound, "Slack sent no way to open a form with this tap; tap Edit again.", alert=True)
            return
        await self.client.views_open(trigger_id=str(trigger), view=edit_view(approval, fields, inbound.chat_id))

    async def open_reason_form(self, inbound: Inbound, approval: Approval, why: str) -> None:
        """The modal asking why a high-risk request is approved (``views.open``; see ``slack_edit``)."""
        from milpa_chat.bots.slack_edit import reason_view

        raw = inbound.raw if isinstance(inbound.raw, Mapping) else {}
        trigger = raw.get("trigger_id")
        if not trigger:
            await self.answer(
                inbound, "This request is high-risk and needs a typed reason; tap Approve again.", alert=True
            )
            return
        await self.client.views_open(trigger_id=str(trigger), view=reason_view(approval, why, inbound.chat_id))

    async def report_failure(self, inbound: Inbound, exc: BaseException) -> bool:
        """The last way to tell the actor their request could not be done: the request's ``response_url``
        (it works where the app may not post). False when the request has none or it failed too."""
        raw = inbound.raw if isinstance(inbound.raw, Mapping) else {}
        url = raw.get("response_url")
        if not url:
            return False
        from slack_sdk.errors import SlackApiError

        error = exc.response.get("error") if isinstance(exc, SlackApiError) else None
        if error in NOT_POSTABLE:
            text = (
                f"I cannot post in this conversation ({error}). Invite me with /invite, "
                "or talk to me in a direct message."
            )
        else:
            text = "Something went wrong while handling that; nothing more was done. The error was logged."
        try:
            await self.respond(str(url), text)
        except Exception:
            log.exception("could not report the failure through response_url")
            return False
        return True

    async def respond(self, response_url: str, text: str) -> None:
        """An ephemeral reply through an interaction's ``response_url`` (works where the app is no member)."""
        await self._respond(response_url, {"text": mrkdwn_escape(text)})

    async def _respond(self, response_url: str, payload: Mapping[str, Any]) -> None:
        from slack_sdk.webhook.async_client import AsyncWebhookClient

        webhook = AsyncWebhookClient(response_url, session=getattr(self.client, "session", None))
        resp = await webhook.send(
            text=payload.get("text"), blocks=payload.get("blocks"), response_type="ephemeral", replace_original=False
        )
        if resp.status_code != 200:
            log.warning("response_url answered %s %s", resp.status_code, resp.body)

    async def _upload(self, ref: MessageRef, filename: str, content: bytes) -> None:
        from slack_sdk.errors import SlackApiError

        try:
            await self.client.files_upload_v2(
                channel=split(ref.chat_id)[0],
                thread_ts=split(ref.chat_id)[1] or ref.message_id,
                filename=filename,
                content=content,
                title=filename,
            )
        except SlackApiError as exc:
            log.warning(
                "could not upload %s next to message %s in %s (%s); grant the app the files:write scope",
                filename,
                ref.message_id,
                ref.chat_id,
                exc.response.get("error"),
            )


def _response_url(inbound: Inbound) -> str | None:
    raw = inbound.raw
    url = raw.get("response_url") if isinstance(raw, Mapping) else None
    return str(url) if url else None
