"""A client that hangs up halfway through its request (a bot process killed mid-call) made no call: the local
servers record nothing for it, log no error, and go on answering the next client."""

from __future__ import annotations

import asyncio
import logging

import pytest
from slack_sdk.web.async_client import AsyncWebClient
from telegram import Bot

from milpa_chat.testing import BotApiServer
from milpa_chat.testing.slack import SlackApiServer

TOKEN = "123456:TEST-token"


async def hang_up_halfway(port: int, path: str) -> None:
    """POST a form whose body is announced at 1,000 bytes, send 40 of them, and close the connection."""
    _reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = b"chat_id=42&text=" + b"x" * 24
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        f"Content-Length: 1000\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    await asyncio.sleep(0.1)  # the server is reading the body now
    writer.transport.abort()  # as a SIGKILLed process's socket goes: no more bytes, the connection closed
    await asyncio.sleep(0.2)  # the server notices


async def test_the_bot_api_server_records_no_call_and_logs_nothing_for_a_client_that_hung_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with BotApiServer(token=TOKEN) as server:
        await hang_up_halfway(server.port, f"/bot{TOKEN}/sendMessage")
        assert [c.method for c in server.calls] == []
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert errors == [], [r.getMessage() for r in errors]
        async with Bot(TOKEN, base_url=server.base_url) as bot:  # the next client is answered as ever
            me = await bot.get_me()
        assert me.is_bot
        assert {c.method for c in server.calls} == {"getMe"}  # (initialize asks too): the half-sent one is not there


async def test_the_slack_api_server_records_no_call_and_logs_nothing_for_a_client_that_hung_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with SlackApiServer(bot_token="xoxb-test") as api:
        await hang_up_halfway(api.port, "/api/chat.postMessage")
        assert api.calls() == []
        errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
        assert errors == [], [r.getMessage() for r in errors]
        client = AsyncWebClient(token="xoxb-test", base_url=api.base_url)
        answer = await client.auth_test()
        assert answer["ok"] is True
        assert [c.method for c in api.calls()] == ["auth.test"]
