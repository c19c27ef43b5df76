"""Starting the runnable bots as users do: one-line errors with exit status 2, a line saying where they listen,
draining on SIGTERM, and imports that load no SDK until a bot is made."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bots.telegram_assistant import EXAMPLE_IDENTITIES
from milpa_chat.bots.slack import SlackBot
from milpa_chat.testing import BotApiServer, ManualClock, TelegramUser
from milpa_chat.testing.slack import SlackApiServer, SlackEvents

from .conftest_slack import ALICE, APPROVERS, SECRET, TEAM, TOKEN, WORK, Tools, memory_assistant
from .test_slack_assistant import run_env
from .test_slack_modes import APP_TOKEN, SocketModeEndpoint

REPO = Path(__file__).resolve().parents[2]
EVE_ID = 5
USER = TelegramUser(EVE_ID, "Eve", "eve")  # no identity of her own: the example's default scopes (notes:read)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def run_module(module: str, env: dict[str, str], timeout: float = 60.0) -> tuple[int, str]:  # noqa: ASYNC109
    """Run ``python -m module`` without blocking the loop the local servers answer on; (exit status, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", module, env=env, cwd=REPO, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    _, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return proc.returncode, err.decode()


def telegram_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TELEGRAM_", "MILPA_"))}
    return {
        **env,
        "PYTHONPATH": str(REPO),
        "MILPA_STORE": str(tmp_path / "a.db"),
        "MILPA_IDENTITIES": str(EXAMPLE_IDENTITIES),
        **extra,
    }


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


async def test_telegram_a_rejected_token_and_an_unreachable_api_are_one_line_and_status_2(tmp_path: Path) -> None:
    async with BotApiServer() as server:
        code, err = await run_module(
            "bots.telegram_assistant",
            telegram_env(tmp_path, TELEGRAM_TOKEN="123456:not-the-token", TELEGRAM_BASE_URL=server.base_url),
        )
    assert code == 2
    assert one_error_line(err).startswith("error: Telegram rejected the bot token (TELEGRAM_TOKEN)")
    code, err = await run_module(
        "bots.telegram_assistant",
        telegram_env(tmp_path, TELEGRAM_TOKEN="123456:abc", TELEGRAM_BASE_URL=f"http://127.0.0.1:{closed_port()}/bot"),
    )
    assert code == 2
    line = one_error_line(err)
    assert line.startswith("error: cannot reach the Telegram Bot API at http://127.0.0.1:") and line.count(":abc") == 0
    assert re.search(r"/bot<token> \(", line), line  # never the token itself


async def test_slack_a_rejected_token_and_an_unreachable_api_are_one_line_and_status_2(tmp_path: Path) -> None:
    async with SlackApiServer(TOKEN, team_id=TEAM) as api:
        code, err = await run_module(
            "bots.slack_assistant",
            run_env(
                tmp_path,
                SLACK_BOT_TOKEN="xoxb-revoked",
                SLACK_SIGNING_SECRET=SECRET,
                SLACK_BASE_URL=api.base_url,
                PORT="0",
            ),
        )
    assert code == 2
    assert one_error_line(err).startswith("error: Slack rejected the bot token (SLACK_BOT_TOKEN: invalid_auth)")
    code, err = await run_module(
        "bots.slack_assistant",
        run_env(
            tmp_path,
            SLACK_BOT_TOKEN=TOKEN,
            SLACK_SIGNING_SECRET=SECRET,
            PORT="0",
            SLACK_BASE_URL=f"http://127.0.0.1:{closed_port()}/api/",
        ),
    )
    assert code == 2
    assert one_error_line(err).startswith("error: cannot reach the Slack Web API at http://127.0.0.1:")


@pytest.mark.parametrize(
    ("module", "setting", "expected"),
    [
        (
            "bots.slack_assistant",
            {"PORT": "abc"},
            "error: PORT='abc' is not a whole number: PORT must be a whole number",
        ),
        (
            "bots.telegram_assistant",
            {"TELEGRAM_WEBHOOK_PORT": "84.5"},
            "error: TELEGRAM_WEBHOOK_PORT='84.5' is not a whole number: TELEGRAM_WEBHOOK_PORT must be a whole number",
        ),
        (
            "bots.slack_assistant",
            {"MILPA_APPROVAL_LEASE": "long"},
            "error: MILPA_APPROVAL_LEASE='long' is not a float: MILPA_APPROVAL_LEASE must be a number of seconds",
        ),
    ],
)
def test_a_bad_setting_names_the_variable(tmp_path: Path, module: str, setting: dict[str, str], expected: str) -> None:
    env = {
        **run_env(tmp_path, SLACK_BOT_TOKEN=TOKEN, SLACK_SIGNING_SECRET=SECRET),
        **telegram_env(tmp_path, TELEGRAM_TOKEN="1:x"),
        **setting,
    }
    done = subprocess.run(
        [sys.executable, "-m", module], env=env, cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2
    assert one_error_line(done.stderr).startswith(expected)


async def test_sigterm_drains_the_slack_http_mode_work_in_flight_and_exits_0(tmp_path: Path) -> None:
    async with SlackApiServer(TOKEN, team_id=TEAM, channels={WORK: "work", APPROVERS: "approvers"}) as api:
        env = run_env(
            tmp_path,
            SLACK_BOT_TOKEN=TOKEN,
            SLACK_SIGNING_SECRET=SECRET,
            SLACK_BASE_URL=api.base_url,
            PORT="0",
            HOST="127.0.0.1",
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bots.slack_assistant",
            env=env,
            cwd=REPO,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stderr is not None and proc.stdout is not None
        lines: list[str] = []
        while not (found := re.search(r"listening on (http://127\.0\.0\.1:(\d+)/slack/events)", "".join(lines))):
            line = (await asyncio.wait_for(proc.stderr.readline(), 60)).decode()
            assert line, "".join(lines)
            lines.append(line)
        assert int(found.group(2)) > 0  # PORT=0: the port it picked is said
        async with SlackEvents(found.group(1), SECRET, api=api) as slack:
            await slack.command("/milpa", "slow_report", user=ALICE, channel=WORK)  # acked; the work goes on
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 60)
        err = "".join(lines) + (await proc.stderr.read()).decode()
        assert code == 0, err
        assert "Traceback" not in err and "Unclosed" not in err, err
        assert [line for line in err.splitlines() if " WARNING " in line] == [], err  # bolt's token warning too
        assert [m.text for m in api.messages(WORK) if m.bot_id], "the report in flight was finished and posted"


async def test_serve_returns_the_bound_port_and_stop_drains(caplog: pytest.LogCaptureFixture) -> None:
    async with SlackApiServer(TOKEN, team_id=TEAM, channels={WORK: "work"}) as api:
        tools = Tools(slow_seconds=0.5)
        bot = SlackBot(memory_assistant(tools, ManualClock()), TOKEN, SECRET, api.base_url)
        with caplog.at_level(logging.INFO, "milpa_chat.bots.slack"):
            port = await bot.serve(port=0, host="127.0.0.1")
        assert port > 0 and bot.listening == f"http://127.0.0.1:{port}/slack/events"
        assert f"Slack app listening on http://127.0.0.1:{port}/slack/events" in caplog.messages
        async with SlackEvents(bot.listening, SECRET, api=api) as slack:
            await slack.command("/milpa", "report", user=ALICE, channel=WORK)
            await bot.stop()  # stops accepting, then finishes the report it acknowledged
        assert tools.slow_runs == 1 and api.messages(WORK)


async def test_socket_mode_stops_without_an_unclosed_session(caplog: pytest.LogCaptureFixture) -> None:
    async with (
        SlackApiServer(TOKEN, team_id=TEAM, channels={WORK: "work"}) as api,
        SocketModeEndpoint(APP_TOKEN) as endpoint,
    ):
        bot = SlackBot(memory_assistant(Tools(), ManualClock()), TOKEN, base_url=api.base_url, app_token=APP_TOKEN)
        with caplog.at_level(logging.INFO):
            await bot.connect_socket_mode(AsyncWebClient(base_url=endpoint.base_url))
            assert bot.listening == "Socket Mode"
            await bot.stop()
            gc.collect()
            await asyncio.sleep(0.05)
            gc.collect()
    assert not [m for m in caplog.messages if "Unclosed" in m], caplog.messages


def test_importing_the_adapters_and_the_widgets_loads_no_sdk() -> None:
    code = (
        "import sys, milpa_chat.bots.telegram, milpa_chat.bots.slack, milpa_chat.jupyter\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'telegram', 'slack_bolt', 'ipywidgets'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


async def test_sigterm_drains_the_telegram_webhook_mode_and_exits_0(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    async with BotApiServer() as server:
        env = telegram_env(
            tmp_path,
            TELEGRAM_TOKEN=server.token,
            TELEGRAM_BASE_URL=server.base_url,
            TELEGRAM_WEBHOOK_URL=f"http://127.0.0.1:{port}/telegram",
            TELEGRAM_WEBHOOK_PORT=str(port),
            TELEGRAM_WEBHOOK_LISTEN="127.0.0.1",
            MILPA_SWEEP_INTERVAL="60",
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bots.telegram_assistant",
            env=env,
            cwd=REPO,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        said = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        assert said.startswith(f"Telegram webhook listening on http://127.0.0.1:{port}/telegram"), said
        await server.wait_until(lambda: server.webhook is not None, 60, what="setWebhook")
        asked = await server.send_message(EVE_ID, USER, "/slow_report")  # takes a few seconds
        while asked.deliveries[-1].status != 200:  # retried as Telegram does until the server is up
            await asyncio.sleep(0.1)
            await server.deliver_pending()
        await server.wait_until(lambda: server.chat_actions(EVE_ID), 30, what="typing: the report is running")
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 60)
        err = (await proc.stderr.read()).decode()
        assert code == 0 and "Traceback" not in err, err
        texts = [m.text or "" for m in server.messages(EVE_ID)]
        assert any("report" in t.lower() for t in texts), texts  # finished and posted before exiting


async def test_the_telegram_polling_bot_says_where_it_polls_without_the_token_and_stops_on_sigterm(
    tmp_path: Path,
) -> None:
    async with BotApiServer() as server:
        env = telegram_env(
            tmp_path, TELEGRAM_TOKEN=server.token, TELEGRAM_BASE_URL=server.base_url, SLACK_BOT_TOKEN="xoxb-unrelated"
        )
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bots.telegram_assistant",
            env=env,
            cwd=REPO,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        said = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        assert said.startswith(f"Telegram bot @milpa_test_bot polling {server.base_url}<token> for updates"), said
        assert server.token not in said
        asked = await server.send_message(EVE_ID, USER, "/help")
        await server.wait_for_message(EVE_ID, since=asked, timeout=30)
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 60)
        err = (await proc.stderr.read()).decode()
    assert code == 0 and "Traceback" not in err, err
    warnings = [line for line in err.splitlines() if " WARNING " in line and "identities.example.toml" not in line]
    assert warnings == [] and server.token not in err, err


SERVE_BLOCKING = """
import sys
from bots.tools import ExampleTools
from milpa_chat import ToolRegistry
from milpa_chat.bots.slack import SlackBot
from milpa_chat.chat import Assistant, Identities
from milpa_chat.store import MemoryStore

store = MemoryStore()
registry = ToolRegistry(store=store)
registry.scan(ExampleTools(store, slow_seconds=2))
assistant = Assistant(registry, Identities(default_scopes=["notes:read"]))
SlackBot(assistant, sys.argv[1], "secret", sys.argv[2]).start(port=0, host="127.0.0.1")
print("returned", flush=True)
"""


async def test_slack_start_prints_where_it_listens_and_drains_on_sigterm() -> None:
    async with SlackApiServer(TOKEN, team_id=TEAM, channels={WORK: "work"}) as api:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            SERVE_BLOCKING,
            TOKEN,
            api.base_url,
            env=env,
            cwd=REPO,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        said = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        found = re.match(r"Slack app listening on (http://127\.0\.0\.1:\d+/slack/events) \(Ctrl-C to stop\)", said)
        assert found, said
        async with SlackEvents(found.group(1), "secret", api=api) as slack:
            await slack.command("/milpa", "slow_report", user=ALICE, channel=WORK)
            proc.send_signal(signal.SIGTERM)
            code = await asyncio.wait_for(proc.wait(), 60)
        rest = (await proc.stdout.read()).decode()
        err = (await proc.stderr.read()).decode()
    assert code == 0 and rest == "returned\n" and "Traceback" not in err, err
    assert [m.text for m in api.messages(WORK) if m.bot_id], "the report in flight was posted before it returned"


SOCKET_BLOCKING = """
import sys
from slack_sdk.web.async_client import AsyncWebClient
from milpa_chat import ToolRegistry
from milpa_chat.bots.slack import SlackBot
from milpa_chat.chat import Assistant
from milpa_chat.store import MemoryStore

bot = SlackBot(Assistant(ToolRegistry(store=MemoryStore())), sys.argv[1], base_url=sys.argv[2], app_token=sys.argv[3])
bot.start_socket_mode(AsyncWebClient(base_url=sys.argv[4]))
print("returned", flush=True)
"""


async def test_socket_mode_stops_cleanly_on_sigterm() -> None:
    async with SlackApiServer(TOKEN, team_id=TEAM) as api, SocketModeEndpoint(APP_TOKEN) as endpoint:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            SOCKET_BLOCKING,
            TOKEN,
            api.base_url,
            APP_TOKEN,
            endpoint.base_url,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            cwd=REPO,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None and proc.stderr is not None
        said = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode()
        assert said == "Slack app connected over Socket Mode (Ctrl-C to stop)\n", said
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 60)
        rest = (await proc.stdout.read()).decode()
        err = (await proc.stderr.read()).decode()
    assert code == 0 and rest == "returned\n", err
    assert "Unclosed" not in err and "Traceback" not in err, err


def test_one_default_host_for_every_webhook_and_http_mode() -> None:
    import inspect

    from milpa_chat.bots.telegram import DEFAULT_LISTEN, TelegramBot

    def default(method: object, name: str) -> object:
        return inspect.signature(method).parameters[name].default  # type: ignore[arg-type]

    assert {
        default(TelegramBot.start_webhook, "listen"),
        default(TelegramBot.run_webhook, "listen"),
        default(SlackBot.serve, "host"),
        default(SlackBot.start, "host"),
    } == {DEFAULT_LISTEN}
