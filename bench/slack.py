"""Slack block actions per second: the full SlackBot (slack-bolt + Assistant + store + Web API calls) against bare
slack-bolt handlers — one that only acks, and a fair peer that acks and then does the same work and makes the same
Web API calls the full app makes for that tap (described below) — through the same harness, with per-round ratios
by CPU per tap.

    PYTHONPATH=. python bench/slack.py [--n 1200] [--concurrency 16] [--rounds 4] [--sets 3] [--stores memory,sqlite]

The harness: each app runs in an OS process of its own, served over HTTP on 127.0.0.1 (bolt's aiohttp adapter,
signature verification on), and calls a local Slack Web API (``SlackApiServer``, one per app) that lives, with the
client sending the taps, in the bench's process — as Slack lives on other machines. The bench's process is pinned
to one CPU and every app, once started, to the other (``bench/_apps.py``); an app's CPU is its own process's
(``time.process_time()``, read over a pipe), so neither the Web API's work nor the load's counts on either side.
Correctly signed ``block_actions`` requests are POSTed with ``concurrency`` in flight over one keep-alive session.
Every bare app gets byte-for-byte the same kind of request as the full app (a tap on a copy of the same card).

The fair peer of each case does the work a bolt app without the kit would do for that tap, and makes the
same Web API calls, in a task of its own after the ack, through the app's ``AsyncWebClient`` with one shared
keep-alive session, as ``SlackBot`` does:

* one tap redelivered: the same tap delivered again and again; the store de-duplicates it, nothing is called
  after the first — the peer is the bare app that acks (and calls nothing);
* a tap on a decided card: the approval is read and the refusal is posted with ``chat.postEphemeral`` — the
  peer posts the same refusal (replayed from the full app's last warm-up tap, aimed at the tapped message and
  user);
* a page tap: the stored view is read, the tool runs and the card is ``chat.update``-d; once with a ``def``
  tool (it runs on a worker thread) and once with the same tool as ``async def`` (on the loop) — the peer reads
  the page from the button's value, runs the same tool function (``Notes.list_notes``, called, or
  ``list_notes_async``, awaited), builds the page with slack_sdk's Block Kit models (header, items, page line,
  Previous/Next buttons) and ``chat.update``-s the tapped message.

Every set of a case starts its apps anew and together — the bare app acking only, the fair peer, the full app on
each store of ``--stores`` (default both: in memory, and SQLite on a temporary file of the set's own with
``synchronous=FULL``) — warms each up with 50 taps and freezes what start-up allocated (``gc.freeze()``, in every
app alike). A process keeps for its life what it settled into at start-up, and two processes of the same app can
differ by a few points (``bench/telegram.py`` says what moves with it): so each of the ``--rounds`` rounds starts
its apps anew ``--sets`` times in a row, each set tapped for its share of the round's ``--n`` taps, the round's ratio
is over those sets, and the spread shows how far rounds differ. A set gives every app ``WARM_SLICES`` slices not
counted, then its share of ``--n`` taps a slice at a time (``--concurrency`` taps, all in flight at once, done
before the next app's turn), the apps taking turns slice by slice in an order rotated by one every slice (A B C,
B C A, ...: no app runs twice in a row, every app goes at every place), so a full app's slices and its peer's meet
the same moments of the machine, well under a second apart (with 4 slices a round, the rows' ratios moved up to 25
points from round to round; with slices of 16 taps, 1.5-4 points). Each round gives the full app's ratio to its
fair peer, peer CPU per tap / full CPU per tap: the second table prints every round's ratio, the median and the
spread (a row is decided when the spread is under 5 points; the target is ≥ 90 %).

Columns (medians of the counted rounds): *calls/tap* counts the Web API calls the taps caused; *acks/s* counts
HTTP answers (what Slack waits for); *done/s* also waits until every call caused by the taps has reached the Web
API; *app CPU* is the app process's CPU time per tap; ratios are rates (acks, done) and CPU per tap against the
bare app acking only and against the fair peer; *kit CPU* is the full app's CPU per tap minus its fair peer's.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import itertools
import json
import operator
import re
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from milpa_chat import Param, ToolRegistry, ToolResult, tool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _apps import AppProcess, app_process, in_turn, pin_harness, serve_control
from _ratios import header, line

from milpa_chat.testing.slack import SlackApiServer, SlackEvents, SlackMessage, SlackRequest

if TYPE_CHECKING:
    from slack_bolt.async_app import AsyncApp

    from milpa_chat.bots.slack import SlackBot

TOKEN, SECRET, CHANNEL, USER = "xoxb-bench", "bench-signing-secret", "C0BENCH", "U1001"
WARMUP = 50
WARM_SLICES = 10  # slices of every app after its warm-up taps, in turn as the counted ones, not counted
_RETRIES = itertools.count(1)
SETUP_METHODS = frozenset({"auth.test"})  # calls that are not a tap's work


class Notes:
    @tool("list_notes", "List notes", scopes=["notes:read"], mutating=False)
    def list_notes(self, page: Annotated[int, Param("Page", clamp=(1, 100))] = 1) -> ToolResult:
        items = [{"id": i, "title": f"note {i}"} for i in range(1, 51)]
        return ToolResult.paginated(items[(page - 1) * 10 : page * 10], page, len(items), 10, "Notes")

    @tool(
        "list_notes_async",
        "List notes (an async def tool: it runs on the event loop)",
        scopes=["notes:read"],
        mutating=False,
    )
    async def list_notes_async(self, page: Annotated[int, Param("Page", clamp=(1, 100))] = 1) -> ToolResult:
        return self.list_notes(page)

    @tool("delete_note", "Delete a note", scopes=["notes:write"], mutating=True)
    def delete_note(self, note_id: int) -> dict[str, Any]:
        return {"deleted": note_id}


# ------------------------------------------------------------------------------ the app process (--serve)
def page_blocks(result: ToolResult, value_prefix: str) -> tuple[str, list[Any]]:
    """What a bolt app without the kit draws for a page of notes, with slack_sdk's Block Kit models: a header,
    the items, the page line and Previous/Next buttons (the same content the kit's card shows)."""
    from slack_sdk.models.blocks import (
        ActionsBlock,
        ButtonElement,
        ContextBlock,
        HeaderBlock,
        MarkdownTextObject,
        PlainTextObject,
        SectionBlock,
    )

    paging = result.meta["pagination"]
    page, pages, total = paging["page"], paging["total_pages"], paging["total_items"]
    lines = "\n".join(f"\u2022 *#{item['id']}* {item['title']}" for item in result.data)
    buttons = []
    if paging["has_prev"]:
        buttons.append(
            ButtonElement(text="\u25c0 Previous", action_id="milpa:page:0", value=f"{value_prefix}:{page - 1}")
        )
    if paging["has_next"]:
        buttons.append(
            ButtonElement(
                text="Next \u25b6", action_id=f"milpa:page:{len(buttons)}", value=f"{value_prefix}:{page + 1}"
            )
        )
    blocks: list[Any] = [
        HeaderBlock(text=PlainTextObject(text=f"\U0001f4cb {result.message}")),
        SectionBlock(text=MarkdownTextObject(text=lines, verbatim=True)),
        ContextBlock(
            elements=[MarkdownTextObject(text=f"_Page {page} of {pages} \u00b7 {total} items in total_", verbatim=True)]
        ),
    ]
    if buttons:
        blocks.append(ActionsBlock(elements=buttons))
    return f"{result.message}: page {page} of {pages} ({total} items)", blocks


def bare_app(base_url: str, replay: list[dict[str, Any]] | None = None, page_tool: str | None = None) -> AsyncApp:
    """bolt with the full app's settings and a listener that acks; with ``replay``, it then makes those Web API
    calls (recorded from the full app: method and arguments), aimed at the tapped message and user, in a task
    of its own after the ack, sharing one keep-alive session. With ``page_tool`` (a page tap's fair peer) it
    does the work a bolt app without the kit does for a page button instead: reads the page from the button's
    value, runs the same tool function (``Notes.list_notes``, or awaits ``list_notes_async``), builds the page
    with slack_sdk's Block Kit models and ``chat.update``-s the tapped message, in a task after the ack."""
    import aiohttp
    from slack_bolt.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient

    client = AsyncWebClient(token=TOKEN, base_url=base_url)
    app = AsyncApp(client=client, signing_secret=SECRET, process_before_response=True)
    calls = [(getattr(client, c["method"].replace(".", "_")), c["args"]) for c in replay or []]
    tasks: set[asyncio.Task[None]] = set()
    notes = Notes()

    async def make_calls(body: dict[str, Any]) -> None:
        container, user = body.get("container") or {}, body.get("user") or {}
        where = {"channel": container.get("channel_id"), "ts": container.get("message_ts"), "user": user.get("id")}
        for method, args in calls:
            await method(**{**args, **{k: v for k, v in where.items() if k in args}})

    async def page_tap(body: dict[str, Any]) -> None:
        container = body.get("container") or {}
        prefix, _, page = body["actions"][0]["value"].rpartition(":")
        if page_tool == "list_notes_async":
            result = await notes.list_notes_async(int(page))
        else:
            result = notes.list_notes(int(page))
        text, blocks = page_blocks(result, prefix)
        await client.chat_update(channel=container["channel_id"], ts=container["message_ts"], text=text, blocks=blocks)

    @app.action(re.compile(r"^milpa:"))
    async def listener(ack: Callable[[], Awaitable[None]], body: dict[str, Any]) -> None:
        await ack()
        if calls or page_tool:
            if client.session is None or client.session.closed:
                client.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=client.timeout))
            work = page_tap(body) if page_tool else make_calls(body)
            task = asyncio.get_running_loop().create_task(work)
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    return app


