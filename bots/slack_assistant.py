"""A runnable Slack assistant: notes (list, search, delete) and payments a manager must approve.

::

    SLACK_BOT_TOKEN=xoxb-... SLACK_SIGNING_SECRET=... python -m bots.slack_assistant     # HTTP on :3000
    SLACK_BOT_TOKEN=xoxb-... SLACK_APP_TOKEN=xapp-... python -m bots.slack_assistant     # Socket Mode

In the app's settings: a slash command ``/milpa`` and Interactivity pointing at ``https://<host>/slack/events``
(HTTP mode), event subscriptions ``app_mention`` and ``message.im``, and the bot scopes ``commands``,
``chat:write``, ``app_mentions:read``, ``im:history`` (``files:write`` to attach long results).

Configuration, all from the environment:

``SLACK_BOT_TOKEN``        the Bot User OAuth Token, ``xoxb-…`` (required)
``SLACK_SIGNING_SECRET``   verifies Slack's HTTP requests (required for HTTP mode)
``SLACK_APP_TOKEN``        an app-level token ``xapp-…``: run in Socket Mode instead of HTTP (optional)
``MILPA_STORE``            where approvals, notes and payments live: a SQLite file (default
                           ``milpa_assistant.db``), ``sqlite:///path.db``, ``postgresql://...``
``MILPA_IDENTITIES``       the identities TOML: who may do what, where approval cards go
                           (default ``bots/slack_identities.example.toml``)
``SLACK_BASE_URL``         another Web API root, e.g. a local test server (optional)
``PORT`` / ``HOST``        where HTTP mode listens (3000 / 0.0.0.0; ``PORT=0`` picks a free port)
``MILPA_SWEEP_INTERVAL``   seconds between sweeps (expiries, lost runs, undelivered cards; 15)
``MILPA_APPROVAL_LEASE``   seconds a run's lease, renewed while it runs (30)
``MILPA_APPROVAL_HANDOFF`` seconds before another worker delivers a change's cards (30)
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bots._config import ConfigError, build_assistant, number
from milpa_chat._ports import check_port
from milpa_chat.chat import Assistant
from milpa_chat.errors import MilpaError

__all__ = ["Config", "ConfigError", "build", "main"]

EXAMPLE_IDENTITIES = Path(__file__).with_name("slack_identities.example.toml")
log = logging.getLogger("bots.slack_assistant")


@dataclass(frozen=True)
class Config:
    bot_token: str
    signing_secret: str | None = None
    app_token: str | None = None
    store: str = "milpa_assistant.db"
    identities: Path = EXAMPLE_IDENTITIES
    base_url: str | None = None
    port: int = 3000
    host: str = "0.0.0.0"
    sweep_interval: float = 15.0
    approval_lease: float = 30.0
    approval_handoff: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Config:
        token = env.get("SLACK_BOT_TOKEN", "").strip()
        if not token:
            raise ConfigError(
                "SLACK_BOT_TOKEN is not set. Install your Slack app, copy the Bot User OAuth Token (xoxb-…) from "
                "'OAuth & Permissions', then run:\n"
                "  SLACK_BOT_TOKEN=xoxb-... SLACK_SIGNING_SECRET=... python -m bots.slack_assistant"
            )
        if not token.startswith("xoxb-"):
            raise ConfigError(f"SLACK_BOT_TOKEN must be a bot token starting with 'xoxb-', got {token[:5]!r}…")
        secret = env.get("SLACK_SIGNING_SECRET", "").strip() or None
        app_token = env.get("SLACK_APP_TOKEN", "").strip() or None
        if secret is None and app_token is None:
            raise ConfigError(
                "SLACK_SIGNING_SECRET is not set. Copy it from your app's 'Basic Information' -> App Credentials "
                "(HTTP mode), or set SLACK_APP_TOKEN=xapp-… to run in Socket Mode."
            )
        return cls(
            bot_token=token,
            signing_secret=secret,
            app_token=app_token,
            store=env.get("MILPA_STORE") or cls.store,
            identities=Path(env.get("MILPA_IDENTITIES") or EXAMPLE_IDENTITIES),
            base_url=env.get("SLACK_BASE_URL") or None,
            port=number(env, "PORT", 3000, int),
            host=env.get("HOST") or "0.0.0.0",
            sweep_interval=number(env, "MILPA_SWEEP_INTERVAL", 15.0, float),
            approval_lease=number(env, "MILPA_APPROVAL_LEASE", 30.0, float),
            approval_handoff=number(env, "MILPA_APPROVAL_HANDOFF", 30.0, float),
        )


def build(config: Config) -> Assistant:
    """The assistant with the example tools, over the configured store and identities."""
    return build_assistant(
        config.store, config.identities, lease=config.approval_lease, handoff=config.approval_handoff
    )[0]


async def run(config: Config) -> None:
    """Serve until SIGINT/SIGTERM, then stop accepting, finish the requests in flight and the work they
    started, and close the store. A rejected token or an unreachable Slack raises ``BotStartupError``."""
    from milpa_chat.bots.slack import SlackBot

    assistant = build(config)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        bot = SlackBot(
            assistant,
            config.bot_token,
            config.signing_secret,
            config.base_url,
            app_token=config.app_token,
            sweep_interval=config.sweep_interval,
        )
        try:
            if config.app_token:
                await bot.connect_socket_mode()
            else:
                await bot.serve(config.port, config.host)
            await stop.wait()
            log.info("Stopping: finishing the requests in flight")
        finally:
            await bot.stop()
    finally:
        await assistant.store.close()


def main(env: Mapping[str, str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        config = Config.from_env(os.environ if env is None else env)
        if not config.identities.is_file():
            raise ConfigError(f"MILPA_IDENTITIES: {config.identities} does not exist; copy {EXAMPLE_IDENTITIES}")
        if not config.app_token:
            check_port(config.host, config.port, option="PORT (or HOST)")
    except (ConfigError, MilpaError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if config.identities == EXAMPLE_IDENTITIES:
        log.warning("Using %s: copy it, put your users' Slack ids in it and set MILPA_IDENTITIES", config.identities)
    log.info("Store: %s", config.store)
    try:
        asyncio.run(run(config))
    except (MilpaError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
