"""Before a server announces where it listens: is the port free? One line naming the port and the fix if not."""

from __future__ import annotations

import errno
import socket

from milpa_chat.errors import MilpaError


class PortInUseError(MilpaError, OSError):
    """``host:port`` cannot be listened on (another program holds it, or the address is not this machine's)."""


def check_port(host: str, port: int, *, option: str) -> None:
    """Raise :class:`PortInUseError` when ``host:port`` cannot be bound; ``option`` names how to choose another
    port (``--port``, ``PORT``). Port 0 (any free port) always passes."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise PortInUseError(
            f"cannot listen on {host}:{port}: {exc.strerror}; give an address of this machine (127.0.0.1, 0.0.0.0)"
        ) from exc
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind: TIME_WAIT is no hold
        try:
            probe.bind(address)
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise PortInUseError(
                    f"port {port} on {host} is already in use by another program: stop it, or "
                    f"choose another port with {option}"
                ) from exc
            raise PortInUseError(
                f"cannot listen on {host}:{port}: {exc.strerror}; choose another address or port ({option})"
            ) from exc
