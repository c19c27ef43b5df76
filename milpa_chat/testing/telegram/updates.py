"""Updates for the bot: the pending queue, ``getUpdates`` long polling, and webhook delivery.

Semantics follow the Bot API server (``telegram-bot-api/Client.cpp``):

* ``getUpdates(offset)`` confirms every update with a smaller id; a negative offset keeps only the
  last ``-offset`` updates; ``timeout`` seconds of long polling when nothing is pending;
* a new ``getUpdates`` ends a waiting one with 409 ``Conflict: terminated by other getUpdates
  request; ...``; ``setWebhook`` ends it with ``Conflict: terminated by setWebhook request``; while
  a webhook is set ``getUpdates`` answers 409 ``Conflict: can't use getUpdates method while webhook
  is active; ...``;
* with a webhook, each update is POSTed as JSON with ``X-Telegram-Bot-Api-Secret-Token``; a 2xx
  answer confirms it, anything else leaves it pending and sets ``last_error_message``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from milpa_chat.testing.telegram.models import TelegramUpdate, TelegramWebhookDelivery
from milpa_chat.testing.telegram.validate import ApiError, Params

__all__ = ["Answer", "UpdateFeed", "WebhookConfig"]

_DEFAULT_EXCLUDED = frozenset({"chat_member", "message_reaction", "message_reaction_count"})
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_CONFLICT_WEBHOOK = (
    "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first"
)
_CONFLICT_POLL = "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"
_CONFLICT_SET_WEBHOOK = "Conflict: terminated by setWebhook request"
_SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"


@dataclass(frozen=True)
class Answer:
    """A successful result that also carries the top-level ``description`` Telegram adds."""

    result: Any
    description: str


@dataclass(frozen=True)
class WebhookConfig:
    url: str
    secret_token: str | None
    max_connections: int
    ip_address: str | None
    allowed_updates: tuple[str, ...] | None = None
    has_custom_certificate: bool = False


@dataclass
class UpdateFeed:
    """The bot's pending updates and the two ways of getting them."""

    webhook_timeout: float
    first_update_id: int = 1
    pending: list[TelegramUpdate] = field(default_factory=list)
    history: list[TelegramUpdate] = field(default_factory=list)
    webhook: WebhookConfig | None = None
    allowed_updates: tuple[str, ...] | None = None
    last_error_date: int | None = None
    last_error_message: str | None = None
    closed: bool = False

    def __post_init__(self) -> None:
        self._ids = itertools.count(self.first_update_id)
        self._generation = 0
        self._abort_reason = _CONFLICT_POLL
        self._changed = asyncio.Event()
        self._deliver_lock = asyncio.Lock()
        self._session: aiohttp.ClientSession | None = None

    # -- creating updates -----------------------------------------------------------------------

    def new_update_id(self) -> int:
        return next(self._ids)

    async def push(self, update: TelegramUpdate) -> TelegramUpdate:
        """Queue an update (unless the bot's ``allowed_updates`` exclude its kind) and, with a
        webhook set, deliver what is pending."""
        self.history.append(update)
        if self._allowed(update.kind):
            self.pending.append(update)
            self._notify()
            if self.webhook is not None:
                await self.deliver_pending()
        return update

    def _allowed(self, kind: str) -> bool:
        allowed = self.webhook.allowed_updates if self.webhook is not None else self.allowed_updates
        if not allowed:
            return kind not in _DEFAULT_EXCLUDED
        return kind in allowed

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    # -- getUpdates ----------------------------------------------------------------------------

    async def get_updates(self, params: Params) -> list[dict[str, Any]]:
        if self.webhook is not None:
            raise ApiError(409, _CONFLICT_WEBHOOK)
        offset = params.integer("offset")
        limit = min(max(params.integer("limit", 100), 1), 100)
        timeout = min(max(params.integer("timeout"), 0), 50)
        allowed = params.json_value("allowed_updates", "allowed updates")
        if isinstance(allowed, list):
            self.allowed_updates = tuple(str(kind) for kind in allowed)
        self._generation += 1
        self._abort_reason = _CONFLICT_POLL
        generation = self._generation
        self._notify()  # a waiting getUpdates ends with 409
        self._confirm(offset)
        deadline = time.monotonic() + timeout
        while True:
            batch = self._select(offset, limit)
            if batch or self.closed:
                return batch
            if generation != self._generation:
                raise ApiError(409, self._abort_reason)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return []
            changed = self._changed
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), remaining)

    def _confirm(self, offset: int) -> None:
        if offset < 0:
            self.pending = self.pending[offset:]
        elif offset > 0:
            self.pending = [u for u in self.pending if not (u.handed_out if u.redelivery else u.update_id < offset)]

    def _select(self, offset: int, limit: int) -> list[dict[str, Any]]:
        """Pending updates from ``offset`` on, in order; a redelivered update (an id the bot may
        already have confirmed) comes alone, after them, so that clients computing the next offset
        from the last update of a batch confirm nothing by mistake."""
        batch = [u for u in self.pending if not u.redelivery and u.update_id >= offset][:limit]
        if not batch:
            batch = [u for u in self.pending if u.redelivery and not u.handed_out][:1]
        for update in batch:
            update.handed_out = True
        return [u.payload for u in batch]

    # -- webhooks ----------------------------------------------------------------------------

    async def set_webhook(self, params: Params, *, method: str) -> Answer:
        url = params.text("url") if method == "setwebhook" else ""
        if params.flag("drop_pending_updates"):
            self.pending.clear()
        if not url:
            was_set = self.webhook is not None
            self.webhook = None
            return Answer(True, "Webhook was deleted" if was_set else "Webhook is already deleted")
        config = self._webhook_config(params, url)
        if config == self.webhook:
            return Answer(True, "Webhook is already set")
        self._generation += 1
        self._abort_reason = _CONFLICT_SET_WEBHOOK
        self._notify()
        self.webhook = config
        self.last_error_date = self.last_error_message = None
        return Answer(True, "Webhook was set")

    @staticmethod
    def _webhook_config(params: Params, url: str) -> WebhookConfig:
        parts = urlsplit(url if "://" in url else "https://" + url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ApiError.bad_request("invalid webhook URL specified")
        secret = params.text("secret_token")
        if len(secret) > 256:
            raise ApiError.bad_request("secret token is too long")
        if not set(secret) <= _TOKEN_CHARS:
            raise ApiError.bad_request("secret token contains unallowed characters")
        allowed = params.json_value("allowed_updates", "allowed updates")
        return WebhookConfig(
            url=parts.geturl(),
            secret_token=secret or None,
            max_connections=min(max(params.integer("max_connections", 40), 1), 100),
            ip_address=params.text("ip_address") or None,
            allowed_updates=tuple(str(k) for k in allowed) if isinstance(allowed, list) else None,
            has_custom_certificate="certificate" in params.files,
        )

    def webhook_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {
            "url": self.webhook.url if self.webhook else "",
            "has_custom_certificate": bool(self.webhook and self.webhook.has_custom_certificate),
            "pending_update_count": len(self.pending),
        }
        if self.last_error_date is not None:
            info["last_error_date"] = self.last_error_date
            info["last_error_message"] = self.last_error_message
        if self.webhook is not None:
            info["max_connections"] = self.webhook.max_connections
            info["ip_address"] = self.webhook.ip_address or "127.0.0.1"
            if self.webhook.allowed_updates is not None:
                info["allowed_updates"] = list(self.webhook.allowed_updates)
        return info

    async def deliver_pending(self) -> None:
        """POST pending updates to the webhook in order; stop at the first one refused."""
        async with self._deliver_lock:
            while self.webhook is not None and self.pending:
                update = self.pending[0]
                delivery = await self.post(update)
                if delivery.status is None or not 200 <= delivery.status < 300:
                    return
                self.pending.remove(update)

    async def post(self, update: TelegramUpdate, *, secret_token: str | bool | None = True) -> TelegramWebhookDelivery:
        """One POST of ``update`` to the webhook. ``secret_token=True`` sends the configured token;
        a string sends that one instead, ``None`` sends no header (to test the bot's check)."""
        if self.webhook is None:
            raise RuntimeError("no webhook is set: the bot has to call setWebhook first")
        token = self.webhook.secret_token if secret_token is True else secret_token
        headers = {"Content-Type": "application/json"}
        if isinstance(token, str):
            headers[_SECRET_HEADER] = token
        status: int | None = None
        error: str | None = None
        try:
            body = json.dumps(update.payload).encode()
            async with self._client().post(self.webhook.url, data=body, headers=headers) as response:
                await response.read()
                status = response.status
                if not 200 <= status < 300:
                    error = f"Wrong response from the webhook: {status} {response.reason}"
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:  # OSError: a reset that aiohttp let through
            error = f"Connection error: {exc!r}" if str(exc) else f"Connection error: {type(exc).__name__}"
        delivery = TelegramWebhookDelivery(update.update_id, self.webhook.url,
                                           token if isinstance(token, str) else None, status, error)  # fmt: skip
        update.deliveries.append(delivery)
        if error is not None:
            self.last_error_date, self.last_error_message = int(time.time()), error
        self._notify()
        return delivery

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            timeout = aiohttp.ClientTimeout(total=self.webhook_timeout)
            self._session = aiohttp.ClientSession(timeout=timeout)
        return self._session

    async def close(self) -> None:
        self.closed = True
        self._notify()
        if self._session is not None:
            await self._session.close()
