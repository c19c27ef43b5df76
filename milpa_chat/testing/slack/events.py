"""Sending signed requests to a running Slack app over HTTP, as Slack does."""

from __future__ import annotations

import functools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Concatenate, ParamSpec, Protocol

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from milpa_chat.errors import MilpaError
from milpa_chat.testing.slack.payloads import SlackPayloads
from milpa_chat.testing.slack.server import SlackApiServer
from milpa_chat.testing.slack.signing import SlackRequest, SlackRequestSigner, SlackSignedRequest

P = ParamSpec("P")


class _HasWebApp(Protocol):
    def web_app(self, path: str = ..., port: int = ...) -> web.Application: ...


@asynccontextmanager
async def serve_bolt_app(app: _HasWebApp | web.Application, path: str = "/slack/events") -> AsyncIterator[str]:
    """Serve a bolt ``AsyncApp`` (through its aiohttp adapter) or any aiohttp application on 127.0.0.1 and a
    random port for the duration of the block; yields the URL of ``path`` to give :class:`SlackEvents`."""
    web_app = app if isinstance(app, web.Application) else app.web_app(path=path)
    runner = web.AppRunner(web_app, access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        yield f"http://127.0.0.1:{runner.addresses[0][1]}{path}"
    finally:
        await runner.cleanup()


class SlackAckTimeout(MilpaError, TimeoutError):
    """The app did not answer within Slack's 3 seconds (Slack shows the user an error or retries the event)."""


@dataclass(frozen=True)
class SlackAppResponse:
    """The app's HTTP answer to one delivery, with the signed request that produced it."""

    status: int
    headers: Mapping[str, str]
    text: str
    signed: SlackSignedRequest
    elapsed: float

    @property
    def request(self) -> SlackRequest:
        return self.signed.request

    def json(self) -> Any:
        return json.loads(self.text)


def _sends(
    build: Callable[Concatenate[SlackPayloads, P], SlackRequest],
) -> Callable[Concatenate[SlackEvents, P], Awaitable[SlackAppResponse]]:
    """Turn a :class:`SlackPayloads` builder into a :class:`SlackEvents` method that builds, signs and sends."""

    @functools.wraps(build)
    async def send(self: SlackEvents, /, *args: P.args, **kwargs: P.kwargs) -> SlackAppResponse:
        return await self.send(build(self.payloads, *args, **kwargs))

    return send


class SlackEvents:
    """Delivers slash commands, events and button taps to the app at ``app_url``, correctly signed.

    ``api``: the :class:`SlackApiServer` the app talks to; payloads then carry its ``response_url`` and
    ``trigger_id``. ``ack_timeout``: raise :class:`SlackAckTimeout` when the app takes longer than Slack waits
    (``None`` waits forever). ``commands_url``/``interactivity_url`` override ``app_url`` per kind.
    """

    def __init__(
        self,
        app_url: str,
        signing_secret: str,
        *,
        api: SlackApiServer | None = None,
        team_id: str | None = None,
        team_domain: str = "test-team",
        api_app_id: str = "A0APP",
        ack_timeout: float | None = 3.0,
        commands_url: str | None = None,
        interactivity_url: str | None = None,
    ) -> None:
        self.signer = SlackRequestSigner(signing_secret)
        self.payloads = SlackPayloads(api=api, team_id=team_id, team_domain=team_domain, api_app_id=api_app_id)
        self.ack_timeout = ack_timeout
        self._urls = {
            "event": app_url,
            "url_verification": app_url,
            "raw": app_url,
            "command": commands_url or app_url,
            "interactive": interactivity_url or app_url,
        }
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> SlackEvents:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def send(
        self,
        request: SlackRequest,
        *,
        timestamp: int | None = None,
        stale: bool = False,
        bad_signature: bool = False,
        retry_num: int | None = None,
        retry_reason: str = "http_timeout",
    ) -> SlackAppResponse:
        """Sign ``request`` (see :meth:`SlackRequestSigner.sign` for the options) and POST it to the app."""
        signed = self.signer.sign(
            request,
            timestamp=timestamp,
            stale=stale,
            bad_signature=bad_signature,
            retry_num=retry_num,
            retry_reason=retry_reason,
        )
        return await self.deliver(signed)

    async def deliver(self, signed: SlackSignedRequest) -> SlackAppResponse:
        """POST an already signed request as it is."""
        if self._session is None:
            self._session = aiohttp.ClientSession()
        url = self._urls.get(signed.request.kind, self._urls["event"])
        timeout = aiohttp.ClientTimeout(total=self.ack_timeout)
        started = time.monotonic()
        try:
            async with self._session.post(
                url, data=signed.body.encode(), headers=signed.headers, timeout=timeout
            ) as res:
                text = await res.text()
                return SlackAppResponse(
                    status=res.status,
                    headers=CIMultiDict(res.headers),
                    text=text,
                    signed=signed,
                    elapsed=time.monotonic() - started,
                )
        except TimeoutError as exc:
            raise SlackAckTimeout(
                f"the app did not answer a {signed.request.kind} request within {self.ack_timeout} s"
            ) from exc

    async def retry(
        self, previous: SlackAppResponse | SlackRequest, *, num: int = 1, reason: str = "http_timeout"
    ) -> SlackAppResponse:
        """Redeliver the identical body as Slack's retry number ``num`` (freshly signed, with retry headers)."""
        request = previous.request if isinstance(previous, SlackAppResponse) else previous
        return await self.send(request, retry_num=num, retry_reason=reason)

    command = _sends(SlackPayloads.command)
    event = _sends(SlackPayloads.event)
    app_mention = _sends(SlackPayloads.app_mention)
    direct_message = _sends(SlackPayloads.direct_message)
    assistant_thread_started = _sends(SlackPayloads.assistant_thread_started)
    assistant_thread_context_changed = _sends(SlackPayloads.assistant_thread_context_changed)
    url_verification = _sends(SlackPayloads.url_verification)
    click = _sends(SlackPayloads.click)
    block_action = _sends(SlackPayloads.block_action)
    view_submission = _sends(SlackPayloads.view_submission)
