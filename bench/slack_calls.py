"""Python calls per Slack tap, the full SlackBot against bench/slack.py's fair peer, counted with cProfile: a
deterministic companion to bench/slack.py's CPU ratios (which a busy machine makes noisy).

    PYTHONPATH=. python bench/slack_calls.py [--n 200] [--concurrency 1] [--kinds redelivered,decided,page,page_async]
                                             [--store memory] [--top 25]

One process: the app (the full SlackBot, or the fair peer of bench/slack.py) is served over HTTP on 127.0.0.1 by
the main thread's event loop, and only that thread is profiled; the local Slack Web API (``SlackApiServer``) and
the client sending the signed taps run on an event loop in another thread, so neither counts. Each kind is set up
and warmed up as bench/slack.py does; then ``--n`` taps are profiled, until every Web API call they cause has been
answered and the app's work is done. Calls are counted per tap and split by where the called function lives:
bolt, the kit's Slack adapter (``milpa_chat/bots``), the rest of the kit (assistant, runtime, store, renderers),
slack_sdk, aiohttp (server and client), asyncio, the bench's peer code; a call into the standard library or a
builtin counts for the group of its callers (shared in proportion to the calls along each caller edge).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import importlib.util
import pstats
import statistics
import sys
import time
import types
from collections import defaultdict
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from milpa_chat.testing.slack import SlackApiServer, SlackEvents

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("bench_slack", HERE / "slack.py")
assert _spec is not None and _spec.loader is not None
B = importlib.util.module_from_spec(_spec)
sys.modules["bench_slack"] = B
_spec.loader.exec_module(B)

T = TypeVar("T")
GROUPS = (
    ("slack_bolt", "bolt"),
    ("slack_sdk", "slack_sdk"),
    ("milpa_chat/bots", "adapter (bots/slack*)"),
    ("milpa_chat/", "kit core (chat, runtime, store, renderers)"),
    ("/bench/", "peer code (bench)"),
    ("aiohttp", "aiohttp"),
    ("multidict", "aiohttp"),
    ("yarl", "aiohttp"),
    ("asyncio", "asyncio"),
)


def own_group(filename: str) -> str | None:
    for part, group in GROUPS:
        if part in filename:
            return group
    return None


def split(stats: pstats.Stats) -> tuple[dict[str, float], int]:
    """Calls per group (see the module's docstring) and the total."""
    raw: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    memo: dict[Any, dict[str, float]] = {}

    def shares(func: Any, seen: frozenset[Any]) -> dict[str, float]:
        """How one call of ``func`` is shared among groups."""
        if func in memo:
            return memo[func]
        group = own_group(func[0])
        if group is not None:
            found = {group: 1.0}
        else:
            _cc, _nc, _tt, _ct, callers = raw[func]
            total = sum(edge[1] if isinstance(edge, tuple) else edge for edge in callers.values())
            found = defaultdict(float)
            for caller, edge in callers.items():
                count = edge[1] if isinstance(edge, tuple) else edge
                if caller in seen or caller not in raw or not total:
                    continue
                for g, share in shares(caller, seen | {func}).items():
                    found[g] += share * count / total
            if not found:
                found = {"other (top level)": 1.0}
            found = dict(found)
        memo[func] = found
        return found

    calls: dict[str, float] = defaultdict(float)
    grand = 0
    for func, (_cc, nc, _tt, _ct, _callers) in raw.items():
        grand += nc
        for g, share in shares(func, frozenset({func})).items():
            calls[g] += nc * share
    return dict(calls), grand


class Side:
    """One measured app served by this thread's loop: the full SlackBot or the fair peer."""

    def __init__(self, name: str, api: SlackApiServer, url: str, drain: Callable[[], Awaitable[None]]) -> None:
        self.name, self.api, self.drain = name, api, drain
        self.app = types.SimpleNamespace(ready=url)
        self.card: Any = None
        self.action = ""
        self.once: Any = None


def remote(loop: asyncio.AbstractEventLoop, coro: Awaitable[T]) -> Awaitable[T]:
    return asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))  # type: ignore[arg-type]


