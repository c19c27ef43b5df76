"""A runnable Telegram assistant: notes (list, search, delete) and payments a manager must approve.

::

    TELEGRAM_TOKEN=123456:ABC... python -m bots.telegram_assistant

Configuration, all from the environment:

``TELEGRAM_TOKEN``           the bot token from @BotFather (required)
``MILPA_STORE``              where approvals, notes and payments live: a SQLite file (default
                             ``milpa_assistant.db``), ``sqlite:///path.db``, ``postgresql://...``
``MILPA_IDENTITIES``         the identities TOML: who may do what, where approval cards go
                             (default ``bots/identities.example.toml``)
``TELEGRAM_BASE_URL``        another Bot API server, e.g. a self-hosted one (optional)
``TELEGRAM_WEBHOOK_URL``     serve a webhook at this public URL instead of polling (optional), with
``TELEGRAM_WEBHOOK_SECRET``  its secret token (generated when unset), ``TELEGRAM_WEBHOOK_PORT`` (8443)
                             and ``TELEGRAM_WEBHOOK_LISTEN`` (0.0.0.0)
``MILPA_SWEEP_INTERVAL``     seconds between sweeps (expiries, lost runs, undelivered cards; 15)
``MILPA_APPROVAL_LEASE``     seconds a run's lease, renewed while it runs (30)
``MILPA_APPROVAL_HANDOFF``   seconds before another worker delivers a change's cards (30)
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from bots._config import ConfigError, build_assistant, number
from bots.tools import ExampleTools
from milpa_chat._ports import check_port
from milpa_chat.chat import Assistant
from milpa_chat.errors import MilpaError

__all__ = ["Config", "ConfigError", "build", "main"]

EXAMPLE_IDENTITIES = Path(__file__).with_name("identities.example.toml")
log = logging.getLogger("bots.telegram_assistant")


@dataclass(frozen=True)
class Config:
    token: str
    store: str = "milpa_assistant.db"
    identities: Path = EXAMPLE_IDENTITIES
    base_url: str | None = None
    webhook_url: str | None = None
    webhook_secret: str | None = None
    webhook_port: int = 8443
    webhook_listen: str = "0.0.0.0"
    sweep_interval: float = 15.0
    approval_lease: float = 30.0
    approval_handoff: float = 30.0

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Config:
        token = env.get("TELEGRAM_TOKEN", "").strip()
        if not token:
            raise ConfigError(
                "TELEGRAM_TOKEN is not set. Create a bot with @BotFather, then run:\n"
                "  TELEGRAM_TOKEN=123456:ABC... python -m bots.telegram_assistant"
            )
        if ":" not in token:
            raise ConfigError("TELEGRAM_TOKEN does not look like a bot token ('<bot id>:<secret>' from @BotFather)")
        return cls(
            token=token,
            store=env.get("MILPA_STORE") or cls.store,
            identities=Path(env.get("MILPA_IDENTITIES") or EXAMPLE_IDENTITIES),
            base_url=env.get("TELEGRAM_BASE_URL") or None,
            webhook_url=env.get("TELEGRAM_WEBHOOK_URL") or None,
            webhook_secret=env.get("TELEGRAM_WEBHOOK_SECRET") or None,
            webhook_port=number(env, "TELEGRAM_WEBHOOK_PORT", 8443, int),
            webhook_listen=env.get("TELEGRAM_WEBHOOK_LISTEN") or "0.0.0.0",
            sweep_interval=number(env, "MILPA_SWEEP_INTERVAL", 15.0, float),
            approval_lease=number(env, "MILPA_APPROVAL_LEASE", 30.0, float),
            approval_handoff=number(env, "MILPA_APPROVAL_HANDOFF", 30.0, float),
        )


def build(config: Config) -> tuple[Assistant, ExampleTools]:
    """The assistant with the example tools, over the configured store and identities."""
    return build_assistant(
        config.store, config.identities, lease=config.approval_lease, handoff=config.approval_handoff
    )


def main(env: Mapping[str, str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    try:
        config = Config.from_env(os.environ if env is None else env)
        if config.webhook_url:
            check_port(config.webhook_listen, config.webhook_port, option="TELEGRAM_WEBHOOK_PORT")
        assistant, _ = build(config)
        from milpa_chat.bots.telegram import TelegramBot

        bot = TelegramBot(
            assistant,
            config.token,
            config.base_url,
            webhook_secret=config.webhook_secret,
            sweep_interval=config.sweep_interval,
        )
    except (ConfigError, MilpaError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if config.identities == EXAMPLE_IDENTITIES:
        log.warning("Using %s: copy it, put your users' Telegram ids in it and set MILPA_IDENTITIES", config.identities)
    log.info("Store: %s", config.store)
    try:
        if config.webhook_url:  # SIGTERM: stop accepting deliveries, finish the accepted updates, exit 0
            bot.run_webhook(config.webhook_url, listen=config.webhook_listen, port=config.webhook_port)
        else:
            bot.run_polling()
    except MilpaError as exc:  # BotStartupError: a rejected token, an unreachable Bot API
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
