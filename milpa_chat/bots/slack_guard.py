"""Slack's request signature, checked before anything reads a request's body.

Every HTTP request a :class:`~milpa_chat.bots.slack.SlackBot` serves passes :class:`SlackGuard` first: a request
without Slack's signature headers, with a bad signature, a timestamp more than five minutes away (Slack's rule), or
one already served (the same signature again, and the same ``X-Slack-Retry-Num``: a replay, not Slack's retry)
is refused with 401 and one INFO line; only then is the body parsed, and a signed body that is not what Slack
sends (not UTF-8, not JSON, not a JSON object) is refused with 400. Neither logs a traceback, so nobody can fill
the logs by posting garbage.

An interaction's body (``payload=<percent-encoded JSON>``, every button tap) is decoded in C
(:func:`form_payload`) into exactly what bolt's ``parse_qsl`` would make of it, without urllib's loop over each
escape; any other body is parsed by bolt. A request the guard let through carries :data:`GUARDED` in its
context, so bolt's own signature check (:class:`GuardedVerification`) does not compute the same HMAC again.
"""

from __future__ import annotations

import codecs
import functools
import hashlib
import hmac
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from slack_bolt.request.async_request import AsyncBoltRequest

__all__ = ["GUARDED", "MAX_AGE", "Refusal", "SlackGuard", "form_payload", "guarded_verification"]

log = logging.getLogger("milpa_chat.bots.slack")

#: Seconds a signed request stays valid (Slack: "more than five minutes" away from now is refused).
MAX_AGE = 300
#: Signatures remembered to refuse replays (per process; the oldest are forgotten first).
REMEMBERED = 100_000
#: The context key of a request whose signature the guard checked (its value is :data:`_GUARDED_BY`, an object
#: nothing outside this module holds: no request body or header can set it).
GUARDED = "milpa_guarded"
_GUARDED_BY = object()
_FORM_PAYLOAD = b"payload="


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
        context = {GUARDED: _GUARDED_BY}
        payload = form_payload(body, headers)
        if payload is not None:  # bolt's request as bolt would build it from ``text``, the body already decoded
            request = AsyncBoltRequest(
                body=payload, query=query, headers=dict(headers), context=context, mode="socket_mode"
            )
            request.raw_body, request.mode = text, "http"
            return request
        try:
            request = AsyncBoltRequest(body=text, query=query, headers=dict(headers), context=context)
        except Exception as exc:  # bolt parses JSON or a form with a JSON payload
            return Refusal(400, f"the body is not a Slack request ({type(exc).__name__}: {str(exc)[:80]})")
        if not isinstance(request.body, dict) or not request.body:
            return Refusal(400, "the body is not a Slack request (a JSON object, or a form with a JSON payload)")
        return request


def form_payload(body: bytes, headers: Mapping[str, str]) -> dict[str, Any] | None:
    """The JSON object of a ``payload=<percent-encoded JSON>`` form body, equal to what bolt's ``parse_body``
    (``json.loads`` of ``parse_qsl``'s ``payload``) makes of it; ``None`` for any other body (bolt parses it).

    ``parse_qsl`` turns ``+`` into a space, then decodes each ``%XX`` escape in a Python loop (about 500 escapes in
    a tap's body). Here the escapes become ``\\xXX`` ones that ``codecs.escape_decode`` decodes in C (backslashes
    of the body doubled first, so they stay themselves); a ``%`` that starts no escape makes it fail, and bolt
    then keeps urllib's rule for it. Only an ASCII body with the one field is taken (what Slack sends), so the
    bytes decode as one piece, as urllib does."""
    if (
        not body.startswith(_FORM_PAYLOAD)
        or b"&" in body
        or len(body) == len(_FORM_PAYLOAD)
        or not body.isascii()
        or headers.get("content-type", "").split(";")[0] == "application/json"
    ):
        return None
    escaped = body[len(_FORM_PAYLOAD) :].replace(b"+", b" ").replace(b"\\", b"\\\\").replace(b"%", b"\\x")
    try:
        decoded = codecs.escape_decode(escaped)[0]
        parsed = json.loads(decoded.decode("utf-8", "replace"))
    except ValueError:  # a bare '%', or not JSON: bolt's parsing decides (and says what is wrong)
        return None
    return parsed if isinstance(parsed, dict) else None


def guarded_verification(app: Any) -> None:
    """Let bolt's signature check pass the requests :class:`SlackGuard` checked already (their context carries
    :data:`GUARDED`); every other request (one dispatched to the app some other way) is still checked by bolt."""
    from slack_bolt.middleware.request_verification.async_request_verification import AsyncRequestVerification

    middleware: list[Any] = app._async_middleware_list  # bolt keeps them in this list and has no public accessor
    for i, found in enumerate(middleware):
        if type(found) is AsyncRequestVerification:
            middleware[i] = _verification_class()(found._signing_secret, base_logger=found.logger)


@functools.cache
def _verification_class() -> type:
    from slack_bolt.middleware.request_verification.async_request_verification import AsyncRequestVerification

    class Verification(AsyncRequestVerification):
        """bolt's ``AsyncRequestVerification`` that passes a request the guard checked."""

        async def async_process(self, *, req: Any, resp: Any, next: Any) -> Any:
            if req.context.get(GUARDED) is _GUARDED_BY:
                return await next()
            return await super().async_process(req=req, resp=resp, next=next)

    return Verification


def lower_headers(headers: Mapping[str, Any]) -> dict[str, str]:
    """Header names in lower case (the first value of each)."""
    found: dict[str, str] = {}
    for name, value in headers.items():
        found.setdefault(str(name).lower(), str(value))
    return found