async def taps(side: Side, n: int, concurrency: int, redelivered: bool, per_tap: int) -> list[Any]:
    """Runs on the API's loop: ``n`` taps, until the calls they cause have reached the Web API."""
    async with SlackEvents(side.app.ready, B.SECRET, api=side.api, ack_timeout=30) as slack:
        if redelivered:
            if side.once is None:
                side.once = slack.payloads.click(side.card, side.action, user=B.USER)
            requests = [side.once] * n
        else:
            requests = [slack.payloads.click(side.card, side.action, user=B.USER) for _ in range(n)]
        base = len(B.work(side.api))
        await B.fire(slack, requests, concurrency, redelivered=redelivered)
        await B.wait_work(side.api, base + per_tap * n)
    return B.work(side.api)[base:]


async def serve(application: Any) -> tuple[str, Any]:
    from aiohttp import web

    runner = web.AppRunner(application, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return f"http://127.0.0.1:{runner.addresses[0][1]}/slack/events", runner


async def settle(drain: Callable[[], Awaitable[None]]) -> None:
    await drain()
    for _ in range(3):
        await asyncio.sleep(0.01)
    await drain()


async def measure(
    side: Side, loop: asyncio.AbstractEventLoop, n: int, concurrency: int, redelivered: bool, per_tap: int
) -> tuple[pstats.Stats, list[Any]]:
    await remote(loop, taps(side, B.WARMUP, concurrency, redelivered, per_tap))
    await settle(side.drain)
    profile = cProfile.Profile()
    profile.enable()
    made = await remote(loop, taps(side, n, concurrency, redelivered, per_tap))
    await settle(side.drain)
    profile.disable()
    return pstats.Stats(profile), made


#: Where the kit's calls go (``--stages``): a call counts for the innermost of these functions it is made under.
STAGES = {
    ("slack_serving.py", "endpoint"): "aiohttp endpoint (read, headers, answer)",
    ("slack_guard.py", "check"): "guard: signature, freshness, replay",
    ("slack_guard.py", "parse"): "guard: body -> bolt request",
    ("async_app.py", "async_dispatch"): "bolt dispatch (middleware, matching, ack)",
    ("slack.py", "listener"): "adapter listener (inbound, de-dup, task)",
    ("slack.py", "_handle"): "adapter task (_handle, naming)",
    ("assistant.py", "_dispatch"): "assistant: de-dup, routes",
    ("taps.py", "handle"): "chat: tap route",
    ("flows.py", "on_tap"): "chat: approval tap",
    ("pages.py", "handle"): "chat: page tap",
    ("assistant.py", "present"): "chat: present the result",
    ("registry.py", "call"): "runtime: tool call",
    ("slack.py", "render_message"): "renderer: Block Kit",
    ("slack_transport.py", "edit"): "adapter transport",
    ("slack_transport.py", "answer"): "adapter transport",
    ("async_base_client.py", "api_call"): "slack_sdk Web API call",
}


class StageCounter:
    """``sys.setprofile`` hook: Python and C calls of this thread, each counted for its innermost stage."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = defaultdict(int)
        self.names: dict[Any, str | None] = {}

    def stage(self, code: Any) -> str | None:
        if code not in self.names:
            self.names[code] = STAGES.get((code.co_filename.rsplit("/", 1)[-1], code.co_name))
        return self.names[code]

    def __call__(self, frame: Any, event: str, _arg: Any) -> None:
        if event not in ("call", "c_call"):
            return
        found = None
        while frame is not None and found is None:
            found = self.stage(frame.f_code)
            frame = frame.f_back
        self.counts[found or "loop, HTTP server (aiohttp, asyncio)"] += 1


async def stages(
    side: Side, loop: asyncio.AbstractEventLoop, n: int, redelivered: bool, per_tap: int
) -> dict[str, int]:
    counter = StageCounter()
    sys.setprofile(counter)
    try:
        await remote(loop, taps(side, n, 1, redelivered, per_tap))
        await settle(side.drain)
    finally:
        sys.setprofile(None)
    return dict(counter.counts)


async def cpu_us(
    side: Side, loop: asyncio.AbstractEventLoop, n: int, concurrency: int, redelivered: bool, per_tap: int
) -> float:
    """CPU µs per tap of the app (this process but the Web API's threads), no profiler."""
    start = app_cpu()
    await remote(loop, taps(side, n, concurrency, redelivered, per_tap))
    await settle(side.drain)
    return (app_cpu() - start) / n * 1e6


API_THREADS: list[int] = []  # the Web API's and the load's threads: their CPU is not the app's


def app_cpu() -> float:
    """CPU seconds of this process (every thread: the app's loop and its worker threads) but the API's threads."""
    return time.process_time() - sum(time.clock_gettime(time.pthread_getcpuclockid(t)) for t in API_THREADS)


async def run_kind(kind: str, args: argparse.Namespace) -> dict[str, Any]:

    case = next(c for c in B.CASES if c.kind == kind)
    redelivered = kind == "redelivered"
    api = SlackApiServer(B.TOKEN, channels=[B.CHANNEL]).start_in_thread()
    peer_api = SlackApiServer(B.TOKEN, channels=[B.CHANNEL]).start_in_thread()
    loop, peer_loop = api._thread_loop, peer_api._thread_loop
    API_THREADS[:] = [t.ident for t in (api._thread, peer_api._thread) if t is not None and t.ident is not None]
    assert loop is not None and peer_loop is not None
    runners = []
    try:
        bot = B.full_bot(api.base_url, args.store)
        url, runner = await serve(bot.web_app())
        runners.append(runner)
        full = Side("kit", api, url, bot.drain)
        await remote(loop, B.full_setup(kind, full))  # type: ignore[arg-type]
        if redelivered:
            await remote(loop, taps(full, 1, 1, True, case.first))
            await settle(bot.drain)
        stats, made = await measure(full, loop, args.n, args.concurrency, redelivered, case.per_tap)
        staged = await stages(full, loop, args.n, redelivered, case.per_tap) if args.stages else {}
        last = made[len(made) - case.per_tap :] if case.per_tap else []
        replay = [{"method": c.method, "args": c.args} for c in last]

        page_tool = B.PAGE_TOOLS.get(kind)
        peer_app = B.bare_app(peer_api.base_url, None if page_tool else replay, page_tool)
        from aiohttp import web
        from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request

        async def endpoint(request: web.Request) -> web.Response:
            return await to_aiohttp_response(await peer_app.async_dispatch(await to_bolt_request(request)))

        application = web.Application()
        application.router.add_post("/slack/events", endpoint)
        peer_url, peer_runner = await serve(application)
        runners.append(peer_runner)

        async def peer_drain() -> None:
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task() and not t.done()]
            mine = [t for t in others if "page_tap" in repr(t.get_coro()) or "make_calls" in repr(t.get_coro())]
            if mine:
                await asyncio.gather(*mine, return_exceptions=True)

        peer = Side("peer", peer_api, peer_url, peer_drain)
        card = await remote(peer_loop, B.bare_card(peer_api, B.snapshot(full.card)))
        peer.card, peer.action = card, full.action
        peer_stats, peer_made = await measure(peer, peer_loop, args.n, args.concurrency, redelivered, case.per_tap)
        ratios, kit_us, peer_us = [], [], []
        gc.collect()
        gc.freeze()
        for number in range(args.rounds):
            order = [(full, loop), (peer, peer_loop)]
            measured = {}
            for side, side_loop in order if number % 2 == 0 else reversed(order):
                measured[side.name] = await cpu_us(
                    side, side_loop, args.timed, args.timed_concurrency, redelivered, case.per_tap
                )
            kit_us.append(measured["kit"])
            peer_us.append(measured["peer"])
            ratios.append(measured["peer"] / measured["kit"])
        await bot.close()
        return {
            "kit": (stats, made),
            "peer": (peer_stats, peer_made),
            "timed": (kit_us, peer_us, ratios),
            "stages": staged,
        }
    finally:
        for r in runners:
            await r.cleanup()
        api.stop_thread()
        peer_api.stop_thread()


def methods(made: list[Any], n: int) -> str:
    counts: dict[str, int] = defaultdict(int)
    for c in made:
        counts[c.method] += 1
    return ", ".join(f"{m} {k / n:.2f}" for m, k in sorted(counts.items())) or "none"


def report(kind: str, result: dict[str, Any], n: int, top: int, dump: Path | None) -> None:
    print(f"\n## {kind}: {n} taps")
    per: dict[str, dict[str, float]] = {}
    totals: dict[str, float] = {}
    for side in ("kit", "peer"):
        stats, made = result[side]
        groups, grand = split(stats)
        per[side] = {g: c / n for g, c in groups.items()}
        totals[side] = grand / n
        print(f"* {side}: Web API calls per tap: {methods(made, n)}")
        if dump is not None:
            stats.dump_stats(str(dump / f"{kind}.{side}.prof"))
    names = sorted(set(per["kit"]) | set(per["peer"]), key=lambda g: -per["kit"].get(g, 0))
    print("\n| group | kit calls/tap | peer calls/tap | kit - peer |\n|---|---:|---:|---:|")
    for g in names:
        k, p = per["kit"].get(g, 0.0), per["peer"].get(g, 0.0)
        print(f"| {g} | {k:,.0f} | {p:,.0f} | {k - p:+,.0f} |")
    k, p = totals["kit"], totals["peer"]
    print(f"| **total** | **{k:,.0f}** | **{p:,.0f}** | **{k - p:+,.0f}** ({p / k:.0%} of kit's calls) |")
    if result["stages"]:
        print("\nthe kit's calls per tap by stage (Python and C calls, under the innermost stage):\n")
        for name, count in sorted(result["stages"].items(), key=lambda kv: -kv[1]):
            print(f"  {count / n:7.1f}  {name}")
    kit_us, peer_us, ratios = result["timed"]
    if ratios:
        print(
            f"\nCPU of the app per tap, no profiler (median of {len(ratios)} rounds): kit "
            f"{statistics.median(kit_us):.0f} µs, peer {statistics.median(peer_us):.0f} µs; peer/kit "
            f"{statistics.median(ratios):.0%} (rounds: {', '.join(f'{r:.0%}' for r in ratios)})"
        )
    if top:
        kit_stats: dict[Any, Any] = result["kit"][0].stats
        peer_stats: dict[Any, Any] = result["peer"][0].stats
        rows = []
        for func in set(kit_stats) | set(peer_stats):
            kc = kit_stats[func][1] if func in kit_stats else 0
            pc = peer_stats[func][1] if func in peer_stats else 0
            rows.append((kc - pc, kc, pc, func))
        rows.sort(key=lambda r: -r[0])
        print(f"\nfunctions the kit calls most more often than the peer (per tap; top {top}):\n")
        for diff, kc, pc, (file, line, name) in rows[:top]:
            where = file.split("site-packages/")[-1].split("wt-slackcpu2/")[-1]
            print(f"  {diff / n:+7.1f}  kit {kc / n:6.1f}  peer {pc / n:6.1f}  {where}:{line} {name}")


async def main(args: argparse.Namespace) -> None:
    dump = Path(args.dump) if args.dump else None
    if dump is not None:
        dump.mkdir(parents=True, exist_ok=True)
    print(
        f"Python {sys.version.split()[0]}; {args.n} profiled taps a kind after {B.WARMUP} warm-up taps, "
        f"{args.concurrency} in flight; store {args.store}"
    )
    for kind in args.kinds.split(","):
        result = await run_kind(kind.strip(), args)
        report(kind.strip(), result, args.n, args.top, dump)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--kinds", default="redelivered,decided,page,page_async")
    parser.add_argument("--store", default="memory://")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--rounds", type=int, default=6, help="timed rounds (kit and peer in turn, no profiler)")
    parser.add_argument("--timed", type=int, default=300, help="taps of each side a timed round")
    parser.add_argument("--timed-concurrency", type=int, default=16)
    parser.add_argument("--stages", action="store_true", help="the kit's calls per tap by stage (sys.setprofile)")
    parser.add_argument("--dump", default="", help="a folder to write each side's profile to (pstats files)")
    asyncio.run(main(parser.parse_args()))
