"""Slack block actions per second: the full SlackBot (slack-bolt + Assistant + store + Web API calls) against a
bare slack-bolt handler that only acks, through the same harness.

    PYTHONPATH=. python bench/slack.py [--n 2000] [--concurrency 16] [--store memory|sqlite]

The harness: each app runs in a process of its own, served over HTTP on 127.0.0.1 (bolt's aiohttp adapter,
signature verification on), and calls a local Slack Web API (``SlackApiServer``) that lives, with the client,
in this process — as Slack lives on other machines. ``n`` correctly signed ``block_actions`` requests, signed
beforehand, are POSTed with ``concurrency`` in flight over one keep-alive session, after a warm-up of 50.
The bare handler gets byte-for-byte the same kind of request as the full app (a tap on the same card).

Columns: *acks/s* counts HTTP answers (what Slack waits for); *done/s* also waits until the effect of every tap
has reached the Web API (the ephemeral refusal, or the page's ``chat.update``); *app CPU* is the app process's
CPU time per tap. Ratios are against the bare handler's acks/s.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from milpa_chat import Param, ToolRegistry, ToolResult, tool
from milpa_chat.testing.slack import SlackApiServer, SlackEvents, SlackMessage, SlackRequest

if TYPE_CHECKING:
    from slack_bolt.async_app import AsyncApp

    from milpa_chat.bots.slack import SlackBot

if TYPE_CHECKING:
    from slack_bolt.async_app import AsyncApp

    from milpa_chat.bots.slack import SlackBot

TOKEN, SECRET, CHANNEL, USER = "xoxb-bench", "bench-signing-secret", "C0BENCH", "U1001"
WARMUP = 50
CLOCK_TICKS = 100  # os.sysconf("SC_CLK_TCK") on Linux


class Notes:
    @tool("list_notes", "List notes", scopes=["notes:read"])
    def list_notes(self, page: Annotated[int, Param("Page", clamp=(1, 100))] = 1) -> ToolResult:
        items = [{"id": i, "title": f"note {i}"} for i in range(1, 51)]
        return ToolResult.paginated(items[(page - 1) * 10 : page * 10], page, len(items), 10, "Notes")

    @tool("delete_note", "Delete a note", scopes=["notes:write"], mutating=True)
    def delete_note(self, note_id: int) -> dict[str, Any]:
        return {"deleted": note_id}


# ------------------------------------------------------------------------------ the app process (--serve)
def bare_app(base_url: str) -> AsyncApp:
    """bolt with the full app's settings and a listener that only acks."""
    from slack_bolt.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient

    app = AsyncApp(client=AsyncWebClient(token=TOKEN, base_url=base_url), signing_secret=SECRET,
                   process_before_response=True)

    @app.action(re.compile(r"^milpa:"))
    async def only_ack(ack: Callable[[], Awaitable[None]]) -> None:
        await ack()

    return app


def full_bot(base_url: str, store_url: str) -> SlackBot:
    from milpa_chat.bots.slack import SlackBot
    from milpa_chat.chat import Assistant, Identities
    from milpa_chat.store import open_store

    registry = ToolRegistry(store=open_store(store_url))
    registry.scan(Notes())
    identities = Identities(users={f"slack:T1:{USER}": ["notes:read", "notes:write"]})
    return SlackBot(Assistant(registry, identities), TOKEN, SECRET, base_url)


