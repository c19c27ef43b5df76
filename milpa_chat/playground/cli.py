"""``milpa-chat playground``: the assistant and its approvals in a browser, on local platform servers.

milpa-chat playground                    serve http://127.0.0.1:8750 until Ctrl-C
milpa-chat playground --tour             the same, playing the scripted tour once it is up
milpa-chat playground --check            play the tour headless on a free port; exit 0 when it all passed
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Sequence
from typing import Any

from milpa_chat.playground.world import DEFAULT_TOOLS, PlaygroundError, World

__all__ = ["add_parser", "cmd_playground", "configure", "main"]

DEFAULT_PORT = 8750


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Add ``playground`` to the ``milpa-chat`` subcommands; dispatch with ``cmd_playground(ns)``."""
    p = sub.add_parser("playground", help="the assistant, its Telegram and Slack chats and approvals in a browser")
    configure(p)
    p.set_defaults(func=cmd_playground)
    return p


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--tools", default=DEFAULT_TOOLS, help=f"package.module:object holding the tools (default {DEFAULT_TOOLS})"
    )
    p.add_argument("--identities", default=None, metavar="FILE", help="identities TOML (default: the four personas)")
    p.add_argument("--store", default=None, metavar="PATH", help="SQLite file to keep (default: a temporary one)")
    p.add_argument("--host", default="127.0.0.1", help="address to serve the page on (default 127.0.0.1)")
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="another host name the page may be opened with (repeatable; 127.0.0.1, localhost, [::1] "
        "and --host always are)",
    )
    p.add_argument("--port", type=int, default=None, help=f"port (default {DEFAULT_PORT}; --check: a free one)")
    p.add_argument("--tour", action="store_true", help="play the scripted tour once the page is up")
    p.add_argument("--check", action="store_true", help="play the tour headless and exit 0 (all passed) or 1")


def cmd_playground(ns: argparse.Namespace) -> int:
    """Run the playground as ``ns`` says; returns the exit status."""
    from milpa_chat._extras import require
    from milpa_chat.errors import MissingExtraError

    try:
        for module in ("starlette", "uvicorn", "aiohttp", "telegram", "slack_bolt"):
            require(module, extra="playground", feature="milpa-chat playground")
    except MissingExtraError as exc:
        print(f"milpa-chat playground: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(_serve(ns))
    except KeyboardInterrupt:
        return 0


async def _serve(ns: argparse.Namespace) -> int:
    from milpa_chat._ports import check_port
    from milpa_chat.errors import MilpaError

    try:  # a port another program holds is said before anything starts, in one line
        check_port(ns.host, ns.port if ns.port is not None else (0 if ns.check else DEFAULT_PORT), option="--port")
        world = World(tools=ns.tools, identities=ns.identities, store=ns.store)
        await world.__aenter__()
    except (PlaygroundError, OSError, MilpaError) as exc:
        print(f"milpa-chat playground: {exc}", file=sys.stderr)
        return 2
    try:
        return await _serve_world(ns, world)
    finally:
        await world.close()


async def _serve_world(ns: argparse.Namespace, world: World) -> int:
    import uvicorn

    from milpa_chat.playground.app import create_app
    from milpa_chat.playground.tour import run_tour

    port = ns.port if ns.port is not None else (0 if ns.check else DEFAULT_PORT)
    app = create_app(world, allowed_hosts=(ns.host, *ns.allow_host))
    config = uvicorn.Config(
        app, host=ns.host, port=port, log_level="warning", lifespan="on", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(_run_server(server))
    while not server.started:
        if serving.done():
            print(
                f"milpa-chat playground: could not serve on {ns.host}:{port} (is the port taken? try --port)",
                file=sys.stderr,
            )
            return 2
        await asyncio.sleep(0.05)
    url = f"http://{ns.host}:{_bound_port(server)}"
    print(
        f"milpa-chat playground: open {url}  (Ctrl-C stops it)"
        if not ns.check
        else f"milpa-chat playground --check on {url}",
        flush=True,
    )
    ok = True
    if ns.tour or ns.check:
        ok = await run_tour(url, out=lambda line: print(line, flush=True))
    if ns.check:
        server.should_exit = True
    await serving
    return 0 if ok else 1


async def _run_server(server: Any) -> int:
    try:
        await server.serve()
    except SystemExit as exc:  # uvicorn exits when it cannot bind; it logged why
        return int(exc.code or 1)
    return 0


def _bound_port(server: Any) -> int:
    for listener in server.servers:
        for sock in listener.sockets:
            return int(sock.getsockname()[1])
    raise RuntimeError("the playground's server has no socket")


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m milpa_chat.playground``: the same options as ``milpa-chat playground``."""
    parser = argparse.ArgumentParser(
        prog="python -m milpa_chat.playground", description="The assistant and its approvals in a browser, no tokens."
    )
    configure(parser)
    return cmd_playground(parser.parse_args(argv))
