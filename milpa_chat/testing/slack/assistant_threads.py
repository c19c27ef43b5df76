"""Slack's assistant threads on the local Web API server: ``assistant.threads.setStatus``,
``assistant.threads.setSuggestedPrompts`` and ``assistant.threads.setTitle``, validated as Slack does.

A thread of the assistant pane is opened by :meth:`AssistantThreads.open` (what Slack does when a person
opens the app's pane; :class:`~milpa_chat.testing.slack.SlackPayloads` then delivers
``assistant_thread_started``). Every method needs the ``assistant:write`` scope, ``channel_id`` and
``thread_ts`` (suggested prompts and titles: a thread of the pane; a status: any thread); a missing or
malformed argument is ``invalid_arguments`` with Slack's ``[ERROR] …`` lines in
``response_metadata.messages``. As on Slack, a status is cleared when the app posts a reply in the thread
(or sets the status ``""``); :attr:`AssistantThread.statuses` keeps every status shown, in order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from milpa_chat.testing.slack.models import JsonDict, SlackMethodError

__all__ = [
    "MAX_LOADING_MESSAGES",
    "MAX_PROMPTS",
    "NEEDED_SCOPE",
    "AssistantThread",
    "AssistantThreads",
    "ThreadReplies",
    "check_metadata",
]

#: The scope every ``assistant.threads.*`` method needs.
NEEDED_SCOPE = "assistant:write"
#: Suggested prompts per thread (Slack shows at most four).
MAX_PROMPTS = 4
#: Loading messages one status may rotate through.
MAX_LOADING_MESSAGES = 10


@dataclass
class AssistantThread:
    """One thread of the assistant pane: who opened it, from where (``context``), and what the app showed."""

    channel_id: str
    thread_ts: str
    user_id: str
    context: JsonDict = field(default_factory=dict)
    #: The status shown now (``""``: none).
    status: str = ""
    loading_messages: list[str] = field(default_factory=list)
    #: Every non-empty status the app set, oldest first.
    statuses: list[str] = field(default_factory=list)
    prompts: list[JsonDict] = field(default_factory=list)
    prompts_title: str | None = None
    title: str | None = None


class AssistantThreads:
    """The assistant threads of one workspace and the three ``assistant.threads.*`` methods."""

    def __init__(self, scopes: tuple[str, ...], channel_exists: Callable[[str], bool]) -> None:
        self.scopes = scopes
        self.channel_exists = channel_exists
        self.threads: dict[tuple[str, str], AssistantThread] = {}

    def methods(self) -> dict[str, Callable[[JsonDict], JsonDict]]:
        return {
            "assistant.threads.setStatus": self.set_status,
            "assistant.threads.setSuggestedPrompts": self.set_suggested_prompts,
            "assistant.threads.setTitle": self.set_title,
        }

    def open(self, channel_id: str, thread_ts: str, user_id: str, context: Mapping[str, Any]) -> AssistantThread:
        thread = AssistantThread(channel_id, thread_ts, user_id, dict(context))
        self.threads[(channel_id, thread_ts)] = thread
        return thread

    def replied(self, channel_id: str, thread_ts: str | None) -> None:
        """The app posted in ``thread_ts``: its status is cleared, as Slack does."""
        thread = self.threads.get((channel_id, thread_ts or ""))
        if thread is not None:
            thread.status, thread.loading_messages = "", []

    # --- methods -----------------------------------------------------------------------------------------------

    def set_status(self, args: JsonDict) -> JsonDict:
        thread = self._thread(args, anywhere=True)
        status = args.get("status")
        if status is None:
            raise _invalid("missing required field: status")
        if not isinstance(status, str):
            raise _invalid("status must be a string [json-pointer:/status]")
        loading = _json(args.get("loading_messages"), "loading_messages")
        if loading is not None:
            if not isinstance(loading, list) or not all(isinstance(m, str) and m for m in loading):
                raise _invalid(
                    "loading_messages must be an array of non-empty strings [json-pointer:/loading_messages]"
                )
            if len(loading) > MAX_LOADING_MESSAGES:
                raise _invalid(f"no more than {MAX_LOADING_MESSAGES} items allowed [json-pointer:/loading_messages]")
        thread.status, thread.loading_messages = status, list(loading or []) if status else []
        if status:
            thread.statuses.append(status)
        return {"ok": True}

    def set_suggested_prompts(self, args: JsonDict) -> JsonDict:
        thread = self._thread(args)
        prompts = _json(args.get("prompts"), "prompts")
        if prompts is None:
            raise _invalid("missing required field: prompts")
        if not isinstance(prompts, list) or not prompts:
            raise _invalid("prompts must be a non-empty array [json-pointer:/prompts]")
        if len(prompts) > MAX_PROMPTS:
            raise _invalid(f"no more than {MAX_PROMPTS} items allowed [json-pointer:/prompts]")
        for i, prompt in enumerate(prompts):
            if not isinstance(prompt, dict):
                raise _invalid(f"must be an object [json-pointer:/prompts/{i}]")
            for key in ("title", "message"):
                if not isinstance(prompt.get(key), str) or not prompt[key].strip():
                    raise _invalid(f"missing required field: {key} [json-pointer:/prompts/{i}/{key}]")
            unknown = set(prompt) - {"title", "message"}
            if unknown:
                raise _invalid(f"unknown field {sorted(unknown)[0]} [json-pointer:/prompts/{i}]")
        title = args.get("title")
        if title is not None and not isinstance(title, str):
            raise _invalid("title must be a string [json-pointer:/title]")
        thread.prompts, thread.prompts_title = [dict(p) for p in prompts], title or None
        return {"ok": True}

    def set_title(self, args: JsonDict) -> JsonDict:
        thread = self._thread(args)
        title = args.get("title")
        if not isinstance(title, str) or not title.strip():
            raise _invalid("missing required field: title")
        thread.title = title
        return {"ok": True}

    def _thread(self, args: JsonDict, *, anywhere: bool = False) -> AssistantThread:
        """The thread ``args`` name; ``anywhere``: any thread of a conversation (a status may also show under a
        reply to a mention), else only a thread of the assistant pane."""
        if NEEDED_SCOPE not in self.scopes:
            raise SlackMethodError("missing_scope", details={"needed": NEEDED_SCOPE, "provided": ",".join(self.scopes)})
        for key in ("channel_id", "thread_ts"):
            if not isinstance(args.get(key), str) or not args[key]:
                raise _invalid(f"missing required field: {key}")
        channel_id, thread_ts = str(args["channel_id"]), str(args["thread_ts"])
        if not self.channel_exists(channel_id):
            raise SlackMethodError("channel_not_found")
        thread = self.threads.get((channel_id, thread_ts))
        if thread is None and anywhere:
            thread = self.threads[(channel_id, thread_ts)] = AssistantThread(channel_id, thread_ts, "")
        if thread is None:
            raise _invalid(
                f"thread_ts {thread_ts} is not an assistant thread in {channel_id} [json-pointer:/thread_ts]"
            )
        return thread


def _invalid(message: str) -> SlackMethodError:
    return SlackMethodError("invalid_arguments", details={"response_metadata": {"messages": [f"[ERROR] {message}"]}})


def _json(raw: object, name: str) -> Any:
    """Arrays arrive as JSON text in form bodies and as arrays in JSON bodies."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise _invalid(f"{name} is not valid JSON [json-pointer:/{name}]") from exc
    return raw


