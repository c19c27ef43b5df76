"""A fleet worker: one process of several behind a load balancer, all on one PostgreSQL database.

::

    python -m milpa_chat.fleet migrate             # create or upgrade the tables, then exit
    python -m milpa_chat.fleet telegram            # serve Telegram's webhook on MILPA_LISTEN:MILPA_PORT
    python -m milpa_chat.fleet slack               # serve Slack's HTTP requests on MILPA_LISTEN:MILPA_PORT
    python -m milpa_chat.fleet haproxy-config 8080 127.0.0.1:9001,127.0.0.1:9002 127.0.0.1:9101

Every worker is one :class:`~milpa_chat.chat.Assistant` with both surfaces attached when both are
configured, so whichever worker is alive can deliver any card, edit or result; it serves the inbound
HTTP of the platform it was started for. Opening the store creates or upgrades its tables (under
an advisory lock, so workers starting together are safe). The approval sweeper runs in every
worker: each change is one compare-and-set, so two sweepers never both act on one approval. On
SIGTERM (or SIGINT) a worker stops accepting requests, finishes the ones it accepted and the work
they started, stops its sweeper and closes the store, then exits 0.

Configuration, all from the environment (see ``docs/deploy.md``):

``MILPA_STORE``               ``postgresql://user@host:5432/db`` (required; every worker the same)
``MILPA_PG_SCHEMA``           the schema of the tables (``public``)
``MILPA_PG_POOL``             connections per worker (10); ``MILPA_PG_WAIT`` seconds a call waits for one (5)
``MILPA_TOOLS``               ``module:factory``; ``factory(store)`` returns an object whose ``@tool`` methods
                              are registered (``milpa_chat.examples:ExampleTools``)
``MILPA_IDENTITIES``          the identities TOML (required)
``MILPA_LISTEN`` / ``MILPA_PORT``  where this worker listens (127.0.0.1 / 8081)
``MILPA_AUDIT_TRAIL``         ``1`` (default) keeps the hash-chained audit trail in the store, ``0`` does not
``MILPA_AUDIT_LANE``          the worker's own chain of the trail (``worker``, default: this process; a name;
                              ``""``: the main chain, shared by every worker)
``MILPA_AUDIT_KEY_FILE``      the Ed25519 key the trail signs checkpoints with (optional; see ``docs/audit.md``)
``MILPA_MAX_PENDING``         pending requests one requester may have open at once (100; ``0``: no cap)
``MILPA_SWEEP_INTERVAL``, ``MILPA_APPROVAL_LEASE``, ``MILPA_APPROVAL_HANDOFF``  as for ``bots/`` (15, 30, 30)
``TELEGRAM_TOKEN``, ``TELEGRAM_BASE_URL``, ``TELEGRAM_WEBHOOK_URL`` (the balancer's public URL),
``TELEGRAM_WEBHOOK_SECRET`` (required: every worker checks the same one)
``SLACK_BOT_TOKEN``, ``SLACK_SIGNING_SECRET``, ``SLACK_BASE_URL``
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from milpa_chat.errors import MilpaError

if TYPE_CHECKING:
    from milpa_chat.bots.slack import SlackBot
    from milpa_chat.bots.telegram import TelegramBot
    from milpa_chat.chat import Assistant
    from milpa_chat.store.postgres import PostgresStore

__all__ = ["FleetConfig", "FleetConfigError", "build", "haproxy_config", "main", "migrate", "serve"]

log = logging.getLogger("milpa_chat.fleet")

PLATFORMS = ("telegram", "slack")
TELEGRAM_PATH = "telegram"
SLACK_PATH = "/slack/events"


#: The balancer's configuration; :func:`haproxy_config` fills in the address and the workers.
HAPROXY_TEMPLATE = """\
# HAProxy in front of a milpa-chat fleet: Telegram webhook workers and Slack HTTP workers.
# Made by: python -m milpa_chat.fleet haproxy-config PORT TELEGRAM_WORKERS SLACK_WORKERS
global
    maxconn 2000

defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 10s
    timeout http-request 10s
    # A request whose worker is gone (refused, reset, no answer) goes to another worker: the workers
    # recognise a repeated Telegram update or Slack request and act on it once.
    option http-buffer-request
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response response-timeout

frontend milpa
    bind @BIND@
    use_backend telegram if { path_beg /telegram }
    use_backend slack if { path_beg /slack/ }

backend telegram
    balance roundrobin
@TELEGRAM_SERVERS@

backend slack
    balance roundrobin
@SLACK_SERVERS@
"""


class FleetConfigError(MilpaError, ValueError):
    """The environment does not describe a fleet worker; the message says what to set."""


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        return float(raw)
    except ValueError:
        raise FleetConfigError(f"{name}={raw!r} is not a number") from None


@dataclass(frozen=True)
class FleetConfig:
    """What a worker needs; :meth:`from_env` reads it from the variables listed in the module's docs."""

    store: str
    identities: Path
    tools: str = "milpa_chat.examples:ExampleTools"
    schema: str = "public"
    pool: int = 10
    wait: float = 5.0
    listen: str = "127.0.0.1"
    port: int = 8081
    audit_trail: bool = True
    audit_lane: str = "worker"
    max_pending: int | None = 100
    sweep_interval: float = 15.0
    lease: float = 30.0
    handoff: float = 30.0
    telegram: dict[str, str] = field(default_factory=dict)
    slack: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> FleetConfig:
        store = env.get("MILPA_STORE", "").strip()
        if not store.startswith(("postgresql://", "postgres://")):
            got = "it is not set" if not store else f"got {store.split('://')[0]}://…"
            raise FleetConfigError(
                "MILPA_STORE must be the fleet's PostgreSQL database, e.g. postgresql://milpa@db:5432/milpa "
                f"({got}); every worker of a fleet shares it, so SQLite and memory stores cannot be used"
            )
        identities = env.get("MILPA_IDENTITIES", "").strip()
        if not identities or not Path(identities).is_file():
            raise FleetConfigError(f"MILPA_IDENTITIES must name the identities TOML file (got {identities!r})")
        keys = {
            "telegram": ("TELEGRAM_TOKEN", "TELEGRAM_BASE_URL", "TELEGRAM_WEBHOOK_URL", "TELEGRAM_WEBHOOK_SECRET"),
            "slack": ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_BASE_URL"),
        }
        platforms = {p: {k: env[k].strip() for k in names if env.get(k, "").strip()} for p, names in keys.items()}
        return cls(
            store=store,
            identities=Path(identities),
            tools=env.get("MILPA_TOOLS") or cls.tools,
            schema=env.get("MILPA_PG_SCHEMA") or "public",
            pool=int(_number(env, "MILPA_PG_POOL", 10)),
            wait=_number(env, "MILPA_PG_WAIT", 5.0),
            listen=env.get("MILPA_LISTEN") or "127.0.0.1",
            port=int(_number(env, "MILPA_PORT", 8081)),
            audit_trail=env.get("MILPA_AUDIT_TRAIL", "1") != "0",
            audit_lane=env.get("MILPA_AUDIT_LANE", "worker"),
            sweep_interval=_number(env, "MILPA_SWEEP_INTERVAL", 15.0),
            lease=_number(env, "MILPA_APPROVAL_LEASE", 30.0),
            handoff=_number(env, "MILPA_APPROVAL_HANDOFF", 30.0),
            max_pending=int(_number(env, "MILPA_MAX_PENDING", 100.0)) or None,
            telegram=platforms["telegram"],
            slack=platforms["slack"],
        )

    def check(self, platform: str) -> None:
        """Raise :class:`FleetConfigError` naming what is missing to serve ``platform``."""
        if platform not in PLATFORMS:
            raise FleetConfigError(f"unknown platform {platform!r}; serve one of: {', '.join(PLATFORMS)}")
        need = {
            "telegram": ("TELEGRAM_TOKEN", "TELEGRAM_WEBHOOK_URL", "TELEGRAM_WEBHOOK_SECRET"),
            "slack": ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET"),
        }[platform]
        given = self.telegram if platform == "telegram" else self.slack
        missing = [k for k in need if k not in given]
        if missing:
            raise FleetConfigError(
                f"a {platform} worker needs {', '.join(missing)} (every worker of the fleet the "
                "same values; the webhook secret must be shared so that any worker accepts)"
            )


