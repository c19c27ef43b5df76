"""The playground's web app (Starlette): the page, its live feed (server-sent events) and its actions.

Every action is what a platform would deliver to the adapters: ``POST /api/telegram/send`` and
``/api/telegram/tap`` put an update on the local Bot API server (a message may reply to another, as the answer
to a ForceReply prompt does), ``/api/slack/send``, ``/api/slack/click`` and ``/api/slack/submit`` send a signed
slash command, DM event, ``block_actions`` or ``view_submission`` request to the Slack app; ``/api/slack/pane``
opens the app's assistant pane (``assistant_thread_started``) and ``/api/slack/send`` with ``thread_ts`` writes
in it. ``GET /api/feed`` (JSON,
long poll) and ``GET /api/stream`` (SSE) serve the feed of :mod:`milpa_chat.playground.feed`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from milpa_chat.playground.feed import Feed
from milpa_chat.playground.guard import LocalOnly
from milpa_chat.playground.tour import Pace
from milpa_chat.playground.world import (
    SLACK_APPROVERS,
    SLACK_WORK,
    TELEGRAM_APPROVERS,
    PlaygroundError,
    World,
)

__all__ = ["STATIC", "Playground", "create_app"]

STATIC = Path(__file__).resolve().parent / "static"
Handler = Callable[[Request], Awaitable[Response]]


class Playground:
    """The running world, its feed and the tour task (if one was started from the page)."""

    def __init__(self, world: World) -> None:
        self.world = world
        self.feed = Feed(world.telegram, world.slack_api, world.modals)
        self.tour: asyncio.Task[Any] | None = None
        self.pace = Pace()

    def state(self) -> dict[str, Any]:
        world = self.world
        return {
            "personas": [p.to_json() for p in world.personas.values()],
            "telegram": {"bot": world.telegram.bot.first_name, "approvers": TELEGRAM_APPROVERS,
                         "approvers_title": "Approvers"},
            "slack": {"work": SLACK_WORK, "approvers": SLACK_APPROVERS,
                      "bot_user": world.slack_api.workspace.bot_user_id,
                      "channels": {SLACK_WORK: "general", SLACK_APPROVERS: "approvals"}},
            "agent": {"enabled": world.agent_setup.enabled, "text": world.agent_setup.description,
                      "scripted": world.agent_setup.scripted},
            "tools": sorted(t.name for t in world.assistant.registry if t.name != "resolve_verification"),
            "clock_offset": world.clock.offset,
            "tour_running": self.tour is not None and not self.tour.done(),
        }  # fmt: skip


def _field(body: dict[str, Any], name: str, kind: type[Any]) -> Any:
    value = body.get(name)
    if kind is int and isinstance(value, str) and value.lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise PlaygroundError(f"the request needs {name!r} ({kind.__name__}), got {value!r}")
    return value


async def _body(request: Request) -> dict[str, Any]:
    # JSON only: a cross-site form cannot send it without the browser asking first (and being refused)
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise PlaygroundError("the request body must be a JSON object sent with Content-Type: application/json")
    try:
        body = await request.json()
    except ValueError:
        raise PlaygroundError("the request body must be a JSON object") from None
    if not isinstance(body, dict):
        raise PlaygroundError("the request body must be a JSON object")
    return body


def _guarded(handler: Handler) -> Handler:
    async def run(request: Request) -> Response:
        try:
            return await handler(request)
        except PlaygroundError as exc:
            return JSONResponse({"ok": False, "error": str(exc)}, status_code=400)

    return run


def create_app(make_world: Callable[[], World] | World, *, allowed_hosts: Iterable[str] = ()) -> Starlette:
    """The ASGI app. Given a factory, the world starts in the app's lifespan and stops (its temporary store
    removed) with it; given a started :class:`World`, the app uses it and leaves stopping it to the caller.

    It answers only requests whose ``Host`` is this machine (``127.0.0.1``, ``localhost``, ``[::1]``) or one of
    ``allowed_hosts``, and changes nothing for a request from another page's ``Origin``
    (:class:`~milpa_chat.playground.guard.LocalOnly`)."""
    holder: dict[str, Playground] = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with _entered(make_world) as world:
            play = Playground(world)
            holder["play"] = app.state.playground = play
            play.feed.start()
            try:
                yield
            finally:
                if play.tour is not None:
                    play.tour.cancel()
                await play.feed.stop()

    def play() -> Playground:
        return holder["play"]

    routes = [
        Route("/", _page),
        Route("/api/state", _guarded(lambda _r: _json(play().state()))),
        Route("/api/feed", _guarded(lambda r: _feed(play(), r))),
        Route("/api/stream", _guarded(lambda r: _stream(play(), r))),
        Route("/api/inbox", _guarded(lambda _r: _inbox(play()))),
        Route("/api/telegram/send", _guarded(lambda r: _tg_send(play(), r)), methods=["POST"]),
        Route("/api/telegram/tap", _guarded(lambda r: _tg_tap(play(), r)), methods=["POST"]),
        Route("/api/telegram/file/{file_id}", _guarded(lambda r: _tg_file(play(), r))),
        Route("/api/slack/send", _guarded(lambda r: _slack_send(play(), r)), methods=["POST"]),
        Route("/api/slack/pane", _guarded(lambda r: _slack_pane(play(), r)), methods=["POST"]),
        Route("/api/slack/click", _guarded(lambda r: _slack_click(play(), r)), methods=["POST"]),
        Route("/api/slack/submit", _guarded(lambda r: _slack_submit(play(), r)), methods=["POST"]),
        Route("/api/slack/close", _guarded(lambda r: _slack_close(play(), r)), methods=["POST"]),
        Route("/api/clock", _guarded(lambda r: _clock(play(), r)), methods=["POST"]),
        Route("/api/tour", _guarded(lambda r: _tour(play(), r)), methods=["POST"]),
        Route("/favicon.ico", lambda _r: FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    return Starlette(
        routes=routes, lifespan=lifespan, middleware=[Middleware(LocalOnly, allowed_hosts=tuple(allowed_hosts))]
    )


@contextlib.asynccontextmanager
async def _entered(make_world: Callable[[], World] | World) -> AsyncIterator[World]:
    if isinstance(make_world, World):
        yield make_world
        return
    async with make_world() as world:
        yield world


async def _page(_request: Request) -> Response:
    return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-store"})


async def _json(data: Any, status: int = 200) -> Response:
    return JSONResponse(data, status_code=status)


def _number(request: Request, name: str, kind: type[int] | type[float], given: str | None = None) -> Any:
    """A query parameter (or ``given``) as a number ≥ 0; 400 naming it otherwise."""
    text = given if given is not None else request.query_params.get(name) or "0"
    try:
        value = kind(text)
    except ValueError:
        value = -1
    if not 0 <= value < float("inf"):
        raise PlaygroundError(f"{name} must be a {kind.__name__} of at least 0, got {text!r}")
    return value


async def _feed(play: Playground, request: Request) -> Response:
    since = _number(request, "since", int)
    wait = min(_number(request, "wait", float), 25.0)
    await play.feed.flush()
    if wait > 0:
        await play.feed.wait(since, wait)
    events = play.feed.since(since)
    return JSONResponse({"events": events, "next": since + len(events)})


async def _stream(play: Playground, request: Request) -> Response:
    start = request.headers.get("last-event-id") or request.query_params.get("since") or "0"
    seq = _number(request, "since", int, start) + (1 if "last-event-id" in request.headers else 0)
    return EventSourceResponse(play.feed.stream(seq), ping=15, headers={"Cache-Control": "no-store"})


async def _inbox(play: Playground) -> Response:
    return JSONResponse({"approvals": await play.world.inbox()})


async def _tg_send(play: Playground, request: Request) -> Response:
    body = await _body(request)
    world = play.world
    persona = world.persona(body.get("persona"))
    text = _field(body, "text", str).strip()
    if not text:
        raise PlaygroundError("type something to send")
    reply_to = _field(body, "reply_to", int) if body.get("reply_to") is not None else None
    update_id = await world.telegram_say(persona, _field(body, "chat", int), text, reply_to)
    await play.feed.flush()
    return JSONResponse({"ok": True, "update_id": update_id})


async def _tg_tap(play: Playground, request: Request) -> Response:
    body = await _body(request)
    world = play.world
    persona = world.persona(body.get("persona"))
    query = await world.telegram_tap(
        persona, _field(body, "chat", int), _field(body, "id", int), _field(body, "data", str)
    )
    await play.feed.flush()
    return JSONResponse({"ok": True, "query": query})


async def _tg_file(play: Playground, request: Request) -> Response:
    found = play.world.telegram.state.files.get(request.path_params["file_id"])
    if found is None:
        raise PlaygroundError("no such file")
    headers = {"Content-Disposition": f'attachment; filename="{found.file_name or "file"}"'}
    return Response(found.content, media_type=found.mime_type or "application/octet-stream", headers=headers)


async def _slack_send(play: Playground, request: Request) -> Response:
    body = await _body(request)
    world = play.world
    persona = world.persona(body.get("persona"))
    channel, text = _field(body, "channel", str), _field(body, "text", str).strip()
    thread_ts = _field(body, "thread_ts", str) if body.get("thread_ts") is not None else None
    if not text:
        raise PlaygroundError("type something to send")
    if not channel.startswith("D"):
        play.feed.note(
            {
                "type": "slack.command",
                "channel": channel,
                "user": persona.slack_id,
                "text": "/milpa " + (text[len("/milpa") :].strip() if text.startswith("/milpa") else text),
            }
        )
    status = await world.slack_say(persona, channel, text, thread_ts)
    await play.feed.flush()
    return JSONResponse({"ok": status == 200, "status": status})


async def _slack_pane(play: Playground, request: Request) -> Response:
    body = await _body(request)
    thread_ts = await play.world.slack_open_pane(play.world.persona(body.get("persona")))
    await play.feed.flush()
    return JSONResponse({"ok": True, "thread_ts": thread_ts})


async def _slack_click(play: Playground, request: Request) -> Response:
    body = await _body(request)
    world = play.world
    persona = world.persona(body.get("persona"))
    value = body.get("value")
    status = await world.slack_click(
        persona,
        _field(body, "channel", str),
        _field(body, "ts", str),
        _field(body, "action_id", str),
        value if isinstance(value, str) else None,
    )
    await play.feed.flush()
    return JSONResponse({"ok": status == 200, "status": status})


async def _slack_submit(play: Playground, request: Request) -> Response:
    body = await _body(request)
    world = play.world
    persona = world.persona(body.get("persona"))
    values = body.get("values") or {}
    if not isinstance(values, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in values.items()):
        raise PlaygroundError(f"the request needs 'values' (block id -> text), got {values!r}")
    errors = await world.slack_submit(persona, _field(body, "view", str), values)
    await play.feed.flush()
    return JSONResponse({"ok": True, "closed": not errors, "errors": errors})


async def _slack_close(play: Playground, request: Request) -> Response:
    body = await _body(request)
    world = play.world
    world.slack_close(world.persona(body.get("persona")), _field(body, "view", str))
    await play.feed.flush()
    return JSONResponse({"ok": True})


async def _clock(play: Playground, request: Request) -> Response:
    body = await _body(request)
    seconds = body.get("advance")
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        raise PlaygroundError(f"the request needs 'advance' (seconds), got {seconds!r}")
    acted = await play.world.advance(float(seconds))
    await play.feed.flush()
    return JSONResponse({"ok": True, "acted_on": acted, "offset": play.world.clock.offset})


async def _tour(play: Playground, request: Request) -> Response:
    from milpa_chat.playground.tour import run_tour

    await _body(request)  # the page sends {}: anything else is not the page
    if play.tour is not None and not play.tour.done():
        play.pace.skip()  # "Next step" while it plays: on to the next step now
        return JSONResponse({"ok": True, "skipped": True})
    base = str(request.base_url).rstrip("/")

    def step(line: str) -> None:
        play.feed.note({"type": "tour.step", "text": line})

    play.pace = Pace()  # played for a person: readable steps
    play.tour = asyncio.get_running_loop().create_task(run_tour(base, out=step, pace=play.pace))
    return JSONResponse({"ok": True})
