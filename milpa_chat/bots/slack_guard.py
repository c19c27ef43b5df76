"""Slack's request signature, checked before anything reads a request's body.

Every HTTP request a :class:`~milpa_chat.bots.slack.SlackBot` serves passes :class:`SlackGuard` first: a request
without Slack's signature headers, with a bad signature, a timestamp more than five minutes away (Slack's rule), or
one already served (the same signature again, and the same ``X-Slack-Retry-Num``: a replay, not Slack's retry)
is refused with 401 and one INFO line; only then is the body parsed, and a signed body that is not what Slack
sends (not UTF-8, not JSON, not a JSON object) is refused with 400. Neither logs a traceback, so nobody can fill
the logs by posting garbage.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slack_bolt.request.async_request import AsyncBoltRequest

__all__ = ["MAX_AGE", "Refusal", "SlackGuard"]

log = logging.getLogger("milpa_chat.bots.slack")

#: Seconds a signed request stays valid (Slack: "more than five minutes" away from now is refused).
MAX_AGE = 300
#: Signatures remembered to refuse replays (per process; the oldest are forgotten first).
REMEMBERED = 100_000


@dataclass(frozen=True, slots=True)
class Refusal:
    """An HTTP answer to a request that is not served: ``status`` and a one-line ``reason``."""

    status: int
    reason: str


class SlackGuard:
    """Checks a request's signature (slack_sdk's ``SignatureVerifier``), freshness and novelty, then parses it."""

    def __init__(
        self, signing_secret: str, *, clock: Callable[[], float] = time.time, max_age: float = MAX_AGE
    ) -> None:
        from slack_sdk.signature import SignatureVerifier

        self.clock = clock
        self.max_age = max_age
        self.verifier = SignatureVerifier(signing_secret)
        self._secret = signing_secret.encode()
        self._seen: OrderedDict[str, float] = OrderedDict()

    def check(self, body: bytes, headers: Mapping[str, str], *, peer: object = None) -> Refusal | None:
        """``None`` when the request is Slack's, signed now and not seen before; else why not (401)."""
        refusal = self._refusal(body, headers)
        if refusal is not None:
            log.info("refused a Slack request from %s: %s", peer or "?", refusal.reason)
        return refusal

    def _refusal(self, body: bytes, headers: Mapping[str, str]) -> Refusal | None:
        timestamp, signature = headers.get("x-slack-request-timestamp"), headers.get("x-slack-signature")
        if not timestamp or not signature:
            return Refusal(401, "not signed (no X-Slack-Signature and X-Slack-Request-Timestamp)")
        try:
            sent = int(timestamp)
        except ValueError:
            return Refusal(401, "X-Slack-Request-Timestamp is not a number of seconds")
        now = self.clock()
        if abs(now - sent) > self.max_age:
            return Refusal(401, f"stale: signed {int(now - sent)} s ago (at most {int(self.max_age)} s)")
        if not self._signed(body, timestamp, signature):
            return Refusal(401, "the signature does not match the body (wrong signing secret, or altered)")
        key = f"{signature}:{headers.get('x-slack-retry-num', '')}"
        if key in self._seen:
            return Refusal(401, "replayed: this signed request was served already")
        self._remember(key, sent + self.max_age, now)
        return None

    def _signed(self, body: bytes, timestamp: str, signature: str) -> bool:
        """Whether ``signature`` is Slack's ``v0`` HMAC-SHA256 of ``body`` at ``timestamp``: computed over the raw
        bytes once (slack_sdk's ``SignatureVerifier`` would decode the body and encode it again, and check the
        freshness :meth:`_refusal` has checked already)."""
        expected = hmac.new(self._secret, b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(b"v0=" + expected.encode(), signature.encode())

    def _remember(self, key: str, until: float, now: float) -> None:
        self._seen[key] = until
        while self._seen and (len(self._seen) > REMEMBERED or next(iter(self._seen.values())) < now):
            self._seen.popitem(last=False)

    @staticmethod
    def parse(body: bytes, query: str, headers: Mapping[str, str]) -> AsyncBoltRequest | Refusal:
        """bolt's request for a verified body, or 400 naming what is wrong with it."""
        from slack_bolt.request.async_request import AsyncBoltRequest

        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return Refusal(400, "the body is not UTF-8")
        try:
            request = AsyncBoltRequest(body=text, query=query, headers=dict(headers))
        except Exception as exc:  # bolt parses JSON or a form with a JSON payload
            return Refusal(400, f"the body is not a Slack request ({type(exc).__name__}: {str(exc)[:80]})")
        if not isinstance(request.body, dict) or not request.body:
            return Refusal(400, "the body is not a Slack request (a JSON object, or a form with a JSON payload)")
        return request


def lower_headers(headers: Mapping[str, Any]) -> dict[str, str]:
    """Header names in lower case (the first value of each)."""
    found: dict[str, str] = {}
    for name, value in headers.items():
        found.setdefault(str(name).lower(), str(value))
    return found
