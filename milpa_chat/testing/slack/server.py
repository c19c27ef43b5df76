"""A local Slack Web API server on 127.0.0.1 that slack_sdk / slack-bolt talk to through ``base_url``.

It speaks real HTTP (aiohttp): ``POST /api/<method>`` with form-urlencoded, multipart or JSON bodies, the token in
``Authorization: Bearer`` or a ``token`` field, and answers in Slack's shapes. ``response_url`` posts go to
``/response/<id>``. State and the method implementations live in :class:`SlackWorkspace`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from aiohttp import web

from milpa_chat.testing._server import LocalServer
from milpa_chat.testing.slack.assistant_threads import AssistantThread, AssistantThreads, ThreadReplies, check_metadata
from milpa_chat.testing.slack.models import JsonDict, SlackApiCall, SlackMessage, SlackMethodError, SlackView
from milpa_chat.testing.slack.workspace import MAX_TEXT_LENGTH, SlackWorkspace, channel_map

T = TypeVar("T")
DEFAULT_SCOPES = (
    "app_mentions:read",
    "assistant:write",
    "channels:read",
    "chat:write",
    "commands",
    "im:history",
    "im:write",
)


@dataclass
class _ArmedFailure:
    method: str | None
    error: str
    status: int
    retry_after: int | None
    remaining: int


async def _read_args(request: web.Request) -> tuple[JsonDict, str]:
    """Query string, form fields and JSON body merged, as Slack does; raises ValueError for broken JSON."""
    args: JsonDict = dict(request.query)
    content_type = request.content_type
    if request.method == "POST" and request.can_read_body:
        if content_type == "application/json":
            body = json.loads(await request.text() or "{}")
            if not isinstance(body, dict):
                raise ValueError("the JSON body is not an object")
            args.update(body)
        else:
            form = await request.post()
            args.update({k: v for k, v in form.items() if isinstance(v, str)})
    return args, content_type


class SlackApiServer(LocalServer):
    """Local Slack Web API (``auth.test``, ``chat.*``, ``views.open``, ``conversations.info/open``, response_url).

    ``async with SlackApiServer(bot_token="xoxb-test") as api:`` runs it on the current event loop;
    ``with SlackApiServer(...) as api:`` runs it on a loop of its own in a background thread, for the sync
    ``WebClient`` / ``App``. Point clients at ``api.base_url``.
    """

    def __init__(
        self,
        bot_token: str = "xoxb-test",
        *,
        team_id: str = "T1",
        team_name: str = "Test Team",
        bot_user_id: str = "U0BOT",
        bot_id: str = "B0BOT",
        channels: Iterable[str] | Mapping[str, str] = (),
        create_channels: bool = False,
        scopes: Sequence[str] = DEFAULT_SCOPES,
        max_text_length: int = MAX_TEXT_LENGTH,
        response_url_max_uses: int = 5,
        trigger_ttl: float = 3.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.bot_token = bot_token
        self.scopes = tuple(scopes)
        self.workspace = SlackWorkspace(
            team_id=team_id,
            team_name=team_name,
            bot_user_id=bot_user_id,
            bot_id=bot_id,
            channels=channel_map(channels),
            create_channels=create_channels,
            max_text_length=max_text_length,
            response_url_max_uses=response_url_max_uses,
            trigger_ttl=trigger_ttl,
        )
        self.assistant_threads = AssistantThreads(self.scopes, lambda c: c in self.workspace.channels)
        self.thread_replies = ThreadReplies(
            lambda c: list(self.workspace.messages.get(c, [])), lambda c: c in self.workspace.channels
        )
        self._serve_assistant_threads()
        super().__init__(host=host, port=port)
        self._calls: list[SlackApiCall] = []
        self._armed: list[_ArmedFailure] = []

    def _serve_assistant_threads(self) -> None:
        """``assistant.threads.*``; a reply the app posts in a thread clears the thread's status, as on Slack.
        Messages keep their ``metadata`` and ``conversations.replies`` reads a thread back (bolt's default thread
        context store reads an assistant thread's context from there)."""
        methods = self.workspace.methods
        methods.update(self.assistant_threads.methods())
        methods["conversations.replies"] = self.thread_replies.replies
        post, update = methods["chat.postMessage"], methods["chat.update"]

        def post_and_clear(args: JsonDict) -> JsonDict:
            if args.get("metadata") is not None:
                check_metadata(args["metadata"])  # refused before anything is posted
            answer = post(args)
            self.thread_replies.keep(str(answer["channel"]), str(answer["ts"]), args.get("metadata"))
            self.assistant_threads.replied(str(answer["channel"]), args.get("thread_ts") or None)
            return answer

        def update_with_metadata(args: JsonDict) -> JsonDict:
            if args.get("metadata") is not None:
                check_metadata(args["metadata"])
            answer = update(args)
            self.thread_replies.keep(str(answer["channel"]), str(answer["ts"]), args.get("metadata"))
            return answer

        methods["chat.postMessage"] = post_and_clear
        methods["chat.update"] = update_with_metadata
        start = methods.get("chat.startStream")
        if start is not None:

            def start_and_clear(args: JsonDict) -> JsonDict:  # a streamed reply clears the status too
                answer = start(args)
                self.assistant_threads.replied(str(answer.get("channel") or args.get("channel")), args.get("thread_ts"))
                return answer

            methods["chat.startStream"] = start_and_clear

    # --- lifecycle (start/stop, ``async with``/``with``, host/port/url: LocalServer) ---------------------------

    def _routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/api/{method}", self._handle_api)
        app.router.add_post("/response/{url_id}", self._handle_response_url)

    @property
    def base_url(self) -> str:
        """The Web API root for ``WebClient(base_url=...)``; ends with ``/api/``."""
        return f"{self.url}/api/"

    # --- HTTP handlers -----------------------------------------------------------------------------------------

    async def _handle_api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        try:
            args, content_type = await _read_args(request)
        except ValueError:
            return web.json_response({"ok": False, "error": "invalid_json"})
        auth = request.headers.get("Authorization", "")
        token = auth[7:].strip() if auth.startswith("Bearer ") else args.pop("token", None)
        args.pop("token", None)
        status, body, headers = self._answer(method, args, token)
        self._record(
            SlackApiCall(
                method=method,
                args=args,
                token=token,
                http_method=request.method,
                content_type=content_type,
                status=status,
                response=body,
                at=time.time(),
                monotonic=time.monotonic(),
            )
        )
        headers["X-OAuth-Scopes"] = ",".join(self.scopes)
        return web.json_response(body, status=status, headers=headers)

    def _answer(self, method: str, args: JsonDict, token: str | None) -> tuple[int, JsonDict, dict[str, str]]:
        if not token:
            return 200, {"ok": False, "error": "not_authed"}, {}
        if token != self.bot_token:
            return 200, {"ok": False, "error": "invalid_auth"}, {}
        armed = self._take_armed(method)
        if armed is not None:
            headers = {"Retry-After": str(armed.retry_after)} if armed.retry_after is not None else {}
            return armed.status, {"ok": False, "error": armed.error}, headers
        handler = self.workspace.methods.get(method)
        if handler is None:
            return 200, {"ok": False, "error": "unknown_method", "req_method": method}, {}
        try:
            with self.workspace.lock:
                return 200, handler(args), {}
        except SlackMethodError as exc:
            return exc.status, exc.body(), {}

    async def _handle_response_url(self, request: web.Request) -> web.Response:
        body: Any = None
        try:
            if request.content_type == "application/json":
                body = json.loads(await request.text() or "{}")
            else:
                form = await request.post()
                payload = form.get("payload")
                body = json.loads(payload) if isinstance(payload, str) else dict(form)
        except ValueError:
            body = None  # unreadable: answered below as invalid_payload, as Slack does
        status, answer = 200, "ok"
        try:
            if not isinstance(body, dict):
                raise SlackMethodError("invalid_payload", status=400)
            with self.workspace.lock:
                self.workspace.respond(request.match_info["url_id"], body)
        except SlackMethodError as exc:
            status, answer = exc.status, exc.error
        self._record(
            SlackApiCall(
                method="response_url",
                args=body if isinstance(body, dict) else {"body": body},
                token=None,
                http_method="POST",
                content_type=request.content_type,
                status=status,
                response=answer,
                at=time.time(),
                monotonic=time.monotonic(),
            )
        )
        return web.Response(status=status, text=answer, content_type="text/plain")

    def _record(self, call: SlackApiCall) -> None:
        with self.workspace.lock:
            self._calls.append(call)
        self.activity.notify()  # outside the lock: waiters re-check through calls() and messages()

    def _take_armed(self, method: str) -> _ArmedFailure | None:
        with self.workspace.lock:
            for armed in self._armed:
                if armed.method in (None, method) and armed.remaining > 0:
                    armed.remaining -= 1
                    return armed
        return None

    # --- test controls -----------------------------------------------------------------------------------------

    def rate_limit(self, method: str | None = None, *, times: int = 1, retry_after: int = 1) -> None:
        """Answer the next ``times`` calls of ``method`` (any method when None) with HTTP 429 ``ratelimited``."""
        self.fail_next(method, "ratelimited", times=times, status=429, retry_after=retry_after)

    def fail_next(
        self, method: str | None, error: str, *, times: int = 1, status: int = 200, retry_after: int | None = None
    ) -> None:
        """Answer the next ``times`` calls of ``method`` with ``{"ok": false, "error": error}``."""
        with self.workspace.lock:
            self._armed.append(_ArmedFailure(method, error, status, retry_after, times))

    def add_channel(self, channel_id: str, *, name: str | None = None, is_private: bool = False) -> None:
        """Make a channel exist (ids starting with ``D`` are direct messages)."""
        self.workspace.add_channel(channel_id, name=name, is_private=is_private)

    def add_user(self, user_id: str, name: str, *, real_name: str = "", display_name: str = "") -> None:
        """A member ``users.info`` answers for (``user.name``, ``user.real_name``, ``user.profile.display_name``);
        ``users.info`` of an id never added is ``user_not_found``."""
        people: dict[str, JsonDict] = self.workspace.__dict__.setdefault("people", {})
        people[user_id] = {
            "id": user_id,
            "team_id": self.workspace.team_id,
            "name": name,
            "real_name": real_name,
            "profile": {"real_name": real_name, "display_name": display_name},
        }

        def users_info(args: JsonDict) -> JsonDict:
            found = people.get(str(args.get("user", "")))
            if found is None:
                raise SlackMethodError("user_not_found")
            return {"ok": True, "user": found}

        self.workspace.methods["users.info"] = users_info

    def add_user_message(self, channel: str, text: str, *, user: str, thread_ts: str | None = None) -> SlackMessage:
        """Record a message a person wrote (for events that refer to it, and for ``cant_update_message``)."""
        resolved = self.workspace.add_channel(channel)
        if resolved.is_im and resolved.user is None:
            resolved.user = user
        message = SlackMessage(
            channel=resolved.id,
            ts=self.workspace.next_ts(),
            text=text,
            user=user,
            thread_ts=thread_ts,
            team=self.workspace.team_id,
            via="user",
        )
        return self.workspace.add_message(message)

    def open_assistant_thread(
        self, user: str, *, channel: str | None = None, context: Mapping[str, Any] | None = None
    ) -> AssistantThread:
        """What Slack does when ``user`` opens the app's assistant pane: a new thread in their DM with the app
        (``channel``, by default ``D`` + the user's id without its first letter). ``context``: where they were
        (``{"channel_id": "C1", "team_id": ...}``)."""
        dm = self.workspace.add_channel(channel or "D" + user[1:])
        dm.is_im = True
        dm.user = dm.user or user
        with self.workspace.lock:
            return self.assistant_threads.open(dm.id, self.workspace.next_ts(), user, context or {})

    def assistant_thread(self, channel: str, thread_ts: str) -> AssistantThread:
        """The assistant thread ``thread_ts`` of ``channel``: its status, every status shown, prompts and title."""
        with self.workspace.lock:
            found = self.assistant_threads.threads.get((channel, thread_ts))
        if found is None:
            raise LookupError(f"no assistant thread {thread_ts} in {channel}")
        return found

    def new_response_url(
        self, channel: str, *, user: str | None = None, message_ts: str | None = None, ephemeral: bool = False
    ) -> str:
        """A ``response_url`` bound to ``channel``; ``replace_original``/``delete_original`` act on ``message_ts``
        (an ephemeral message of ``user`` when ``ephemeral``), and new ephemeral replies go to ``user``."""
        url_id = self.workspace.new_response_url(channel, user=user, message_ts=message_ts, ephemeral=ephemeral)
        return f"{self.url}/response/{url_id}"

    def new_trigger_id(self) -> str:
        """A ``trigger_id`` that ``views.open`` accepts once within ``trigger_ttl`` seconds."""
        return self.workspace.new_trigger_id()

    # --- inspection --------------------------------------------------------------------------------------------

    def calls(self, method: str | None = None) -> list[SlackApiCall]:
        """Every call the app made, oldest first (``"response_url"`` for response_url posts)."""
        with self.workspace.lock:
            return [c for c in self._calls if method is None or c.method == method]

    def messages(
        self, channel: str, *, thread_ts: str | None = None, include_deleted: bool = False
    ) -> list[SlackMessage]:
        """Non-ephemeral messages in ``channel`` (oldest first); ``thread_ts`` selects one thread's replies."""
        with self.workspace.lock:
            return [
                m
                for m in self.workspace.messages.get(channel, [])
                if (include_deleted or not m.deleted) and (thread_ts is None or m.thread_ts == thread_ts)
            ]

    def message(self, channel: str, ts: str) -> SlackMessage:
        """The message ``ts`` in ``channel``, ephemeral or not, deleted or not."""
        with self.workspace.lock:
            pool = [*self.workspace.messages.get(channel, []), *self.workspace.ephemeral]
        for message in pool:
            if message.channel == channel and message.ts == ts:
                return message
        raise LookupError(f"no message {ts} in {channel}")

    def ephemeral_messages(self, user: str | None = None, *, channel: str | None = None) -> list[SlackMessage]:
        """Ephemeral messages (not deleted), optionally only those shown to ``user`` / in ``channel``."""
        with self.workspace.lock:
            return [
                m
                for m in self.workspace.ephemeral
                if not m.deleted and user in (None, m.ephemeral_to) and channel in (None, m.channel)
            ]

    def views(self) -> list[SlackView]:
        """Modals opened with ``views.open``."""
        with self.workspace.lock:
            return list(self.workspace.views)

    # --- waiting: re-checked after every recorded call (milpa_chat.testing.waiting) ---------------------------

    # A `timeout` argument (not asyncio.timeout) so the TimeoutError can list the calls the app made.
    async def wait_until(
        self,
        condition: Callable[[], T | None],
        timeout: float = 5.0,  # noqa: ASYNC109
        *,
        what: str = "",
    ) -> T:
        """``condition()``'s first truthy result, re-checked after every call the app makes (TimeoutError
        after ``timeout`` seconds, listing the last calls)."""
        found = await self.activity.wait_until(condition, timeout, what=what, describe=self._recent_calls)
        assert found is not None
        return found

    async def wait_for(self, predicate: Callable[[], T | None], timeout: float = 5.0) -> T:  # noqa: ASYNC109
        """The same as :meth:`wait_until` (``predicate`` takes no argument and its truthy result is returned)."""
        return await self.wait_until(predicate, timeout)

    def wait_for_sync(self, predicate: Callable[[], T | None], timeout: float = 5.0) -> T:
        """:meth:`wait_until` for sync tests (the server must run in its thread: ``with SlackApiServer()``)."""
        found = self.activity.wait_until_sync(predicate, timeout, describe=self._recent_calls)
        assert found is not None
        return found

    async def wait_for_call(
        self,
        method: str,
        *,
        count: int = 1,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> SlackApiCall:
        """Wait until ``method`` was called ``count`` times; returns the ``count``-th call."""
        await self.wait_until(lambda: len(self.calls(method)) >= count, timeout, what=f"call {count} of {method}")
        return self.calls(method)[count - 1]

    async def wait_for_message(
        self,
        channel: str,
        predicate: Callable[[SlackMessage], bool] | None = None,
        timeout: float = 5.0,  # noqa: ASYNC109
    ) -> SlackMessage:
        """Wait for a message in ``channel`` (matching ``predicate``, if given) and return the newest such."""

        def newest() -> SlackMessage | None:
            found = [m for m in self.messages(channel) if predicate is None or predicate(m)]
            return found[-1] if found else None

        return await self.wait_until(newest, timeout, what=f"a message in {channel}")

    def _recent_calls(self) -> str:
        recent = "\n  ".join(str(c) for c in self.calls()[-10:]) or "(none)"
        return f"last calls:\n  {recent}"
