"""Slack's assistant pane: the kit's :class:`~milpa_chat.chat.Assistant` served through bolt's ``AsyncAssistant``.

``SlackBot(..., pane=True)`` (or ``SlackBot.install(app, assistant, pane=True)``; or ``pane=`` your own
``AsyncAssistant``, to which the kit adds its listeners) serves the pane beside the slash command and mentions:

* **thread started** -> a greeting in the thread and up to four suggested prompts, one per tool the person
  may call (each checked by the registry's policy with the person's identity as Slack authenticated it:
  ``assistant_thread.user_id`` of the signed event, never anything a message says); the thread's context
  (the channel the person was viewing) is kept;
* **a message in the thread** -> the thread is titled after the first request (``set_title``), the
  assistant handles it as any direct message, with the thread as its chat (``"<channel>/<thread_ts>"``):
  replies, confirmations and results go into the thread, and the agent keeps one conversation per thread;
* **status** -> "is thinking…" while the model works and "is running <tool>…" while a tool runs
  (``assistant.threads.setStatus`` with loading messages), cleared when the answer is posted, and cleared
  explicitly when a request ends without one;
* **thread context changed** -> the new context is kept (:class:`StoreThreadContexts`, in the kit's store).

Approval cards go where the approver policy says (approver channels, direct messages); the requester's copy
and the result after the decision go into the pane's thread.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

from milpa_chat.bots.slack_inbound import SURFACE, event_inbound
from milpa_chat.bots.slack_threads import split, thread_chat
from milpa_chat.chat.inbound import ChatUser, Inbound

if TYPE_CHECKING:
    from slack_bolt.async_app import AsyncApp, AsyncAssistant
    from slack_bolt.context.assistant.thread_context import AssistantThreadContext
    from slack_sdk.web.async_client import AsyncWebClient

    from milpa_chat.bots.slack_transport import SlackTransport
    from milpa_chat.chat.assistant import Assistant
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.store.base import Store

__all__ = ["MAX_PROMPTS", "SlackPane", "StoreThreadContexts", "suggested_prompts"]

log = logging.getLogger("milpa_chat.bots.slack")

#: Slack shows at most four suggested prompts.
MAX_PROMPTS: Final = 4
#: How long a thread's context and title mark are kept (seconds).
KEEP: Final = 30 * 86400
GREETING: Final = "Hi! Ask me in your own words, or pick one of the suggestions below."
PROMPTS_TITLE: Final = "What you can ask me to do:"
#: Tools never suggested (deciding is for people).
HIDDEN: Final = frozenset({"resolve_verification"})

#: ``prompts(tools) -> [{"title", "message"}]``: from the summaries of the tools the person may call.
PromptMaker = Callable[[Sequence[Mapping[str, Any]]], list[dict[str, str]]]


class PaneHost(Protocol):
    """What the pane needs of the :class:`~milpa_chat.bots.slack.SlackBot` it serves."""

    assistant: Assistant
    app: AsyncApp
    client: AsyncWebClient
    transport: SlackTransport

    def spawn(self, work: Awaitable[None]) -> None: ...
    async def _named(self, inbound: Inbound) -> Inbound: ...
    async def _handle(self, inbound: Inbound) -> None: ...


def suggested_prompts(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """One prompt per tool (at most four): the title is the tool's name in words, the message the first
    sentence of its description (``pay`` "Pay a vendor. Needs approval." -> ``{"title": "Pay", "message":
    "Pay a vendor."}``)."""
    prompts = []
    for tool in tools[:MAX_PROMPTS]:
        title = str(tool["name"]).replace("_", " ").strip().capitalize()[:75]
        description = " ".join(str(tool.get("description") or "").split())
        first = re.split(r"(?<=[.!?])\s", description, maxsplit=1)[0] if description else ""
        prompts.append({"title": title, "message": (first or title)[:500]})
    return prompts


class StoreThreadContexts:
    """bolt's thread context store over the kit's store: what a thread's person was viewing, shared by every
    worker and kept across restarts (``AsyncAssistantThreadContextStore``)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    async def save(self, *, channel_id: str, thread_ts: str, context: dict[str, str]) -> None:
        await self.store.put("pane_contexts", thread_chat(channel_id, thread_ts), dict(context), ttl=KEEP)

    async def find(self, *, channel_id: str, thread_ts: str) -> AssistantThreadContext | None:
        from slack_bolt.context.assistant.thread_context import AssistantThreadContext

        record = await self.store.get("pane_contexts", thread_chat(channel_id, thread_ts))
        value = getattr(record, "value", record)
        if not isinstance(value, Mapping) or not value.get("channel_id"):
            return None
        return AssistantThreadContext(dict(value))


