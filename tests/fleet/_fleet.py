# ruff: noqa: ASYNC109, ASYNC220, ASYNC240  (a test harness: short blocking process and file calls, own timeouts)
"""A fleet on 127.0.0.1 for the tests: worker processes (``python -m milpa_chat.fleet``), HAProxy in front
of them with the configuration ``milpa_chat.fleet.haproxy_config`` makes, the local Telegram Bot API and
Slack Web API servers they talk to, and one PostgreSQL schema of their own."""

from __future__ import annotations

import asyncio
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from milpa_chat.fleet import haproxy_config
from milpa_chat.testing import BotApiServer, TelegramUser
from milpa_chat.testing.slack import SlackApiServer, SlackEvents
from tests.conftest import POSTGRES_DSN, REQUIRE_POSTGRES

ROOT = Path(__file__).resolve().parents[2]
HAPROXY = "/usr/sbin/haproxy"
TEAM, SLACK_TOKEN, SLACK_SECRET = "T1", "xoxb-fleet-test", "fleet-signing-secret"
TG_TOKEN, TG_SECRET = "123456:FLEET-token", "fleet-webhook-secret_1"
TG_APPROVERS, SLACK_APPROVERS, SLACK_WORK = -500, "C0APPROVE", "C0WORK"
TG_WRITERS = [TelegramUser(1001 + i, f"Writer{i}", f"writer{i}") for i in range(3)]
TG_MANAGERS = [TelegramUser(2001 + i, f"Manager{i}", f"manager{i}") for i in range(2)]
SLACK_WRITERS = [f"U100{i}" for i in range(3)]
SLACK_MANAGERS = [f"U200{i}" for i in range(2)]