def open_store(config: FleetConfig) -> PostgresStore:
    """The fleet's store; opening it creates or upgrades the tables (the migration)."""
    from milpa_chat.store.postgres import PostgresStore

    return PostgresStore(config.store, schema=config.schema, max_size=max(1, config.pool), wait=config.wait)


def migrate(config: FleetConfig) -> str:
    """Create or upgrade the tables and return where (run before starting the workers, or let each do it)."""
    store = open_store(config)
    asyncio.run(store.close())
    return repr(store)


def _tools(spec: str, store: Any) -> Any:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise FleetConfigError(f"MILPA_TOOLS must look like 'package.module:factory', got {spec!r}")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise FleetConfigError(f"MILPA_TOOLS={spec!r}: {exc}") from exc
    return factory(store)


def build(config: FleetConfig) -> Assistant:
    """The worker's assistant: the store (migrated), the tools, the identities and, unless disabled, the trail."""
    from milpa_chat.chat import Assistant, Identities
    from milpa_chat.runtime.registry import ToolRegistry
    from milpa_chat.runtime.trail import AuditTrail

    store = open_store(config)
    registry = ToolRegistry(
        store=store,
        approval_lease=config.lease,
        approval_handoff=config.handoff,
        approval_max_pending=config.max_pending,
    )
    registry.scan(_tools(config.tools, store))
    if config.audit_trail:
        AuditTrail(store, lane=config.audit_lane).attach(registry)
    return Assistant(registry, Identities.from_toml(config.identities), name="milpa fleet")


def _telegram(assistant: Assistant, config: FleetConfig, *, serving: bool) -> TelegramBot:
    from milpa_chat.bots.telegram import TelegramBot

    t = config.telegram
    return TelegramBot(
        assistant,
        t["TELEGRAM_TOKEN"],
        t.get("TELEGRAM_BASE_URL"),
        webhook_secret=t.get("TELEGRAM_WEBHOOK_SECRET"),
        sweep_interval=config.sweep_interval if serving else None,
        command_menu=serving,
    )


def _slack(assistant: Assistant, config: FleetConfig, *, serving: bool) -> SlackBot:
    from milpa_chat.bots.slack import SlackBot

    s = config.slack
    return SlackBot(
        assistant,
        s["SLACK_BOT_TOKEN"],
        s.get("SLACK_SIGNING_SECRET"),
        s.get("SLACK_BASE_URL"),
        sweep_interval=config.sweep_interval,
    )


async def serve(config: FleetConfig, platform: str, stop: asyncio.Event | None = None) -> None:
    """Serve ``platform`` until ``stop`` is set (by default: until SIGTERM or SIGINT), then drain and close."""
    config.check(platform)
    stop = stop or _stop_on_signals()
    assistant = build(config)
    telegram = _telegram(assistant, config, serving=platform == "telegram") if config.telegram else None
    slack = _slack(assistant, config, serving=platform == "slack") if config.slack else None
    try:
        if platform == "telegram":
            assert telegram is not None
            await _serve_telegram(telegram, config, stop)
        else:
            assert slack is not None
            if telegram is not None and not await _start_transport_only(assistant, telegram):
                telegram = None
            await _serve_slack(slack, config, stop)
    finally:
        if telegram is not None:
            await telegram.stop()
        if slack is not None:
            await slack.close()
        await assistant.store.close()
    log.info("milpa fleet worker %s on port %s drained and stopped", platform, config.port)