class SlackPane:
    """The assistant pane of ``bot`` (see the module's docstring). ``middleware``: your own ``AsyncAssistant``
    (the kit adds its listeners to it; add it to your app yourself); without one the pane makes its own
    and adds it to the bot's app. ``prompts`` turns the person's tools into suggested prompts
    (:func:`suggested_prompts` unless given); ``greeting`` and ``prompts_title`` are what a new thread shows."""

    def __init__(
        self,
        bot: PaneHost,
        *,
        middleware: AsyncAssistant | None = None,
        prompts: PromptMaker = suggested_prompts,
        greeting: str = GREETING,
        prompts_title: str = PROMPTS_TITLE,
    ) -> None:
        from slack_bolt.async_app import AsyncAssistant

        self.bot = bot
        self.make_prompts = prompts
        self.greeting = greeting
        self.prompts_title = prompts_title
        store = bot.assistant.store
        self.contexts = StoreThreadContexts(store)
        own = middleware is None
        self.middleware = middleware or AsyncAssistant(thread_context_store=self.contexts)  # type: ignore[arg-type]
        self.middleware.thread_started(self._thread_started)
        self.middleware.user_message(self._user_message)
        self.middleware.thread_context_changed(self._context_changed)
        if own:
            bot.app.assistant(self.middleware)
        self._unsubscribe = bot.assistant.registry.dispatcher.subscribe("tool.executing", self._tool_running)

    def close(self) -> None:
        """Stop showing tool statuses (the bot's ``close`` calls it)."""
        self._unsubscribe()

    # ------------------------------------------------------------- listeners (bolt acks them itself)
    async def _thread_started(self, body: dict[str, Any], payload: dict[str, Any]) -> None:
        thread = payload.get("assistant_thread") or {}
        user, channel, ts = thread.get("user_id"), thread.get("channel_id"), thread.get("thread_ts")
        if not (user and channel and ts):
            return
        event_id = body.get("event_id")
        inbound = Inbound(
            SURFACE,
            thread_chat(str(channel), str(ts)),
            ChatUser(str(user), team=str(body.get("team_id") or "") or None),
            delivery_id=f"ev:{event_id}" if event_id else None,
            chat_type="private",
            raw=body,
        )
        self.bot.spawn(self._greet(inbound, thread.get("context") or {}))

    async def _user_message(self, body: dict[str, Any], payload: dict[str, Any]) -> None:
        inbound = event_inbound(body)
        if inbound is None or not payload.get("thread_ts"):
            return
        chat = thread_chat(inbound.chat_id, str(payload["thread_ts"]))
        self.bot.spawn(self._serve(dataclasses.replace(inbound, chat_id=chat)))

    async def _context_changed(self, payload: dict[str, Any]) -> None:
        thread = payload.get("assistant_thread") or {}
        context = thread.get("context") or {}
        if thread.get("channel_id") and thread.get("thread_ts") and context.get("channel_id"):
            await self.contexts.save(
                channel_id=str(thread["channel_id"]), thread_ts=str(thread["thread_ts"]), context=dict(context)
            )

    # ------------------------------------------------------------------ work after the ack
    async def _greet(self, inbound: Inbound, context: Mapping[str, Any]) -> None:
        """A new thread: the greeting and the person's suggested prompts (once per ``assistant_thread_started``)."""
        transport = self.bot.transport
        try:
            if inbound.delivery_id is not None and not await self._first(f"{SURFACE}:{inbound.delivery_id}"):
                return
            channel, ts = split(inbound.chat_id)
            await self._mark(inbound.chat_id)
            if context.get("channel_id") and ts is not None:
                await self.contexts.save(channel_id=channel, thread_ts=ts, context=dict(context))
            inbound = await self.bot._named(inbound)
            from milpa_chat.chat import cards

            await transport.send(inbound.chat_id, cards.text(self.greeting))
            prompts = self.make_prompts(await self.tools_for(self.bot.assistant.context_for(inbound)))[:MAX_PROMPTS]
            if prompts and ts is not None:
                await self.bot.client.assistant_threads_setSuggestedPrompts(
                    channel_id=channel, thread_ts=ts, prompts=prompts, title=self.prompts_title
                )
        except Exception:
            log.exception("could not open the assistant thread %s", inbound.chat_id)

    async def _serve(self, inbound: Inbound) -> None:
        """A request in a thread: its title (the first request), then the assistant; the status is cleared after."""
        channel, ts = split(inbound.chat_id)
        try:
            await self._mark(inbound.chat_id)
            if ts is not None and inbound.text and await self._first(f"title:{inbound.chat_id}"):
                await self._title(channel, ts, inbound.text)
            if inbound.kind == "text":  # while the model works, until its answer (or its stream) is posted
                await self.bot.transport.typing(inbound.chat_id)
            await self.bot._handle(inbound)
        finally:
            await self.bot.transport.set_status(inbound.chat_id, "")

    async def _title(self, channel: str, ts: str, text: str) -> None:
        title = " ".join(text.split())
        title = title if len(title) <= 60 else title[:59].rstrip() + "…"
        from slack_sdk.errors import SlackApiError

        try:
            await self.bot.client.assistant_threads_setTitle(channel_id=channel, thread_ts=ts, title=title)
        except SlackApiError as exc:  # a title is a courtesy
            log.info("assistant.threads.setTitle answered %s", exc.response.get("error"))

    async def _tool_running(self, event: str, payload: Mapping[str, Any]) -> None:
        """``tool.executing`` of a call made for a thread of the pane: "is running <tool>…" under it. Never
        stops the call (a listener that raises would)."""
        executing = payload.get("event")
        ctx: ToolContext | None = getattr(executing, "ctx", None)
        if ctx is None or ctx.channel != SURFACE:
            return
        chat = str(ctx.extra.get("chat_id") or "")
        if split(chat)[1] is None:
            return
        name = str(getattr(executing, "name", "") or "a tool")
        try:
            await self.bot.transport.set_status(chat, f"is running {name}…", (f"Running {name}…",))
        except Exception:
            log.debug("status for %s failed", name, exc_info=True)

    # ------------------------------------------------------------------ helpers
    async def tools_for(self, ctx: ToolContext) -> list[dict[str, Any]]:
        """The summaries of the tools ``ctx`` may call, in the registry's order: each judged by the registry's
        policy (scopes, rules, channel policy) for this person; hidden tools (deciding) left out."""
        registry = self.bot.assistant.registry
        allowed = []
        for summary in registry.get_tool_summaries(ctx):
            tool = registry.get(summary["name"])
            if tool is None or summary["name"] in HIDDEN:
                continue
            try:
                verdict = await registry.policy.judge(ctx, tool)
            except Exception:  # a rule provider that fails denies, as in the pipeline
                log.exception("policy could not judge %s for the pane's prompts", summary["name"])
                continue
            if verdict.allowed:
                allowed.append(summary)
        return allowed

    async def thread_context(self, chat_id: str) -> dict[str, str] | None:
        """What the person of the thread ``chat_id`` was viewing (``{"channel_id": ..., "team_id": ...}``)."""
        channel, ts = split(chat_id)
        if ts is None:
            return None
        found = await self.contexts.find(channel_id=channel, thread_ts=ts)
        return dict(found) if found is not None else None

    async def _mark(self, chat_id: str) -> None:
        """Remember that ``chat_id`` is a thread the pane serves (taps inside it come from its chat)."""
        await self.bot.assistant.store.put("pane_threads", chat_id, {"pane": True}, ttl=KEEP, durable=False)

    async def thread_of(self, inbound: Inbound) -> Inbound:
        """A tap on a message inside a thread the pane serves, as coming from that thread's chat (where the kit
        posted the message); any other tap as it is."""
        raw = inbound.raw if isinstance(inbound.raw, Mapping) else {}
        container, message = raw.get("container") or {}, raw.get("message") or {}
        thread = container.get("thread_ts") or message.get("thread_ts")
        if inbound.kind != "action" or not thread or thread == inbound.message_id or "/" in inbound.chat_id:
            return inbound
        chat = thread_chat(inbound.chat_id, str(thread))
        if await self.bot.assistant.store.get("pane_threads", chat) is None:
            return inbound
        return dataclasses.replace(inbound, chat_id=chat)

    async def _first(self, key: str) -> bool:
        """Record ``key``; False when any worker recorded it already."""
        inserted: Awaitable[Any] = self.bot.assistant.store.insert(
            "deliveries", key, {"pane": True}, ttl=KEEP, durable=False
        )
        return await inserted is not None
