"""``milpa-chat mcp proxy --config proxy.toml``: the proxy the file describes, served until stopped.

The file names the store (``store = "proxy.db"``, SQLite; in memory without it), the people
(``identities = "identities.toml"``: approvers and their chats), the HTTP callers' bearer tokens
(``tokens = "tokens.json"``) and, with a ``[telegram]`` table, the bot that shows the approval cards
(its token from the environment variable ``token_env``). Then the proxy serves stdio (for an MCP host
to spawn) or streamable HTTP.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, TextIO

from milpa_chat.errors import DeclarationError

if TYPE_CHECKING:
    from milpa_chat.mcp.proxy import McpProxy
    from milpa_chat.mcp.proxy_config import ProxyConfig
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["build_registry", "run_proxy"]


def build_registry(config: ProxyConfig) -> tuple[ToolRegistry, Any]:
    """The registry the file's store holds, and an ``Assistant`` on it when the file names identities."""
    from milpa_chat.runtime.registry import ToolRegistry
    from milpa_chat.store import MemoryStore, SqliteStore

    path = config.path(config.store)
    store = SqliteStore(path) if path is not None else MemoryStore()
    registry = ToolRegistry(store=store)
    identities = config.path(config.identities)
    if identities is None:
        if config.telegram is not None:
            raise DeclarationError(
                'the proxy file has [telegram] but no identities = "identities.toml": the bot '
                "needs to know the approvers and their chats"
            )
        return registry, None
    from milpa_chat.chat import Assistant, Identities

    return registry, Assistant(registry, Identities.from_toml(identities), name=config.name, edits=True)


@contextlib.asynccontextmanager
async def _cards(config: ProxyConfig, assistant: Any) -> AsyncIterator[None]:
    """The Telegram bot that shows (and, polling, takes the taps on) the proxy's approval cards."""
    if config.telegram is None or assistant is None:
        yield
        return
    token = os.environ.get(config.telegram.token_env)
    if not token:
        raise DeclarationError(
            f"[telegram] in the proxy file reads the bot token from ${config.telegram.token_env}, "
            f"which is not set; export {config.telegram.token_env}=... first"
        )
    from milpa_chat.bots import TelegramBot

    bot = TelegramBot(assistant, token, config.telegram.base_url)
    await bot.start(polling=config.telegram.polling)
    try:
        yield
    finally:
        await bot.stop()


async def run_proxy(
    config: ProxyConfig,
    *,
    http: int | None = None,
    host: str = "127.0.0.1",
    path: str = "/mcp",
    errlog: TextIO | None = None,
) -> None:
    """Start the proxy of ``config`` and serve it (stdio, or streamable HTTP on ``host:http``) until stopped."""
    from milpa_chat.mcp.auth import BearerTokens
    from milpa_chat.mcp.proxy import McpProxy

    registry, assistant = build_registry(config)
    tokens_file = config.path(config.tokens)
    tokens = BearerTokens.from_file(tokens_file) if tokens_file is not None else None
    if http is not None and tokens is None:
        raise DeclarationError(
            'serving the proxy over HTTP needs tokens = "tokens.json" in the proxy file: every '
            "HTTP caller is named by a bearer token"
        )
    proxy: McpProxy = McpProxy(config, registry, errlog=errlog)
    try:
        async with _cards(config, assistant):
            await proxy.start()
            people = assistant.identities if assistant is not None else None
            server = proxy.server(tokens=tokens, people=people)
            if http is None:
                await server.run_stdio()
            else:
                await server.run_http(host=host, port=http, path=path)
    finally:
        await proxy.close()
        await registry.store.close()