async def serve_bare(base_url: str) -> None:
    from aiohttp import web
    from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request

    app = bare_app(base_url)

    async def endpoint(request: web.Request) -> web.Response:
        return await to_aiohttp_response(await app.async_dispatch(await to_bolt_request(request)))

    application = web.Application()
    application.router.add_post("/slack/events", endpoint)
    runner = web.AppRunner(application, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    print(f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events", flush=True)
    await asyncio.Event().wait()


async def serve_full(base_url: str, store_url: str) -> None:
    from aiohttp import web

    bot = full_bot(base_url, store_url)
    runner = web.AppRunner(bot.web_app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    print(f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events", flush=True)
    await asyncio.Event().wait()


# --------------------------------------------------------------------------------------------- the harness
@dataclass
class AppProcess:
    proc: asyncio.subprocess.Process
    url: str

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime + stime


@asynccontextmanager
async def app_process(kind: str, api: SlackApiServer, store_url: str) -> AsyncIterator[AppProcess]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--serve", kind, "--api", api.base_url, "--store", store_url,
        stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None
    url = (await asyncio.wait_for(proc.stdout.readline(), 60)).decode().strip()
    if not url.startswith("http"):
        raise RuntimeError(f"the {kind} app did not start (exit code {await proc.wait()})")
    try:
        yield AppProcess(proc, url)
    finally:
        proc.terminate()
        await proc.wait()


async def fire(slack: SlackEvents, requests: list[SlackRequest], concurrency: int) -> None:
    signed = iter([slack.signer.sign(r) for r in requests])

    async def worker() -> None:
        for request in signed:
            resp = await slack.deliver(request)
            if resp.status != 200:
                raise RuntimeError(f"the app answered {resp.status}: {resp.text[:200]}")

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def effects(api: SlackApiServer) -> int:
    return len([c for c in api.calls() if c.method in ("chat.postEphemeral", "chat.update")])


async def wait_effects(api: SlackApiServer, count: int) -> None:
    await api.wait_for(lambda: effects(api) >= count, timeout=300)


@dataclass
class Measured:
    acks_per_s: float
    done_per_s: float
    cpu_us: float


async def measure(app: AppProcess, api: SlackApiServer, card: SlackMessage, action_id: str, *,
                  per_tap: int, n: int, concurrency: int, redelivered: bool = False) -> Measured:
    async with SlackEvents(app.url, SECRET, api=api, ack_timeout=30) as slack:
        once = slack.payloads.click(card, action_id, user=USER)

        def taps(k: int) -> list[SlackRequest]:
            if redelivered:  # one tap delivered k times: the same action_ts, so the same delivery id
                return [once] * k
            return [slack.payloads.click(card, action_id, user=USER) for _ in range(k)]

        base = effects(api)
        await fire(slack, taps(WARMUP), concurrency)
        await wait_effects(api, base + per_tap * WARMUP)
        requests, base, cpu = taps(n), effects(api), app.cpu_seconds()
        start = time.perf_counter()
        await fire(slack, requests, concurrency)
        acked = time.perf_counter() - start
        await wait_effects(api, base + per_tap * n)
        done = time.perf_counter() - start
        return Measured(n / acked, n / done, (app.cpu_seconds() - cpu) / n * 1e6)


async def full_setup(kind: str, app: AppProcess, api: SlackApiServer) -> tuple[SlackMessage, str]:
    """The card the taps go to: a decided confirm card (as first shown) or a paginated result."""
    kind = "page" if kind == "redelivered" else kind
    async with SlackEvents(app.url, SECRET, api=api) as slack:
        command = "list_notes" if kind == "page" else "delete_note 1"
        await slack.command("/milpa", command, user=USER, channel=CHANNEL)
        card = await api.wait_for_message(CHANNEL, lambda m: bool(m.buttons()))
        word = "Next" if kind == "page" else "Confirm"
        action = next(b["action_id"] for b in card.buttons() if word in b["text"]["text"])
        if kind == "page":
            return card, action
        shown = SlackMessage(card.channel, card.ts, card.text, card.user, list(card.blocks))
        await slack.click(card, action, user=USER)
        await api.wait_for(lambda: card.edited and not card.buttons())
        return shown, action


async def bare_card(api: SlackApiServer, like: SlackMessage) -> SlackMessage:
    from slack_sdk.web.async_client import AsyncWebClient

    await AsyncWebClient(token=TOKEN, base_url=api.base_url).chat_postMessage(
        channel=CHANNEL, text=like.text, blocks=like.blocks)
    return api.messages(CHANNEL)[-1]


async def pair(kind: str, store_url: str, n: int, concurrency: int) -> tuple[Measured, Measured]:
    # page: chat.update; decided card: the ephemeral "Already done."; redelivered: nothing after the first
    per_tap = 0 if kind == "redelivered" else 1
    again = kind == "redelivered"
    async with SlackApiServer(TOKEN, channels=[CHANNEL]) as api, app_process("full", api, store_url) as app:
        card, action = await full_setup(kind, app, api)
        full = await measure(app, api, card, action, per_tap=per_tap, n=n, concurrency=concurrency, redelivered=again)
    async with SlackApiServer(TOKEN, channels=[CHANNEL]) as api, app_process("bare", api, store_url) as app:
        bare_on = await bare_card(api, card)
        bare = await measure(app, api, bare_on, action, per_tap=0, n=n, concurrency=concurrency, redelivered=again)
    return bare, full


# -------------------------------------------------------------------------- in-process dispatch (no HTTP)
async def dispatch_us(n: int) -> tuple[float, float]:
    """µs per ``app.async_dispatch`` of one redelivered tap, bare vs full (the adapter's own cost, no HTTP)."""
    from slack_bolt.request.async_request import AsyncBoltRequest

    async with SlackApiServer(TOKEN, channels=[CHANNEL]) as api:
        card = await bare_card(api, SlackMessage(CHANNEL, "1.1", "card", "U0", [
            {"type": "actions", "elements": [{"type": "button", "action_id": "milpa:page:0", "value": "page:v:2",
                                              "text": {"type": "plain_text", "text": "Next"}}]}]))
        slack = SlackEvents("http://unused", SECRET, api=api)
        signed = slack.signer.sign(slack.payloads.click(card, "milpa:page:0", user=USER))
        bot = full_bot(api.base_url, "memory://")
        results = []
        for app, drain in ((bare_app(api.base_url), noop), (bot.app, bot.drain)):
            for _ in range(WARMUP):
                await app.async_dispatch(AsyncBoltRequest(**signed.bolt_kwargs()))
            await drain()
            start = time.perf_counter()
            for _ in range(n):
                await app.async_dispatch(AsyncBoltRequest(**signed.bolt_kwargs()))
            await drain()
            results.append((time.perf_counter() - start) / n * 1e6)
        await bot.close()
    return results[0], results[1]


async def noop() -> None:
    return None


async def main(n: int, concurrency: int, store: str, tmp: Path) -> None:
    cases = {"redelivered": "one tap redelivered -> deduplicated, no effect",
             "decided": "tap on a decided card -> ephemeral refusal",
             "page": "page tap -> tool run, chat.update"}
    print(f"Python {sys.version.split()[0]}, n={n} taps per row, {concurrency} in flight, store={store}\n")
    print(f"| {'case':<46} | {'app':<4} | {'acks/s':>7} | {'done/s':>7} | {'app CPU µs/tap':>14} "
          f"| {'acks vs bare':>12} | {'done vs bare':>12} |")
    print(f"|{'-' * 48}|{'-' * 6}|{'-' * 9}|{'-' * 9}|{'-' * 16}|{'-' * 14}|{'-' * 14}|")
    for kind, title in cases.items():
        store_url = "memory://" if store == "memory" else str(tmp / f"{kind}.db")
        bare, full = await pair(kind, store_url, n, concurrency)
        for name, m in (("bare", bare), ("full", full)):
            print(f"| {title:<46} | {name:<4} | {m.acks_per_s:>7.0f} | {m.done_per_s:>7.0f} | {m.cpu_us:>14.0f} "
                  f"| {m.acks_per_s / bare.acks_per_s:>11.0%} | {m.done_per_s / bare.acks_per_s:>11.0%} |")
    bare_us, full_us = await dispatch_us(n)
    print(f"\nIn-process app.async_dispatch of one redelivered tap (no HTTP, one at a time, n={n}): "
          f"bare {bare_us:.0f} µs, full {full_us:.0f} µs -> {bare_us / full_us:.0%} of bare's rate")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="taps per row (default 2000)")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight (default 16)")
    parser.add_argument("--store", default="memory", help="memory or sqlite (a temporary file)")
    parser.add_argument("--serve", choices=("bare", "full"), help=argparse.SUPPRESS)
    parser.add_argument("--api", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve == "bare":
        asyncio.run(serve_bare(args.api))
    elif args.serve == "full":
        asyncio.run(serve_full(args.api, args.store))
    else:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(args.n, args.concurrency, args.store, Path(tmp)))
