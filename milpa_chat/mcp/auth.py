"""Who an MCP caller is: configuration maps a bearer token to a principal and scopes.

Over streamable HTTP every request carries ``Authorization: Bearer <token>``; :class:`BearerTokens`
(the SDK's ``TokenVerifier``) looks the token up — compared in constant time, by its SHA-256, so the
configuration may hold digests instead of secrets — and the call runs as
``ToolContext.mcp(principal=..., scopes=...)``. The identity never comes from tool arguments. A
request without a known token is refused by the SDK's bearer middleware (401) before any tool runs.

A local stdio process has no per-request authentication: the process that spawned it is the trust
boundary, and the server runs every call as :meth:`McpCaller.stdio` (``ToolContext.stdio``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from milpa_chat.errors import DeclarationError
from milpa_chat.runtime.context import ToolContext

__all__ = ["BearerTokens", "McpCaller", "token_digest"]


def token_digest(token: str) -> str:
    """``sha256:<hex>``: how a configuration may name a token without holding it."""
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class McpCaller:
    """A configured caller: ``principal`` (e.g. ``mcp:desktop-alice``), ``scopes`` and a display ``name``.

    An MCP client is a model acting for someone, so its calls are model-made (``ToolContext.by_model``):
    they never confirm, approve or redeem anything. ``person=True`` says the token is used by a person's
    own program, not by a model (a script that decides nothing either way still gains nothing from it)."""

    principal: str
    scopes: tuple[str, ...] = ()
    name: str | None = None
    person: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.principal, str) or not self.principal.strip():
            raise DeclarationError(f"McpCaller(principal=...) must name the caller, got {self.principal!r}")
        scopes: Any = self.scopes
        if isinstance(scopes, str) or not all(isinstance(s, str) and s and " " not in s for s in scopes):
            raise DeclarationError(
                f"McpCaller(scopes=...) takes a list of scope names without spaces, got {self.scopes!r}; "
                f"e.g. scopes=['notes:read']"
            )
        object.__setattr__(self, "scopes", tuple(scopes))

    @classmethod
    def stdio(cls, principal: str = "stdio", scopes: Iterable[str] = ("*",), name: str | None = None) -> McpCaller:
        """The local process an MCP host spawned (every scope by default, as ``ToolContext.stdio``)."""
        return cls(principal, tuple(scopes), name)

    def context(self, *, stdio: bool = False) -> ToolContext:
        """The context one call runs with (a fresh request id each time)."""
        ctx = (
            ToolContext.stdio(principal=self.principal, scopes=self.scopes)
            if stdio
            else ToolContext.mcp(principal=self.principal, scopes=self.scopes)
        )
        if self.name:
            ctx = ctx.with_extra(user_name=self.name)
        return ctx if self.person else ctx.as_model()


class BearerTokens:
    """Bearer tokens -> :class:`McpCaller`; implements the SDK's ``TokenVerifier`` protocol.

    Keys are the tokens themselves or their :func:`token_digest` (``sha256:...``). Build it from a
    mapping (``{token: {"principal": ..., "scopes": [...], "name": ...}}``) with :meth:`from_mapping`,
    or from such a JSON file with :meth:`from_file`.
    """

    def __init__(self, callers: Mapping[str, McpCaller]) -> None:
        if not callers:
            raise DeclarationError("BearerTokens needs at least one token -> McpCaller entry")
        self._by_digest: dict[str, McpCaller] = {}
        for key, caller in callers.items():
            if not isinstance(key, str) or not key or not isinstance(caller, McpCaller):
                raise DeclarationError("BearerTokens takes {token (or 'sha256:<hex>'): McpCaller(...)}")
            digest = key if key.startswith("sha256:") and len(key) == 71 else token_digest(key)
            self._by_digest[digest] = caller

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> BearerTokens:
        callers = {}
        for key, entry in data.items():
            if not isinstance(entry, Mapping) or "principal" not in entry:
                raise DeclarationError('each token maps to {"principal": "mcp:name", "scopes": [...], "name": "..."}')
            callers[key] = McpCaller(
                entry["principal"], tuple(entry.get("scopes", ())), entry.get("name"), bool(entry.get("person", False))
            )
        return cls(callers)

    @classmethod
    def from_file(cls, path: str | Path) -> BearerTokens:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise DeclarationError(f"cannot read the MCP tokens file {str(path)!r}: {exc}") from exc
        if not isinstance(data, Mapping):
            raise DeclarationError(f"the MCP tokens file {str(path)!r} must hold a JSON object of tokens")
        return cls.from_mapping(data)

    def caller(self, token: str) -> McpCaller | None:
        """The caller ``token`` names, or ``None`` (every entry is compared, in constant time)."""
        digest = token_digest(token)
        found = None
        for known, caller in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                found = caller
        return found

    async def verify_token(self, token: str) -> Any:
        """The SDK's ``TokenVerifier``: an ``AccessToken`` whose ``client_id`` is the principal."""
        caller = self.caller(token)
        if caller is None:
            return None
        from mcp.server.auth.provider import AccessToken

        claims: dict[str, Any] = {"name": caller.name} if caller.name else {}
        if caller.person:
            claims["person"] = True
        return AccessToken(
            token=token,
            client_id=caller.principal,
            subject=caller.principal,
            scopes=list(caller.scopes),
            claims=claims or None,
        )
