"""The playground answers its own page only (ASGI middleware in front of the Starlette app).

The playground acts as any persona for whoever can reach it, so it checks who is asking before anything else:

* ``Host`` must name this machine (``127.0.0.1``, ``localhost``, ``[::1]``) or a host the playground was started
  on or told to allow; anything else is refused with 421 (a page on another name that resolves to 127.0.0.1,
  DNS rebinding, never reaches the app);
* a request that changes something (any method but GET, HEAD and OPTIONS) that carries an ``Origin`` must come
  from the page itself (the same host and port as ``Host``); another origin, or ``null``, is refused with 403.
  Requests without ``Origin`` (scripts, the tour, curl) are not a browser's cross-site request and pass.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

__all__ = ["LOCAL_HOSTS", "LocalOnly", "hostname"]

#: The names of this machine the playground always answers to.
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Bind-all addresses: serving on them says nothing about the name the page is opened with.
ANY_ADDRESS = frozenset({"0.0.0.0", "::", ""})

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def hostname(host: str) -> str | None:
    """``"LocalHost:8750"`` -> ``"localhost"``, ``"[::1]:8750"`` -> ``"::1"``; ``None`` when it is no host."""
    try:
        parts = urlsplit(f"//{host.strip()}")
        parts.port  # noqa: B018  # a bad port raises here
    except ValueError:
        return None
    return parts.hostname or None


class LocalOnly:
    """Refuses a foreign ``Host`` (421) and a foreign ``Origin`` on state-changing requests (403).

    ``allowed_hosts``: more host names to answer to (the ``--host`` the playground serves on, a name of your
    own); the local names are always allowed."""

    def __init__(self, app: App, allowed_hosts: Iterable[str] = ()) -> None:
        self.app = app
        extra = {hostname(h) for h in allowed_hosts if h.strip() not in ANY_ADDRESS}
        self.allowed = frozenset(LOCAL_HOSTS | {h for h in extra if h})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if hostname(host) not in self.allowed:
            names = ", ".join(sorted(self.allowed))
            await _refuse(
                send,
                421,
                f"This playground answers only on {names} (Host {host!r} is not one of them; "
                "start it with --allow-host NAME to add one).",
            )
            return
        origin = headers.get("origin")
        if origin is not None and scope.get("method", "GET") not in SAFE_METHODS and not _same(origin, host):
            await _refuse(send, 403, f"Origin {origin!r} may not change this playground: only its own page may.")
            return
        await self.app(scope, receive, send)


def _same(origin: str, host: str) -> bool:
    """Whether ``origin`` (``http://127.0.0.1:8750``) is the page's own: the same host and port as ``Host``."""
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and parts.netloc.lower() == host.strip().lower() and bool(parts.netloc)


async def _refuse(send: Send, status: int, text: str) -> None:
    body = json.dumps({"ok": False, "error": text}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