def full_bot(base_url: str, store_url: str) -> SlackBot:
    from milpa_chat.bots.slack import SlackBot
    from milpa_chat.chat import Assistant, Identities
    from milpa_chat.store import open_store

    registry = ToolRegistry(store=open_store(store_url))
    registry.scan(Notes())
    identities = Identities(users={f"slack:T1:{USER}": ["notes:read", "notes:write"]})
    return SlackBot(Assistant(registry, identities), TOKEN, SECRET, base_url)


async def serve_bare(base_url: str, replay: list[dict[str, Any]] | None, page_tool: str | None = None) -> None:
    from aiohttp import web
    from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request

    app = bare_app(base_url, replay, page_tool)

    async def endpoint(request: web.Request) -> web.Response:
        return await to_aiohttp_response(await app.async_dispatch(await to_bolt_request(request)))

    application = web.Application()
    application.router.add_post("/slack/events", endpoint)
    runner = web.AppRunner(application, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    serve_control(f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events")
    await asyncio.Event().wait()


async def serve_full(base_url: str, store_url: str) -> None:
    from aiohttp import web

    bot = full_bot(base_url, store_url)
    runner = web.AppRunner(bot.web_app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    serve_control(f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events")
    await asyncio.Event().wait()


# --------------------------------------------------------------------------------------------- the harness
async def fire(
    slack: SlackEvents, requests: list[SlackRequest], concurrency: int, *, redelivered: bool = False
) -> None:
    """POST ``requests``, ``concurrency`` at a time. Redeliveries are Slack's retries (``X-Slack-Retry-Num``): the
    same signed request again would be a replay, refused by the app's signature check."""
    signed = iter([slack.signer.sign(r, retry_num=next(_RETRIES) if redelivered else None) for r in requests])

    async def worker() -> None:
        for request in signed:
            resp = await slack.deliver(request)
            if resp.status != 200:
                raise RuntimeError(f"the app answered {resp.status}: {resp.text[:200]}")

    await asyncio.gather(*(worker() for _ in range(concurrency)))


def work(api: SlackApiServer) -> list[Any]:
    """The Web API calls the app made, other than setting itself up."""
    return [c for c in api.calls() if c.method not in SETUP_METHODS]


async def wait_work(api: SlackApiServer, count: int) -> None:
    await api.wait_for(lambda: len(work(api)) >= count, timeout=300)


@dataclass
class Measured:
    taps: int
    acked: float  # seconds until the last ack
    done: float  # seconds until the last call the taps caused reached the Web API
    cpu: float  # CPU seconds of the app's process
    calls: int

    @property
    def acks_per_s(self) -> float:
        return self.taps / self.acked

    @property
    def done_per_s(self) -> float:
        return self.taps / self.done

    @property
    def cpu_us(self) -> float:
        return self.cpu / self.taps * 1e6

    @property
    def calls_per_tap(self) -> float:
        return self.calls / self.taps

    def __add__(self, other: Measured) -> Measured:
        return Measured(
            self.taps + other.taps,
            self.acked + other.acked,
            self.done + other.done,
            self.cpu + other.cpu,
            self.calls + other.calls,
        )


@dataclass
class Member:
    """One app of a case: the bare app acking only, the fair peer, or the full app on a store."""

    name: str
    store: str  # the full app's store, "—" for bare apps
    api: SlackApiServer
    app: AppProcess
    per_tap: int  # Web API calls a tap causes (after a redelivered tap's first delivery)
    redelivered: bool
    card: SlackMessage | None = None
    action: str = ""
    once: SlackRequest | None = None  # the redelivered tap
    rounds: list[Measured] = field(default_factory=list)


async def tap(member: Member, n: int, concurrency: int) -> Measured:
    """``n`` taps on the member's card, ``concurrency`` in flight, until every call they cause has been made."""
    assert member.card is not None
    async with SlackEvents(member.app.ready, SECRET, api=member.api, ack_timeout=30) as slack:
        if member.redelivered:  # one tap delivered n times: the same action_ts, so the same delivery id
            if member.once is None:
                member.once = slack.payloads.click(member.card, member.action, user=USER)
            requests = [member.once] * n
        else:
            requests = [slack.payloads.click(member.card, member.action, user=USER) for _ in range(n)]
        api, base = member.api, len(work(member.api))
        cpu = await member.app.cpu()
        start = time.perf_counter()
        await fire(slack, requests, concurrency, redelivered=member.redelivered)
        acked = time.perf_counter() - start
        await wait_work(api, base + member.per_tap * n)
        done = time.perf_counter() - start
        cpu = await member.app.cpu() - cpu
    made = work(api)[base:]
    failed = [c for c in made if not c.ok]
    if failed:
        raise RuntimeError(f"{len(failed)} of the taps' Web API calls failed, e.g. {failed[0]}")
    return Measured(n, acked, done, cpu, len(made))


def snapshot(card: SlackMessage) -> SlackMessage:
    return SlackMessage(card.channel, card.ts, card.text, card.user, list(card.blocks))


async def full_setup(kind: str, member: Member) -> None:
    """The card the full app's taps go to: a decided confirm card (as first shown) or a paginated result."""
    kind = "page" if kind == "redelivered" else kind
    paging = kind.startswith("page")
    api = member.api
    async with SlackEvents(member.app.ready, SECRET, api=api) as slack:
        command = {"page": "list_notes", "page_async": "list_notes_async"}.get(kind, "delete_note 1")
        await slack.command("/milpa", command, user=USER, channel=CHANNEL)
        card = await api.wait_for_message(CHANNEL, lambda m: bool(m.buttons()))
        word = "Next" if paging else "Confirm"
        member.card = card
        member.action = next(b["action_id"] for b in card.buttons() if word in b["text"]["text"])
        if paging:
            return
        shown = snapshot(card)
        await slack.click(card, member.action, user=USER)
        # until the tool has run: the card edited twice and the result posted (nothing left to overlap the taps)
        await api.wait_for(lambda: len(api.calls("chat.update")) >= 1 and len(api.calls("chat.postMessage")) >= 2)
        member.card = shown


async def bare_card(api: SlackApiServer, like: SlackMessage) -> SlackMessage:
    from slack_sdk.web.async_client import AsyncWebClient

    await AsyncWebClient(token=TOKEN, base_url=api.base_url).chat_postMessage(
        channel=CHANNEL, text=like.text, blocks=like.blocks
    )
    return api.messages(CHANNEL)[-1]


@dataclass
class Case:
    kind: str
    title: str
    per_tap: int  # Web API calls a tap causes (after the first delivery)
    first: int = 0  # more calls the full app makes for the first delivery (a redelivered tap's page)


PAGE_TOOLS = {"page": "list_notes", "page_async": "list_notes_async"}
ACK_ONLY, PEER = "bare, ack only", "fair peer"


@asynccontextmanager
async def started(
    name: str, kind: str, store_url: str, per_tap: int, redelivered: bool, extra: list[str]
) -> AsyncIterator[Member]:
    async with SlackApiServer(TOKEN, channels=[CHANNEL]) as api:
        args = [__file__, "--serve", kind, "--api", api.base_url, "--store", store_url, *extra]
        async with app_process(args, f"{name} app") as app:
            yield Member(name, store_url, api, app, per_tap, redelivered)


async def run_case(
    case: Case, stores: list[str], n: int, concurrency: int, number: int, slices: int, tmp: Path
) -> tuple[list[Member], list[dict[str, Any]]]:
    """Round ``number`` of the case: start its apps anew, set them up and warm them up, then tap each in turn,
    slice by slice (the first ``WARM_SLICES`` slices not counted)."""
    redelivered = case.kind == "redelivered"
    async with AsyncExitStack() as stack:

        async def start(name: str, kind: str, store_url: str, per_tap: int, extra: list[str]) -> Member:
            return await stack.enter_async_context(started(name, kind, store_url, per_tap, redelivered, extra))

        urls = {st: "memory://" if st == "memory" else str(tmp / f"{case.kind}.{number}.db") for st in stores}
        fulls = await asyncio.gather(
            *(start(f"full SlackBot ({st})", "full", urls[st], case.per_tap, []) for st in stores)
        )
        only = await start(ACK_ONLY, "bare", "memory://", 0, [])
        for full in fulls:
            await full_setup(case.kind, full)
            if redelivered:  # the first delivery makes the page's call; the redeliveries, none
                base = len(work(full.api))
                await tap(full, 1, 1)
                await wait_work(full.api, base + case.first)
        made: list[dict[str, Any]] = []
        for full in fulls:  # warm-up taps, and the calls of the last one (what a same-calls peer replays)
            await tap(full, WARMUP, concurrency)
            made = [{"method": c.method, "args": c.args} for c in work(full.api)[len(work(full.api)) - case.per_tap :]]
        tapped = snapshot(fulls[0].card) if fulls[0].card is not None else None
        assert tapped is not None
        members = [only]
        if made:
            replay = tmp / f"{case.kind}.calls.json"
            replay.write_text(json.dumps(made))
            page_tool = PAGE_TOOLS.get(case.kind)
            extra = ["--page-tool", page_tool] if page_tool else ["--replay", str(replay)]
            members.append(await start(PEER, "bare", "memory://", case.per_tap, extra))
        for bare in members:
            bare.card, bare.action = await bare_card(bare.api, tapped), fulls[0].action
            await tap(bare, WARMUP, concurrency)
        # a full app next to its fair peer (or, without calls, to the bare app acking only), in a rotated order
        order = [only, fulls[0], members[-1], *fulls[1:]] if made else [fulls[0], only, *fulls[1:]]
        for member in order:
            await member.app.freeze()
        parts: dict[str, list[Measured]] = {m.name: [] for m in order}
        for part in range(-WARM_SLICES, slices):
            for member in in_turn(order, part):
                size = concurrency if part < 0 else n // slices + (1 if part < n % slices else 0)
                measured = await tap(member, size, concurrency)
                if part >= 0:
                    parts[member.name].append(measured)
        for member in order:
            member.rounds.append(functools.reduce(operator.add, parts[member.name]))
        return [only, *members[1:], *fulls], made


# -------------------------------------------------------------------------- in-process dispatch (no HTTP)
async def dispatch_us(n: int) -> tuple[float, float]:
    """µs per ``app.async_dispatch`` of one redelivered tap, bare vs full (the adapter's own cost, no HTTP)."""
    from slack_bolt.request.async_request import AsyncBoltRequest

    async with SlackApiServer(TOKEN, channels=[CHANNEL]) as api:
        card = await bare_card(
            api,
            SlackMessage(
                CHANNEL,
                "1.1",
                "card",
                "U0",
                [
                    {
                        "type": "actions",
                        "elements": [
                            {
                                "type": "button",
                                "action_id": "milpa:page:0",
                                "value": "page:v:2",
                                "text": {"type": "plain_text", "text": "Next"},
                            }
                        ],
                    }
                ],
            ),
        )
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


# --------------------------------------------------------------------------------------------- the report
CASES = [
    Case("redelivered", "one tap redelivered -> deduplicated, no effect", 0, first=1),
    Case("decided", "tap on a decided card -> ephemeral refusal", 1),
    Case("page", "page tap -> tool run, chat.update", 1),
    Case("page_async", "page tap, async def tool -> tool run on the loop, chat.update", 1),
]


def table(results: dict[str, list[Member]], stores: list[str]) -> str:
    def med(member: Member, value: Callable[[Measured], float]) -> float:
        return statistics.median(value(m) for m in member.rounds)

    def ratio(row: Member, base: Member) -> str:
        return (
            f"{med(row, lambda m: m.acks_per_s) / med(base, lambda m: m.acks_per_s):.0%} / "
            f"{med(row, lambda m: m.done_per_s) / med(base, lambda m: m.done_per_s):.0%} / "
            f"{med(base, lambda m: m.cpu_us) / med(row, lambda m: m.cpu_us):.0%}"
        )

    lines = [
        "| case | store | app | calls/tap | acks/s | done/s | app CPU µs/tap | vs bare acking only (acks / done / CPU) "
        "| vs fair peer (acks / done / CPU) | kit CPU µs/tap |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case in CASES:
        members = results[case.kind]
        only, peer = members[0], members[1] if members[1].name == PEER else members[0]
        for member in members:
            full = member.name.startswith("full")
            name = member.name if member.name != PEER else PEER_DOES[case.kind]
            vs_only = "baseline" if member is only else ratio(member, only)
            vs_peer = ratio(member, peer) if full else "baseline" if member is peer else "—"
            kit = f"{med(member, lambda m: m.cpu_us) - med(peer, lambda m: m.cpu_us):,.0f}" if full else "—"
            lines.append(
                f"| {case.title} | {next((st for st in stores if st in member.name), '—')} | {name} | "
                f"{med(member, lambda m: m.calls_per_tap):.2g} | {med(member, lambda m: m.acks_per_s):,.0f} | "
                f"{med(member, lambda m: m.done_per_s):,.0f} | {med(member, lambda m: m.cpu_us):,.0f} | "
                f"{vs_only} | {vs_peer} | {kit} |"
            )
    lines += [
        "",
        "Every full app against its fair peer, round by round (CPU per tap of each app's own process; every round "
        "with its apps started anew):",
        "",
    ]
    lines += header()
    for case in CASES:
        members = results[case.kind]
        peer = members[1] if members[1].name == PEER else members[0]
        for full in (m for m in members if m.name.startswith("full")):
            each = [p.cpu_us / f.cpu_us for f, p in zip(full.rounds, peer.rounds, strict=True)]
            store = next(st for st in stores if st in full.name)
            lines.append(line(f"{case.title} ({store})", PEER_DOES[case.kind], each))
    return "\n".join(lines)


PEER_DOES = {
    "redelivered": "bare, ack only (no calls)",
    "decided": "bare, ack + same calls",
    "page": "bare, ack + same work (tool run, Block Kit page, chat.update)",
    "page_async": "bare, ack + same work (async tool run, Block Kit page, chat.update)",
}


async def main(n: int, concurrency: int, rounds: int, sets: int, stores: list[str], tmp: Path) -> None:
    cpus = pin_harness()
    started_at = time.perf_counter()
    results: dict[str, list[Member]] = {}
    calls: dict[str, list[dict[str, Any]]] = {}
    share = -(-n // sets)  # the taps of one set of processes
    slices = -(-share // concurrency)  # an app's turn: one slice of --concurrency taps
    for case in CASES:
        for number in range(rounds):  # every round: --sets sets of processes, each started anew
            for one in range(sets):
                made = await run_case(case, stores, share, concurrency, number * sets + one, slices, tmp)
                members, calls[case.kind] = made
                if case.kind not in results:
                    results[case.kind] = members
                else:
                    for kept, member in zip(results[case.kind], members, strict=True):
                        kept.rounds += member.rounds
            for kept in results[case.kind]:  # the round's sets, added up
                kept.rounds[-sets:] = [functools.reduce(operator.add, kept.rounds[-sets:])]
    bare_us, full_us = await dispatch_us(n)
    print(
        f"Python {sys.version.split()[0]}, {n} taps a round in {sets} sets of {slices} slices, {concurrency} in "
        "flight, stores: "
        f"{', '.join(stores)}; {rounds} rounds, each starting every app anew {sets} times in a row (the round's taps "
        f"shared among those sets of processes), every app warmed up with {WARMUP} taps and {WARM_SLICES} slices not "
        f"counted, medians of the rounds; every app in a process of its own, {cpus}; "
        f"{time.perf_counter() - started_at:.0f} s\n"
    )
    print(table(results, stores))
    print(
        "\nWeb API calls the full app made for one tap (recorded; replayed by the same-calls peer; argument bytes "
        "as JSON):"
    )
    for case in CASES:
        listed = ", ".join(f"{c['method']} ({len(json.dumps(c['args']).encode())} B)" for c in calls[case.kind])
        print(f"* {case.title}: {listed or 'none'}")
    print(
        f"\nIn-process app.async_dispatch of one redelivered tap (no HTTP, one at a time, n={n}): "
        f"bare {bare_us:.0f} µs, full {full_us:.0f} µs -> {bare_us / full_us:.0%} of bare's rate"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1200, help="taps a round of every app (default 1200)")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight (default 16)")
    parser.add_argument("--rounds", type=int, default=4, help="rounds of every case (default 4)")
    parser.add_argument(
        "--sets",
        type=int,
        default=3,
        help="sets of processes a round, each started anew and tapped for its share of --n (default 3)",
    )
    parser.add_argument(
        "--stores",
        default="memory,sqlite",
        help="the full app's stores, comma-separated: memory, sqlite (a temporary file)",
    )
    parser.add_argument("--store", default="memory", help=argparse.SUPPRESS)  # the app process's store URL
    parser.add_argument("--serve", choices=("bare", "full"), help=argparse.SUPPRESS)
    parser.add_argument("--api", help=argparse.SUPPRESS)
    parser.add_argument("--replay", help=argparse.SUPPRESS)
    parser.add_argument("--page-tool", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve == "bare":
        replayed = json.loads(Path(args.replay).read_text()) if args.replay else None
        asyncio.run(serve_bare(args.api, replayed, args.page_tool))
    elif args.serve == "full":
        asyncio.run(serve_full(args.api, args.store))
    else:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            stores = [st.strip() for st in args.stores.split(",") if st.strip()]
            unknown = [st for st in stores if st not in ("memory", "sqlite")]
            if unknown or not stores:
                parser.error(f"--stores takes memory and/or sqlite, comma-separated; got {args.stores!r}")
            if args.rounds < 2 or not 1 <= args.concurrency <= args.n:
                parser.error("--rounds must be at least 2 (a spread needs two) and --concurrency from 1 to --n")
            if not 1 <= args.sets <= args.n // args.concurrency:
                parser.error("--sets must be at least 1 and leave every set at least --concurrency taps of --n")
            asyncio.run(main(args.n, args.concurrency, args.rounds, args.sets, stores, Path(tmp)))
