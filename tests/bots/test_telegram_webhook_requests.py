"""The Telegram webhook checks who it talks to and what it is given: real HTTP requests (aiohttp) against the
bot's webhook server. A wrong or missing secret token is 403; with the right token, a body that is not JSON or not
an Update is 400; none of them logs an ERROR or a traceback. ``run_webhook`` (the runnable assistant in its own
process) serves the same server and stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from pathlib import Path

import aiohttp
import pytest
import tornado  # noqa: F401  # python-telegram-bot[webhooks] (the telegram extra): the webhook server

from milpa_chat.testing import BotApiServer

from .telegram_support import ALICE, WAIT, free_port, running_bot

SECRET = "right-secret_1"
ROOT = Path(__file__).resolve().parents[2]
JSON = {"Content-Type": "application/json"}


def no_errors(caplog: pytest.LogCaptureFixture) -> None:
    loud = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not loud, [f"{r.levelname} {r.name}: {r.getMessage()}" for r in loud]


async def test_forged_and_malformed_deliveries_are_refused_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with running_bot(webhook=True, webhook_secret=SECRET) as h, aiohttp.ClientSession() as http:
        assert h.server.webhook is not None
        url = h.server.webhook.url

        async def post(body: bytes, headers: dict[str, str]) -> tuple[int, str]:
            async with http.post(url, data=body, headers=headers) as resp:
                return resp.status, await resp.text()

        update = b'{"update_id": 1, "message": {"message_id": 1, "date": 1, "chat": {"id": 1, "type": "private"}}}'
        assert (await post(update, JSON))[0] == 403  # no secret
        assert (await post(update, {**JSON, "X-Telegram-Bot-Api-Secret-Token": "wrong"}))[0] == 403
        right = {**JSON, "X-Telegram-Bot-Api-Secret-Token": SECRET}
        malformed = {
            b"{not json": "not JSON",
            b"\xff\xfe": "not JSON",
            b"[1, 2]": "not a Telegram Update",
            b'{"ok": true}': "not a Telegram Update",
            b'{"update_id": "7"}': "not a Telegram Update",
            b'{"update_id": 7, "message": "hello"}': "not a Telegram Update",
            b'{"update_id": 7, "callback_query": {"id": "1"}}': "not a Telegram Update",
        }
        for body, reason in malformed.items():
            status, text = await post(body, right)
            assert status == 400 and reason in text, (body, status, text)
        status, text = await post(update, {"X-Telegram-Bot-Api-Secret-Token": SECRET, "Content-Type": "text/plain"})
        assert status == 415 and "application/json" in text

        reply = await h.say(ALICE, "/list_notes")  # Telegram's own deliveries still go through
        assert "Quarterly report" in (reply.text or "")
        refusals = [r for r in caplog.records if "refused a Telegram webhook delivery" in r.getMessage()]
        assert len(refusals) == 10 and all(r.levelno == logging.INFO for r in refusals)
        no_errors(caplog)


async def test_run_webhook_serves_the_checked_server_and_stops_on_sigterm(tmp_path: Path) -> None:
    port = free_port()
    async with BotApiServer() as server:
        env = {
            **os.environ,
            "TELEGRAM_TOKEN": server.token,
            "TELEGRAM_BASE_URL": server.base_url,
            "MILPA_STORE": str(tmp_path / "bot.db"),
            "TELEGRAM_WEBHOOK_URL": f"http://127.0.0.1:{port}/telegram",
            "TELEGRAM_WEBHOOK_SECRET": SECRET,
            "TELEGRAM_WEBHOOK_PORT": str(port),
            "TELEGRAM_WEBHOOK_LISTEN": "127.0.0.1",
        }
        log = tmp_path / "bot.log"
        with log.open("wb") as out:
            process = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "bots.telegram_assistant", cwd=ROOT, env=env, stdout=out, stderr=out
            )
        try:
            await server.wait_until(lambda: server.webhook is not None, 30, what="setWebhook")
            sent = await server.send_message(ALICE.id, ALICE, "/help")
            await server.wait_for_message(ALICE.id, since=sent, timeout=WAIT)
            async with aiohttp.ClientSession() as http:
                headers = {**JSON, "X-Telegram-Bot-Api-Secret-Token": SECRET}
                async with http.post(f"http://127.0.0.1:{port}/telegram", data=b"{not json", headers=headers) as r:
                    assert r.status == 400
            process.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(process.wait(), WAIT) == 0, log.read_text()[-3000:]
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        text = log.read_text()
        assert "Traceback" not in text and "ERROR" not in text, text[-3000:]
