"""Signing requests the way Slack does (v0 HMAC-SHA256 over ``v0:{timestamp}:{body}``), with slack_sdk's own
``SignatureVerifier`` — the code bolt checks them with."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from slack_sdk.signature import SignatureVerifier

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"
STALE_AGE = 6 * 60  # Slack's verifiers refuse timestamps more than 5 minutes away from now


@dataclass(frozen=True)
class SlackRequest:
    """An unsigned request body as Slack would send it. ``kind``: command, event, interactive, url_verification."""

    kind: str
    body: str
    content_type: str
    payload: dict[str, Any] = field(compare=False)

    @classmethod
    def form(cls, kind: str, fields: dict[str, Any]) -> SlackRequest:
        """A form-encoded body (slash commands)."""
        return cls(kind, urlencode(fields), FORM, dict(fields))

    @classmethod
    def json(cls, kind: str, data: dict[str, Any]) -> SlackRequest:
        """A JSON body (Events API, url_verification)."""
        return cls(kind, json.dumps(data, separators=(",", ":")), JSON, data)

    @classmethod
    def interactive(cls, payload: dict[str, Any]) -> SlackRequest:
        """A form body with one field, ``payload``, holding the JSON (block_actions, view_submission, ...)."""
        body = urlencode({"payload": json.dumps(payload, separators=(",", ":"))})
        return cls("interactive", body, FORM, payload)


@dataclass(frozen=True)
class SlackSignedRequest:
    """A request with Slack's signature headers; ``headers`` for HTTP, ``bolt_kwargs()`` for ``BoltRequest``."""

    request: SlackRequest
    timestamp: int
    signature: str
    retry_num: int | None = None
    retry_reason: str | None = None

    @property
    def body(self) -> str:
        return self.request.body

    @property
    def headers(self) -> dict[str, str]:
        headers = {
            "Content-Type": self.request.content_type,
            "X-Slack-Request-Timestamp": str(self.timestamp),
            "X-Slack-Signature": self.signature,
        }
        if self.retry_num is not None:
            headers["X-Slack-Retry-Num"] = str(self.retry_num)
            headers["X-Slack-Retry-Reason"] = self.retry_reason or "http_timeout"
        return headers

    def bolt_kwargs(self) -> dict[str, Any]:
        """``BoltRequest(**signed.bolt_kwargs())`` / ``AsyncBoltRequest(**...)`` for ``app.dispatch`` in-process."""
        return {"body": self.body, "headers": {k.lower(): [v] for k, v in self.headers.items()}}


class SlackRequestSigner:
    """Signs bodies with an app's signing secret, as Slack signs the requests it sends to the app."""

    def __init__(self, signing_secret: str) -> None:
        if not signing_secret:
            raise ValueError("signing_secret must not be empty")
        self._verifier = SignatureVerifier(signing_secret)
        self._forger = SignatureVerifier(signing_secret + "-not-the-secret")

    def signature(self, body: str, timestamp: int | str) -> str:
        """``"v0=" + hex(HMAC-SHA256(secret, f"v0:{timestamp}:{body}"))``."""
        return _sign(self._verifier, body, timestamp)

    def is_valid(self, body: str, headers: dict[str, str]) -> bool:
        """Whether ``headers`` carry a current signature of ``body`` by this secret (as bolt checks it)."""
        return self._verifier.is_valid_request(body, headers)

    def sign(
        self,
        request: SlackRequest | str,
        *,
        timestamp: int | None = None,
        stale: bool = False,
        bad_signature: bool = False,
        retry_num: int | None = None,
        retry_reason: str = "http_timeout",
    ) -> SlackSignedRequest:
        """Sign ``request`` (a raw string is taken as a form body).

        ``stale`` dates it 6 minutes back and ``bad_signature`` signs it with a wrong secret, both of which a
        correct app must refuse; ``retry_num`` adds ``X-Slack-Retry-Num``/``X-Slack-Retry-Reason`` as Slack does
        when it redelivers an event.
        """
        if isinstance(request, str):
            request = SlackRequest("raw", request, FORM, {})
        ts = int(time.time()) if timestamp is None else timestamp
        if stale:
            ts -= STALE_AGE
        verifier = self._forger if bad_signature else self._verifier
        return SlackSignedRequest(
            request=request,
            timestamp=ts,
            signature=_sign(verifier, request.body, ts),
            retry_num=retry_num,
            retry_reason=retry_reason if retry_num is not None else None,
        )


def _sign(verifier: SignatureVerifier, body: str, timestamp: int | str) -> str:
    signature = verifier.generate_signature(timestamp=str(timestamp), body=body)
    assert signature is not None  # None only for a verifier without a secret, which the signer refuses
    return signature
