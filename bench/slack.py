"""Slack block actions per second: the full SlackBot (slack-bolt + Assistant + store + Web API calls) against bare
slack-bolt handlers — one that only acks, and a fair peer that acks and then does the same work and makes the same
Web API calls the full app makes for that tap (described below) — through the same harness, with per-round ratios.

    PYTHONPATH=. python bench/slack.py [--n 2000] [--concurrency 16] [--rounds 5] [--stores memory,sqlite]

The harness: each app runs in a process of its own, served over HTTP on 127.0.0.1 (bolt's aiohttp adapter,
signature verification on), and calls a local Slack Web API (``SlackApiServer``) that lives, with the client,
in this process — as Slack lives on other machines. ``n`` correctly signed ``block_actions`` requests, signed
beforehand, are POSTed with ``concurrency`` in flight over one keep-alive session, after a warm-up of 50.
Every bare handler gets byte-for-byte the same kind of request as the full app (a tap on a copy of the same card).
Besides its fair peer, every case has a bare handler that only acks.

The fair peer of each case does the work a bolt app without the kit would do for that tap, and makes the
same Web API calls, in a task of its own after the ack, through the app's ``AsyncWebClient`` with one shared
keep-alive session, as ``SlackBot`` does:

* one tap redelivered: the same tap delivered again and again; the store de-duplicates it, nothing is called
  after the first — the peer acks (and calls nothing);
* a tap on a decided card: the approval is read and the refusal is posted with ``chat.postEphemeral`` — the
  peer posts the same refusal (replayed from the full app's last tap, aimed at the tapped message and user);
* a page tap: the stored view is read, the tool runs and the card is ``chat.update``-d; once with a ``def``
  tool (it runs on a worker thread) and once with the same tool as ``async def`` (on the loop) — the peer reads
  the page from the button's value, runs the same tool function (``Notes.list_notes``, called, or
  ``list_notes_async``, awaited), builds the page with slack_sdk's Block Kit models (header, items, page line,
  Previous/Next buttons) and ``chat.update``-s the tapped message.

Rounds alternate within every case (full app, peers; then peers, full app; ...), and each round gives the full
app's ratio to its fair peer from the CPU seconds per tap of each app's own process (the Slack API server and
the harness run in this one, and are not counted), over the same wall-clock seconds as its rates: the second
table prints every round's ratio, the median and the spread (a row is decided when the spread is under 5
points; the target is ≥ 90 %).

Every case runs with each store of ``--stores`` (default both: in memory, and SQLite on a temporary file with
``synchronous=FULL``), the full app on that store; the bare apps use none.

Columns (medians of the rounds): *calls/tap* counts the Web API calls the taps caused; *acks/s* counts HTTP
answers (what Slack waits for); *done/s* also waits until every call caused by the taps has reached the Web API;
*app CPU* is the app process's CPU time per tap; *kit CPU* is the full app's minus its fair peer's.
Ratios: acks/s against the bare handler's acks/s, done/s against its done/s (for the ack-only bare, done is ack).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import re
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

from milpa_chat import Param, ToolRegistry, ToolResult, tool

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _ratios import header, line

from milpa_chat.testing.slack import SlackApiServer, SlackEvents, SlackMessage, SlackRequest

if TYPE_CHECKING:
    from slack_bolt.async_app import AsyncApp

    from milpa_chat.bots.slack import SlackBot

TOKEN, SECRET, CHANNEL, USER = "xoxb-bench", "bench-signing-secret", "C0BENCH", "U1001"
WARMUP = 50
_RETRIES = itertools.count(1)
CLOCK_TICKS = 100  # os.sysconf("SC_CLK_TCK") on Linux
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
async def app_process(
    kind: str,
    api: SlackApiServer,
    store_url: str,
    replay: Path | None = None,
    page_tool: str | None = None,
) -> AsyncIterator[AppProcess]:
    extra = ["--replay", str(replay)] if replay is not None else []
    extra += ["--page-tool", page_tool] if page_tool else []
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--serve",
        kind,
        "--api",
        api.base_url,
        "--store",
        store_url,
        *extra,
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
    acks_per_s: float
    done_per_s: float
    cpu_us: float
    calls_per_tap: float


async def measure(
    app: AppProcess,
    api: SlackApiServer,
    card: SlackMessage,
    action_id: str,
    *,
    per_tap: int,
    n: int,
    concurrency: int,
    redelivered: bool = False,
    first: int = 0,
) -> tuple[Measured, SlackMessage]:
    """``per_tap`` calls expected a tap, and ``first`` more for the first delivery (warm-up). Also returns the
    card as the measured taps carried it (a bare app is tapped on a copy of that)."""
    async with SlackEvents(app.url, SECRET, api=api, ack_timeout=30) as slack:
        once = slack.payloads.click(card, action_id, user=USER)
        shown = snapshot(card)

        def taps(k: int) -> list[SlackRequest]:
            if redelivered:  # one tap delivered k times: the same action_ts, so the same delivery id
                return [once] * k
            return [slack.payloads.click(card, action_id, user=USER) for _ in range(k)]

        base = len(work(api))
        await fire(slack, taps(WARMUP), concurrency, redelivered=redelivered)
        await wait_work(api, base + first + per_tap * WARMUP)
        requests, base, cpu = taps(n), len(work(api)), app.cpu_seconds()
        shown = shown if redelivered else snapshot(card)
        start = time.perf_counter()
        await fire(slack, requests, concurrency, redelivered=redelivered)
        acked = time.perf_counter() - start
        await wait_work(api, base + per_tap * n)
        done = time.perf_counter() - start
        made = work(api)[base:]
        failed = [c for c in made if not c.ok]
        if failed:
            raise RuntimeError(f"{len(failed)} of the taps' Web API calls failed, e.g. {failed[0]}")
        calls = len(made)
        return Measured(n / acked, n / done, (app.cpu_seconds() - cpu) / n * 1e6, calls / n), shown


def snapshot(card: SlackMessage) -> SlackMessage:
    return SlackMessage(card.channel, card.ts, card.text, card.user, list(card.blocks))


async def full_setup(kind: str, app: AppProcess, api: SlackApiServer) -> tuple[SlackMessage, str]:
    """The card the taps go to: a decided confirm card (as first shown) or a paginated result."""
    kind = "page" if kind == "redelivered" else kind
    paging = kind.startswith("page")
    async with SlackEvents(app.url, SECRET, api=api) as slack:
        command = {"page": "list_notes", "page_async": "list_notes_async"}.get(kind, "delete_note 1")
        await slack.command("/milpa", command, user=USER, channel=CHANNEL)
        card = await api.wait_for_message(CHANNEL, lambda m: bool(m.buttons()))
        word = "Next" if paging else "Confirm"
        action = next(b["action_id"] for b in card.buttons() if word in b["text"]["text"])
        if paging:
            return card, action
        shown = snapshot(card)
        await slack.click(card, action, user=USER)
        # until the tool has run: the card edited twice and the result posted (nothing left to overlap the taps)
        await api.wait_for(lambda: len(api.calls("chat.update")) >= 1 and len(api.calls("chat.postMessage")) >= 2)
        return shown, action


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


@dataclass
class Trio:
    """One round of a case: the bare app acking only, the fair peer (the bare app doing the same work: the
    same calls, or for a page tap the same tool run and page drawn), the full app."""

    ack_only: Measured
    same_calls: Measured | None  # None: the taps cause no calls, so the ack-only bare does the same work
    full: Measured
    calls: list[dict[str, Any]]  # what the full app called for its last tap, replayed by the same-calls bare
    tapped: SlackMessage | None = None  # the card the full app's taps carried (the bare apps get a copy)
    action: str = ""

    def ratio(self) -> float:
        """The full app's rate relative to its fair peer's this round: peer CPU per tap / full CPU per tap."""
        peer = self.same_calls or self.ack_only
        return peer.cpu_us / self.full.cpu_us


PAGE_TOOLS = {"page": "list_notes", "page_async": "list_notes_async"}


async def run_full(
    case: Case, store_url: str, n: int, concurrency: int
) -> tuple[Measured, list[Any], SlackMessage, str]:
    async with SlackApiServer(TOKEN, channels=[CHANNEL]) as api, app_process("full", api, store_url) as app:
        card, action = await full_setup(case.kind, app, api)
        full, tapped = await measure(
            app,
            api,
            card,
            action,
            per_tap=case.per_tap,
            n=n,
            concurrency=concurrency,
            redelivered=case.kind == "redelivered",
            first=case.first,
        )
        made = [{"method": c.method, "args": c.args} for c in work(api)[len(work(api)) - case.per_tap :]]
    return full, made, tapped, action


async def run_bare(
    case: Case, store_url: str, n: int, concurrency: int, tmp: Path, made: list[Any], tapped: SlackMessage, action: str
) -> list[Measured]:
    """The ack-only bare app, then (when the taps cause calls) the fair peer."""
    results: list[Measured] = []
    page_tool = PAGE_TOOLS.get(case.kind)
    for replay in ([], made) if made else ([],):
        replay_file = tmp / f"{case.kind}.calls.json"
        replay_file.write_text(json.dumps(replay))
        async with (
            SlackApiServer(TOKEN, channels=[CHANNEL]) as api,
            app_process(
                "bare", api, store_url, replay_file if replay and not page_tool else None, page_tool if replay else None
            ) as app,
        ):
            bare_on = await bare_card(api, tapped)
            measured, _ = await measure(
                app,
                api,
                bare_on,
                action,
                per_tap=len(replay),
                n=n,
                concurrency=concurrency,
                redelivered=case.kind == "redelivered",
            )
            results.append(measured)
    return results


async def one_case(case: Case, store_url: str, n: int, concurrency: int, tmp: Path, before: Trio | None = None) -> Trio:
    """One round: the full app and its peers, in turn. With ``before`` (the case's previous round), the peers
    run first (on the card and calls recorded then), so a row alternates full, peer, peer, full, full, ..."""
    if before is not None and before.tapped is not None:
        bare = await run_bare(case, store_url, n, concurrency, tmp, before.calls, before.tapped, before.action)
        full, made, tapped, action = await run_full(case, store_url, n, concurrency)
    else:
        full, made, tapped, action = await run_full(case, store_url, n, concurrency)
        bare = await run_bare(case, store_url, n, concurrency, tmp, made, tapped, action)
    return Trio(bare[0], bare[1] if made else None, full, made, tapped, action)


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


def table(results: dict[tuple[str, str], list[Trio]], stores: list[str]) -> str:
    def med(values: list[Measured], name: str) -> float:
        return statistics.median(getattr(m, name) for m in values)

    def ratio(row: list[Measured], base: list[Measured]) -> str:
        return (
            f"{med(row, 'acks_per_s') / med(base, 'acks_per_s'):.0%} / "
            f"{med(row, 'done_per_s') / med(base, 'done_per_s'):.0%}"
        )

    lines = [
        "| case | store | app | calls/tap | acks/s | done/s | app CPU µs/tap | vs bare acking only (acks / done) "
        "| vs fair peer (acks / done) | kit CPU µs/tap |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for case, store in ((c, st) for c in CASES for st in stores):
        trios = results[(store, case.kind)]
        only = [t.ack_only for t in trios]
        same = [t.same_calls or t.ack_only for t in trios]
        rows: list[tuple[str, list[Measured], str, str, str]] = [("bare, ack only", only, "baseline", "—", "—")]
        if trios[0].same_calls is not None:
            peer = "bare, ack + same work" if case.kind in PAGE_TOOLS else "bare, ack + same calls"
            rows.append((peer, same, ratio(same, only), "baseline", "—"))
        full = [t.full for t in trios]
        kit = f"{med(full, 'cpu_us') - med(same, 'cpu_us'):,.0f}"
        same_ratio = ratio(full, same) + ("" if trios[0].same_calls is not None else " (no calls: = ack only)")
        rows.append(("full SlackBot", full, ratio(full, only), same_ratio, kit))
        for app, measured, vs_only, vs_same, kit_us in rows:
            lines.append(
                f"| {case.title} | {store if app.startswith('full') else '—'} | {app} | "
                f"{med(measured, 'calls_per_tap'):.2g} | "
                f"{med(measured, 'acks_per_s'):,.0f} | {med(measured, 'done_per_s'):,.0f} | "
                f"{med(measured, 'cpu_us'):,.0f} | {vs_only} | {vs_same} | {kit_us} |"
            )
    lines += ["", "Interleaved rounds, the full app against its fair peer (CPU per tap of each app's own process):", ""]
    lines += header()
    for case, store in ((c, st) for c in CASES for st in stores):
        trios = results[(store, case.kind)]
        peer = (
            "bare, ack + same work (tool run, Block Kit page, chat.update)"
            if case.kind in PAGE_TOOLS
            else "bare, ack + same calls"
            if trios[0].same_calls is not None
            else "bare, ack only (no calls)"
        )
        lines.append(line(f"{case.title} ({store})", peer, [t.ratio() for t in trios]))
    return "\n".join(lines)


async def main(n: int, concurrency: int, rounds: int, stores: list[str], tmp: Path) -> None:
    started = time.perf_counter()
    results: dict[tuple[str, str], list[Trio]] = {(st, case.kind): [] for case in CASES for st in stores}
    for number in range(rounds):
        for case, store in ((c, st) for c in CASES for st in stores):
            store_url = "memory://" if store == "memory" else str(tmp / f"{case.kind}{number}.db")
            done = results[(store, case.kind)]
            before = done[-1] if number % 2 else None  # odd rounds: the peers first (ABAB within the row)
            done.append(await one_case(case, store_url, n, concurrency, tmp, before))
    bare_us, full_us = await dispatch_us(n)
    print(
        f"Python {sys.version.split()[0]}, n={n} taps per row, {concurrency} in flight, stores: {', '.join(stores)}, "
        f"medians of {rounds} rounds; {time.perf_counter() - started:.0f} s\n"
    )
    print(table(results, stores))
    print(
        "\nWeb API calls the full app made for one tap (recorded, and replayed by the same-calls bare app; "
        "argument bytes as JSON):"
    )
    for case in CASES:
        made = results[(stores[0], case.kind)][0].calls
        listed = ", ".join(f"{c['method']} ({len(json.dumps(c['args']).encode())} B)" for c in made)
        print(f"* {case.title}: {listed or 'none'}")
    print(
        f"\nIn-process app.async_dispatch of one redelivered tap (no HTTP, one at a time, n={n}): "
        f"bare {bare_us:.0f} µs, full {full_us:.0f} µs -> {bare_us / full_us:.0%} of bare's rate"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="taps per row (default 2000)")
    parser.add_argument("--concurrency", type=int, default=16, help="requests in flight (default 16)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of every case, interleaved (default 5)")
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
            asyncio.run(main(args.n, args.concurrency, args.rounds, stores, Path(tmp)))