async def _start_transport_only(assistant: Assistant, bot: TelegramBot) -> bool:
    """Start ``bot`` for sending only (no webhook, no sweeper, no menu); when Telegram cannot be reached, serve
    without it (the Telegram workers deliver its cards) instead of not serving at all."""
    try:
        await bot.start(polling=False)
    except Exception as exc:
        log.warning(
            "Telegram is unreachable (%s: %s): this worker serves Slack and leaves Telegram's cards to the "
            "Telegram workers",
            type(exc).__name__,
            exc,
        )
        assistant.transports.pop("telegram", None)
        return False
    return True


async def _serve_telegram(bot: TelegramBot, config: FleetConfig, stop: asyncio.Event) -> None:
    await bot.start_webhook(
        config.telegram["TELEGRAM_WEBHOOK_URL"], listen=config.listen, port=config.port, url_path=TELEGRAM_PATH
    )
    log.info("milpa fleet worker telegram ready on %s:%s/%s", config.listen, config.port, TELEGRAM_PATH)
    await stop.wait()
    log.info("draining: no new deliveries; finishing the ones accepted")


async def _serve_slack(bot: SlackBot, config: FleetConfig, stop: asyncio.Event) -> None:
    from aiohttp import web

    runner = web.AppRunner(bot.web_app(), access_log=None, shutdown_timeout=max(config.lease, 10.0))
    await runner.setup()
    try:
        await web.TCPSite(runner, config.listen, config.port).start()
        log.info("milpa fleet worker slack ready on %s:%s%s", config.listen, config.port, SLACK_PATH)
        await stop.wait()
        log.info("draining: no new requests; finishing the ones accepted and the work they started")
    finally:
        await runner.cleanup()  # stops listening, waits for requests in flight, then closes the bot (drain)


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop


def haproxy_config(
    port: int,
    telegram: Sequence[str],
    slack: Sequence[str],
    *,
    bind: str = "127.0.0.1",
    tls_cert: str | None = None,
) -> str:
    """The balancer's configuration: ``/telegram`` to the Telegram workers, ``/slack/events`` to the Slack ones.

    ``telegram``/``slack``: ``host:port`` of each worker. A worker is taken out after one failed check
    (every 500 ms) and back after one good one; a request whose worker died before answering is sent
    again to another (``retry-on``, ``redispatch``): a repeat the workers recognise as a redelivery.
    ``tls_cert``: a PEM (certificate and key) to terminate HTTPS with (Telegram only delivers to HTTPS).
    """
    address = f"{bind}:{port}" + (f" ssl crt {tls_cert}" if tls_cert else "")

    def servers(name: str, addresses: Sequence[str]) -> str:
        return "\n".join(
            f"    server {name}{i} {a} check inter 500ms fall 1 rise 1" for i, a in enumerate(addresses, 1)
        )

    return (
        HAPROXY_TEMPLATE.replace("@BIND@", address)
        .replace("@TELEGRAM_SERVERS@", servers("telegram", telegram))
        .replace("@SLACK_SERVERS@", servers("slack", slack))
    )


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s[%(process)d]: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    usage = "usage: python -m milpa_chat.fleet {migrate | telegram | slack | haproxy-config PORT TG_ADDRS SLACK_ADDRS}"
    if not args or args[0] not in ("migrate", "haproxy-config", *PLATFORMS):
        print(usage, file=sys.stderr)
        return 2
    if args[0] == "haproxy-config":
        if len(args) != 4 or not args[1].isdigit():
            print(f"{usage}\n(addresses are host:port, comma-separated)", file=sys.stderr)
            return 2
        print(haproxy_config(int(args[1]), args[2].split(","), args[3].split(",")), end="")
        return 0
    try:
        config = FleetConfig.from_env(os.environ if env is None else env)
        if args[0] == "migrate":
            print(f"migrated {migrate(config)}")
            return 0
        asyncio.run(serve(config, args[0]))
    except (MilpaError, OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