class ThreadReplies:
    """Message metadata (``chat.postMessage`` / ``chat.update`` ``metadata``) and ``conversations.replies``: what
    bolt's default thread context store reads an assistant thread's context back from."""

    def __init__(self, messages: Callable[[str], list[Any]], channel_exists: Callable[[str], bool]) -> None:
        self.messages = messages
        self.channel_exists = channel_exists
        #: ``(channel, ts) -> {"event_type": ..., "event_payload": {...}}``
        self.metadata: dict[tuple[str, str], JsonDict] = {}

    def keep(self, channel: str, ts: str, raw: object) -> None:
        """Remember the ``metadata`` argument of a post or an update of ``ts`` (nothing when it was not given)."""
        if raw is None:
            return
        self.metadata[(channel, ts)] = check_metadata(raw)

    def replies(self, args: JsonDict) -> JsonDict:
        channel, ts = args.get("channel"), args.get("ts")
        if not isinstance(channel, str) or not channel or not self.channel_exists(channel):
            raise SlackMethodError("channel_not_found")
        if not isinstance(ts, str) or not ts:
            raise _invalid("missing required field: ts")
        inclusive = str(args.get("inclusive", "")).lower() in ("1", "true")
        oldest, latest = str(args.get("oldest") or "0"), str(args.get("latest") or "9999999999.999999")
        every = [m for m in self.messages(channel) if not m.deleted and not m.ephemeral]
        parent = [m for m in every if m.ts == ts]
        after = [
            m for m in every if m.thread_ts == ts and m.ts != ts and _within(m.ts, oldest, latest, inclusive=inclusive)
        ]
        if not parent and not after and not any(m.thread_ts == ts for m in every):
            raise SlackMethodError("thread_not_found")
        limit = _limit(args.get("limit"))
        found = sorted(parent + after, key=lambda m: float(m.ts))[:limit]
        with_metadata = str(args.get("include_all_metadata", "")).lower() in ("1", "true")
        shown = []
        for message in found:
            data = message.to_api()
            if message.thread_ts is None and after:
                data["thread_ts"] = message.ts
            if not data.get("blocks"):  # Slack answers a text-only message with the rich_text block it made of it
                data["blocks"] = [_rich_text(message.ts, message.text)]
            if with_metadata and (channel, message.ts) in self.metadata:
                data["metadata"] = dict(self.metadata[(channel, message.ts)])
            shown.append(data)
        return {"ok": True, "messages": shown, "has_more": False, "response_metadata": {"next_cursor": ""}}


def check_metadata(raw: object) -> JsonDict:
    """``metadata`` as Slack takes it: ``{"event_type": "<name>", "event_payload": {...}}`` (an object, or JSON
    text in a form body); anything else is ``invalid_metadata_format``."""
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            value = None
    if (
        not isinstance(value, dict)
        or not isinstance(value.get("event_type"), str)
        or not value["event_type"]
        or not isinstance(value.get("event_payload"), dict)
    ):
        raise SlackMethodError("invalid_metadata_format")
    return {"event_type": value["event_type"], "event_payload": value["event_payload"]}


def _rich_text(ts: str, text: str) -> JsonDict:
    return {
        "type": "rich_text",
        "block_id": "rt" + ts.replace(".", "")[-6:],
        "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}],
    }


def _within(ts: str, oldest: str, latest: str, *, inclusive: bool) -> bool:
    t, low, high = float(ts), float(oldest), float(latest)
    return (low <= t <= high) if inclusive else (low < t < high)


def _limit(raw: object) -> int:
    try:
        limit = int(str(raw)) if raw not in (None, "") else 1000
    except ValueError as exc:
        raise _invalid("limit must be a number [json-pointer:/limit]") from exc
    return max(1, min(limit, 1000))