def identities_toml() -> str:
    users = [f'"telegram:{u.id}" = ["writer"]' for u in TG_WRITERS]
    users += [f'"telegram:{u.id}" = ["manager"]' for u in TG_MANAGERS]
    users += [f'"slack:{TEAM}:{u}" = ["writer"]' for u in SLACK_WRITERS]
    users += [f'"slack:{TEAM}:{u}" = ["manager"]' for u in SLACK_MANAGERS]
    return "\n".join(
        [
            "[roles]",
            'writer = ["payments:send", "items:write", "items:read"]',
            'manager = ["payments:approve", "items:read"]',
            "",
            "[users]",
            *users,
            "",
            "[approvers]",
            f'telegram = ["{TG_APPROVERS}"]',
            f'slack = ["{SLACK_APPROVERS}"]',
            "",
        ]
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


async def wait_port(
    port: int, timeout: float, proc: subprocess.Popen[bytes] | None = None, log: Path | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while not port_open(port):
        if proc is not None and proc.poll() is not None:
            tail = log.read_text()[-3000:] if log is not None and log.exists() else ""
            raise AssertionError(f"the process for port {port} exited with {proc.returncode}:\n{tail}")
        if time.monotonic() > deadline:
            raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {timeout} s")
        await asyncio.sleep(0.1)


def admin(statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(POSTGRES_DSN, autocommit=True, connect_timeout=3) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


def require_postgres() -> None:
    try:
        admin("SELECT 1")
    except Exception as exc:
        reason = f"PostgreSQL at {POSTGRES_DSN} is unreachable ({type(exc).__name__}: {exc})"
        if REQUIRE_POSTGRES:
            pytest.fail(f"{reason}; MILPA_REQUIRE_POSTGRES=1 requires it")
        pytest.skip(reason)
    if not os.access(HAPROXY, os.X_OK):
        pytest.fail(f"{HAPROXY} is missing: apt-get install -y haproxy (.ci/run installs it)")


def unit_command(platform: str) -> list[str]:
    """The ``ExecStart`` of ``deploy/milpa-<platform>@.service``, run with this interpreter."""
    unit = (ROOT / "deploy" / f"milpa-{platform}@.service").read_text()
    line = next(x for x in unit.splitlines() if x.startswith("ExecStart="))
    python, *args = line.removeprefix("ExecStart=").split()
    assert python.endswith("/python"), line
    return [sys.executable, *args]


@dataclass
class Worker:
    """One worker process; ``start``/``kill``/``terminate`` as a process manager would."""

    platform: str
    port: int
    env: dict[str, str]
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0

    def start(self) -> None:
        self.starts += 1
        out = self.log.open("ab")
        self.proc = subprocess.Popen(
            unit_command(self.platform),
            cwd=ROOT,
            env={**self.env, "MILPA_PORT": str(self.port)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
        out.close()

    async def ready(self, timeout: float = 30.0) -> None:
        await wait_port(self.port, timeout, self.proc, self.log)

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.alive:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def terminate(self, timeout: float = 30.0) -> int:
        assert self.proc is not None
        if self.alive:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)


@dataclass
class Fleet:
    schema: str
    tg: BotApiServer
    api: SlackApiServer
    slack: SlackEvents
    balancer_port: int
    workers: list[Worker]
    tmp: Path
    balancer: subprocess.Popen[bytes] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.balancer_port}"

    def of(self, platform: str) -> list[Worker]:
        return [w for w in self.workers if w.platform == platform]

    def store_spec(self) -> dict[str, Any]:
        return {"backend": "postgres", "dsn": POSTGRES_DSN, "schema": self.schema}

    async def balanced(self, timeout: float = 15.0) -> None:
        """Wait until the balancer routes to a worker of each platform (an unsigned request is refused by the
        worker, 401/403, instead of the balancer's 503)."""
        import aiohttp

        deadline = time.monotonic() + timeout
        async with aiohttp.ClientSession() as session:
            for path in [
                p for platform, p in (("telegram", "/telegram"), ("slack", "/slack/events")) if self.of(platform)
            ]:
                while True:
                    async with session.post(self.url + path, data=b"{}") as res:
                        if res.status != 503:
                            break
                    if time.monotonic() > deadline:
                        raise AssertionError(f"the balancer routes nothing on {path} after {timeout} s")
                    await asyncio.sleep(0.1)

    def logs(self) -> str:
        return "\n".join(
            f"--- {w.platform}:{w.port}\n{w.log.read_text()[-4000:]}" for w in self.workers if w.log.exists()
        )


def worker_env(
    schema: str, identities: Path, tg: BotApiServer, api: SlackApiServer, balancer_port: int, **extra: str
) -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "MILPA_STORE": POSTGRES_DSN,
        "MILPA_PG_SCHEMA": schema,
        "MILPA_PG_POOL": "3",
        "MILPA_TOOLS": "tests.fleet._tools:FleetTools",
        "MILPA_IDENTITIES": str(identities),
        "MILPA_LISTEN": "127.0.0.1",
        "MILPA_SWEEP_INTERVAL": "1",
        "MILPA_APPROVAL_LEASE": "3",
        "MILPA_APPROVAL_HANDOFF": "2",
        "TELEGRAM_TOKEN": TG_TOKEN,
        "TELEGRAM_BASE_URL": tg.base_url,
        "TELEGRAM_WEBHOOK_URL": f"http://127.0.0.1:{balancer_port}/telegram",
        "TELEGRAM_WEBHOOK_SECRET": TG_SECRET,
        "SLACK_BOT_TOKEN": SLACK_TOKEN,
        "SLACK_SIGNING_SECRET": SLACK_SECRET,
        "SLACK_BASE_URL": api.base_url,
        **extra,
    }


@asynccontextmanager
async def running_fleet(tmp: Path, *, telegram: int = 2, slack: int = 2, **extra: str) -> AsyncIterator[Fleet]:
    """``telegram`` + ``slack`` workers behind HAProxy, all up; everything is stopped and dropped afterwards."""
    require_postgres()
    schema = f"milpa_fleet_{secrets.token_hex(5)}"
    identities = tmp / "identities.toml"
    identities.write_text(identities_toml())
    tg = BotApiServer(TG_TOKEN, webhook_timeout=5.0)
    tg.group(TG_APPROVERS, "Approvers", members=TG_MANAGERS)
    async with tg, SlackApiServer(SLACK_TOKEN, team_id=TEAM, channels=[SLACK_WORK, SLACK_APPROVERS]) as api:
        port = free_port()
        env = worker_env(schema, identities, tg, api, port, **extra)
        workers = [
            Worker(p, free_port(), env, tmp / f"{p}-{i}.log")
            for p, n in (("telegram", telegram), ("slack", slack))
            for i in range(n)
        ]
        config = tmp / "haproxy.cfg"
        config.write_text(
            haproxy_config(
                port,
                [f"127.0.0.1:{w.port}" for w in workers if w.platform == "telegram"],
                [f"127.0.0.1:{w.port}" for w in workers if w.platform == "slack"],
            )
        )
        events = SlackEvents(f"http://127.0.0.1:{port}/slack/events", SLACK_SECRET, api=api, ack_timeout=5.0)
        fleet = Fleet(schema, tg, api, events, port, workers, tmp)
        try:
            fleet.balancer = subprocess.Popen(
                [HAPROXY, "-db", "-f", str(config)], stdout=(tmp / "haproxy.log").open("wb"), stderr=subprocess.STDOUT
            )
            await wait_port(port, 10, fleet.balancer, tmp / "haproxy.log")
            for w in workers:  # one at a time: the first creates the tables, the others find them
                w.start()
                await w.ready()
            if telegram:
                await tg.wait_until(lambda: tg.webhook is not None, timeout=10)
            await fleet.balanced()
            yield fleet
        finally:
            await events.close()
            for w in workers:
                w.kill()
            if fleet.balancer is not None:
                fleet.balancer.terminate()
                fleet.balancer.wait(10)
            admin(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
