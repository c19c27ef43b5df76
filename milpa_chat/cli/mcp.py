"""``milpa-chat mcp``: serve a registry over MCP (stdio by default, streamable HTTP with ``--http``).

    milpa-chat mcp --tools pkg.mod:obj                          stdio, for an MCP host to spawn
    milpa-chat mcp --tools pkg.mod:obj --http 8765 --tokens tokens.json
    milpa-chat mcp proxy --config proxy.toml [--http 8765]      other MCP servers, gated (see proxy_config)

``obj`` is an :class:`~milpa_chat.mcp.McpServer` (or a factory returning one: a server that also
starts a chat bot for its approval cards), a ``ToolRegistry`` or a factory returning one, or
anything ``milpa-chat tools`` accepts (a module, class or instance with ``@tool`` methods).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from milpa_chat.mcp.server import McpServer

__all__ = ["add_parser", "cmd_mcp", "cmd_proxy", "load_server", "main"]


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    p = sub.add_parser("mcp", help="serve the tools over MCP (stdio, or streamable HTTP with --http)")
    configure(p)
    return p


def cmd_proxy(ns: argparse.Namespace) -> int:
    """``milpa-chat mcp proxy --config FILE``: serve the upstreams of FILE, gated, until stopped."""
    from milpa_chat.errors import DeclarationError
    from milpa_chat.mcp.proxy_config import load_proxy_config
    from milpa_chat.mcp.proxy_run import run_proxy
    from milpa_chat.mcp.upstream import UpstreamError

    try:
        config = load_proxy_config(ns.config)
        if ns.http is not None:
            print(f"milpa-chat: MCP proxy over streamable HTTP at http://{ns.host}:{ns.http}{ns.path}", file=sys.stderr)
        asyncio.run(run_proxy(config, http=ns.http, host=ns.host, path=ns.path))
    except (DeclarationError, UpstreamError) as exc:
        raise _usage_error(str(exc)) from exc
    except KeyboardInterrupt:
        pass
    return 0


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--tools", default="milpa_chat.demo:tools", help="pkg.mod:obj: an McpServer, a registry, or tools")
    p.add_argument("--http", type=int, default=None, metavar="PORT", help="serve streamable HTTP on this port")
    p.add_argument("--host", default="127.0.0.1", help="HTTP address to bind (default 127.0.0.1)")
    p.add_argument("--path", default="/mcp", help="HTTP path of the MCP endpoint (default /mcp)")
    p.add_argument(
        "--tokens",
        default=None,
        metavar="FILE",
        help='JSON {"<token or sha256:hex>": {"principal": "mcp:name", "scopes": [...]}} (HTTP callers)',
    )
    p.add_argument("--principal", default=None, help="the principal of the stdio caller (default: stdio)")
    p.add_argument("--scopes", default=None, help="comma-separated scopes of the stdio caller (default: *)")
    inner = p.add_subparsers(dest="mcp_command", metavar="proxy")
    proxy = inner.add_parser("proxy", help="put the approvals in front of other MCP servers (a TOML file)")
    proxy.add_argument("--config", required=True, metavar="FILE", help="the proxy file (docs/mcp.md)")
    proxy.add_argument("--http", type=int, default=None, metavar="PORT", help="serve streamable HTTP on this port")
    proxy.add_argument("--host", default="127.0.0.1", help="HTTP address to bind (default 127.0.0.1)")
    proxy.add_argument("--path", default="/mcp", help="HTTP path of the MCP endpoint (default /mcp)")


def _check_port(host: str, port: int) -> None:
    """A port another program holds: one line and exit 2, before the URL is announced."""
    from milpa_chat._ports import PortInUseError, check_port

    try:
        check_port(host, port, option="--http PORT")
    except PortInUseError as exc:
        raise _usage_error(str(exc)) from exc


def _usage_error(message: str) -> Exception:
    from milpa_chat.cli.errors import CliError

    return CliError(message)


def _resolve(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise _usage_error(f"cannot import {module_name!r} ({exc}); pass --tools package.module:object") from exc
    for part in attr.split(".") if attr else ():
        if not hasattr(obj, part):
            raise _usage_error(f"{module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def load_server(spec: str) -> McpServer:
    """``pkg.mod:obj`` -> an :class:`McpServer` (see the module docstring for what ``obj`` may be)."""
    from milpa_chat.mcp.server import McpServer
    from milpa_chat.runtime.registry import ToolRegistry

    obj = _resolve(spec)
    factory = callable(obj) and not isinstance(obj, ToolRegistry | McpServer) and not hasattr(obj, "__milpa_tool__")
    if factory:  # a factory function, or a class to instantiate
        obj = obj()
    if isinstance(obj, McpServer):
        return obj
    if not isinstance(obj, ToolRegistry):
        registry = ToolRegistry()
        if registry.scan(obj) == 0:
            raise _usage_error(f"{spec!r} declares no @tool functions or methods")
        obj = registry
    return McpServer(obj)


def cmd_mcp(ns: argparse.Namespace) -> int:
    from milpa_chat.errors import DeclarationError
    from milpa_chat.mcp.auth import BearerTokens, McpCaller

    if getattr(ns, "mcp_command", None) == "proxy":
        return cmd_proxy(ns)

    server = load_server(ns.tools)
    if ns.principal is not None or ns.scopes is not None:
        scopes = ("*",) if ns.scopes is None else tuple(s for s in ns.scopes.split(",") if s.strip())
        server.stdio_caller = McpCaller.stdio(ns.principal or "stdio", scopes)
    try:
        if ns.tokens is not None:
            server.tokens = BearerTokens.from_file(ns.tokens)
        if ns.http is None:
            asyncio.run(server.run_stdio())
        else:
            if server.tokens is None:
                raise _usage_error("--http needs --tokens FILE: every HTTP caller is named by a bearer token")
            _check_port(ns.host, ns.http)
            print(f"milpa-chat: MCP over streamable HTTP at http://{ns.host}:{ns.http}{ns.path}", file=sys.stderr)
            asyncio.run(server.run_http(host=ns.host, port=ns.http, path=ns.path))
    except DeclarationError as exc:
        raise _usage_error(str(exc)) from exc
    except KeyboardInterrupt:
        pass
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m milpa_chat.mcp``: the same options as ``milpa-chat mcp``."""
    from milpa_chat.cli.errors import CliError

    parser = argparse.ArgumentParser(prog="python -m milpa_chat.mcp", description="Serve tools over MCP.")
    configure(parser)
    try:
        return cmd_mcp(parser.parse_args(argv))
    except CliError as exc:
        print(f"milpa-chat: {exc}", file=sys.stderr)
        return 2
