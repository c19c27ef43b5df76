"""Slack's HTTP endpoint checks who it talks to before it reads anything: real HTTP requests (aiohttp) against
the bot served through its aiohttp app and through its ASGI app (uvicorn). Unsigned, badly signed, stale and
replayed requests are refused with 401, signed bodies that are not a Slack request with 400, never with a
traceback or an ERROR line in the log."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import aiohttp
import pytest
import uvicorn

from milpa_chat.bots.slack import SlackBot
from milpa_chat.testing import ManualClock
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, serve_bolt_app

from .conftest_slack import ALICE, APPROVERS, SECRET, TEAM, TOKEN, WORK, Tools, memory_assistant

FORM = {"Content-Type": "application/x-www-form-urlencoded"}
JSON = {"Content-Type": "application/json"}


def signed(body: bytes, *, at: int | None = None, secret: str = SECRET) -> dict[str, str]:
    """Slack's signature headers for ``body`` (v0, HMAC-SHA256 of ``v0:<timestamp>:<body>``)."""
    timestamp = str(int(time.time()) if at is None else at)
    digest = hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": f"v0={digest}"}


@asynccontextmanager
async def served(kind: str) -> AsyncIterator[tuple[str, SlackBot, SlackApiServer]]:
    async with SlackApiServer(TOKEN, team_id=TEAM, channels=[WORK, APPROVERS]) as api:
        bot = SlackBot(memory_assistant(Tools(), ManualClock()), TOKEN, SECRET, base_url=api.base_url)
        if kind == "aiohttp":
            async with serve_bolt_app(bot.web_app()) as url:
                yield url, bot, api
            return
        server = uvicorn.Server(uvicorn.Config(bot.asgi, host="127.0.0.1", port=0, log_level="warning", lifespan="on"))
        task = asyncio.create_task(server.serve())
        try:
            while not server.started:
                assert not task.done(), "uvicorn did not start"
                await asyncio.sleep(0.02)
            port = server.servers[0].sockets[0].getsockname()[1]
            yield f"http://127.0.0.1:{port}/slack/events", bot, api
        finally:
            server.should_exit = True
            await task


def no_errors(caplog: pytest.LogCaptureFixture) -> None:
    loud = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not loud, [f"{r.levelname} {r.name}: {r.getMessage()}" for r in loud]


@pytest.mark.parametrize("kind", ["aiohttp", "asgi"])
async def test_unsigned_stale_and_replayed_requests_are_refused_before_the_body_is_read(
    kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with served(kind) as (url, bot, api), aiohttp.ClientSession() as http:

        async def post(body: bytes, headers: dict[str, str]) -> int:
            async with http.post(url, data=body, headers=headers) as resp:
                await resp.read()
                return resp.status

        garbage = b"payload=%7Bnot-json"
        assert [await post(garbage, FORM) for _ in range(20)] == [401] * 20  # unsigned
        assert await post(garbage, {**FORM, **signed(garbage, secret="someone-else")}) == 401
        assert await post(garbage, {**FORM, **signed(garbage, at=int(time.time()) - 301)}) == 401  # stale
        assert await post(garbage, {**FORM, "X-Slack-Request-Timestamp": "soon", "X-Slack-Signature": "v0=1"}) == 401
        assert await post(b"\xff\xfe", {**JSON, **signed(b"\xff\xfe", secret="someone-else")}) == 401

        async with SlackEvents(url, SECRET, api=api) as slack:
            first = await slack.app_mention("hello", user=ALICE, channel=WORK)
            assert first.status == 200
            assert (await slack.deliver(first.signed)).status == 401  # the very same signed request: a replay
            retried = await slack.retry(first, num=1)  # Slack's retry is signed again and says so
            assert retried.status == 200
        await bot.drain()
        refusals = [r for r in caplog.records if "refused a Slack request" in r.getMessage()]
        assert len(refusals) == 25 and all(r.levelno == logging.INFO for r in refusals)  # one line each
        assert len(api.ephemeral_messages(ALICE)) == 1  # the mention was answered once
        no_errors(caplog)
        await bot.close()


@pytest.mark.parametrize("kind", ["aiohttp", "asgi"])
async def test_signed_bodies_that_are_not_slack_requests_get_400(kind: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    async with served(kind) as (url, bot, _api), aiohttp.ClientSession() as http:
        bodies = [
            (b"payload=%7Bnot-json", FORM),
            (b"payload=%5B1%2C2%5D", FORM),  # a JSON payload that is not an object
            (b"{not json", JSON),
            (b"[1, 2]", JSON),
            (b"{}", JSON),
            (b"\xff\xfe\x00", JSON),  # not UTF-8
        ]
        for body, headers in bodies:
            async with http.post(url, data=body, headers={**headers, **signed(body)}) as resp:
                text = await resp.text()
                assert resp.status == 400 and "not" in text, (body, resp.status, text)
        no_errors(caplog)
        await bot.close()


async def test_a_signature_that_is_not_ascii_is_refused_like_any_wrong_signature(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The signature is compared as bytes: a header with other characters is a wrong signature (401), not an error."""
    caplog.set_level(logging.DEBUG)
    async with served("aiohttp") as (url, bot, _api), aiohttp.ClientSession() as http:
        body = b'{"type": "url_verification", "challenge": "c1"}'
        headers = {**JSON, **signed(body)}
        headers["X-Slack-Signature"] = headers["X-Slack-Signature"][:-1] + "\u00e9"
        async with http.post(url, data=body, headers=headers) as resp:
            assert resp.status == 401 and "signature does not match" in await resp.text()
        async with http.post(url, data=body, headers={**JSON, **signed(body)}) as resp:
            assert resp.status == 200 and "c1" in await resp.text()  # the same body, rightly signed, is served
        no_errors(caplog)
        await bot.close()
