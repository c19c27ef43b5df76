"""``ToolContext``: who calls, through which channel, with which scopes, in which mode.

Channels build contexts with the named constructors; the identity always comes from the
platform (a Telegram ``from.id``, a Slack ``user.id``, the configured notebook principal),
never from tool arguments or button data.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

__all__ = ["Mode", "ToolContext"]

Mode = Literal["execute", "plan"]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def new_request_id() -> str:
    """32 lowercase hex characters."""
    return secrets.token_hex(16)


@dataclass(frozen=True, slots=True)
class ToolContext:
    """Immutable description of one caller.

    ``scopes`` is matched exactly (``"*"`` in the context matches every scope; there is no
    prefix matching). ``extra`` is free-form data for rule providers and channels (chat id,
    surface message ids, ...).
    """

    principal: str | None = None
    channel: str = "unknown"
    scopes: tuple[str, ...] = ()
    request_id: str = field(default_factory=new_request_id)
    ip: str | None = None
    user_agent: str | None = None
    extra: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    mode: Mode = "execute"
    #: The approval id when this call runs an approved (or confirmed) request: the same key on every
    #: attempt of that request, so a tool can make a retried run harmless.
    idempotency_key: str | None = None
    #: The call was made by a model (an agent's tool call, an MCP client that is not a person) on behalf of
    #: ``principal``. Such a context never decides an approval, never redeems a confirm token and never
    #: passes ``confirm_token`` / ``verification_id`` arguments: deciding is for people.
    by_model: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.scopes, tuple):
            if isinstance(self.scopes, str):
                raise TypeError(
                    f"ToolContext(scopes=...) takes a list of scope names, got the string {self.scopes!r}; "
                    f"write scopes=[{self.scopes!r}]"
                )
            object.__setattr__(self, "scopes", tuple(self.scopes))
        if self.mode not in ("execute", "plan"):
            raise ValueError(f"ToolContext(mode=...) must be 'execute' or 'plan', got {self.mode!r}")
        if not isinstance(self.extra, MappingProxyType):
            object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))

    # ------------------------------------------------------------ predicates
    @property
    def is_plan(self) -> bool:
        return self.mode == "plan"

    def has_scope(self, scope: str) -> bool:
        return "*" in self.scopes or scope in self.scopes

    def has_any_scope(self, scopes: Iterable[str]) -> bool:
        return any(self.has_scope(s) for s in scopes)

    def has_all_scopes(self, scopes: Iterable[str]) -> bool:
        return all(self.has_scope(s) for s in scopes)

    # ---------------------------------------------------------- derivations
    def as_plan(self) -> ToolContext:
        """The same caller in plan (dry-run) mode: validate and authorize, never execute."""
        return replace(self, mode="plan")

    def as_model(self) -> ToolContext:
        """The same caller, acting through a model: every decision and token redemption is refused."""
        return self if self.by_model else replace(self, by_model=True)

    def with_idempotency_key(self, key: str | None) -> ToolContext:
        """The same caller running the approved call ``key`` names (``replace(ctx, idempotency_key=key)``, made
        without :func:`~dataclasses.replace`'s field-by-field lookups: a run of every approval makes one)."""
        if self.__class__ is not ToolContext:  # a subclass may have fields of its own
            return replace(self, idempotency_key=key)
        return ToolContext(
            self.principal,
            self.channel,
            self.scopes,
            self.request_id,
            self.ip,
            self.user_agent,
            self.extra,
            self.mode,
            key,
            self.by_model,
        )

    def with_extra(self, **items: Any) -> ToolContext:
        merged = dict(self.extra)
        merged.update(items)
        return replace(self, extra=merged)

    def to_dict(self) -> dict[str, Any]:
        """Public fields (``extra`` is left out: it may hold platform data)."""
        return {
            "principal": self.principal,
            "channel": self.channel,
            "scopes": list(self.scopes),
            "request_id": self.request_id,
            "ip": self.ip,
            "user_agent": self.user_agent,
            "mode": self.mode,
            "by_model": self.by_model,
        }

    # ------------------------------------------------------------ factories
    @classmethod
    def cli(cls, request_id: str | None = None, mode: Mode = "execute") -> ToolContext:
        """The local shell: principal ``local-shell``, every scope (the process is the trust boundary)."""
        return cls("local-shell", "cli", ("*",), request_id or new_request_id(), mode=mode)

    @classmethod
    def stdio(
        cls, request_id: str | None = None, principal: str = "stdio", scopes: Iterable[str] = ("*",)
    ) -> ToolContext:
        """A trusted local stdio MCP server process (channel ``mcp``, no per-caller auth)."""
        return cls(principal, "mcp", tuple(scopes), request_id or new_request_id())

    @classmethod
    def mcp(
        cls,
        request_id: str | None = None,
        principal: str | None = None,
        scopes: Iterable[str] = (),
        mode: Mode = "execute",
    ) -> ToolContext:
        """An authenticated MCP caller (the channel requires a principal)."""
        return cls(principal, "mcp", tuple(scopes), request_id or new_request_id(), mode=mode)

    @classmethod
    def telegram(
        cls,
        chat_id: int | str,
        user_id: int | str | None = None,
        scopes: Iterable[str] = (),
        mode: Mode = "execute",
        **extra: Any,
    ) -> ToolContext:
        """A Telegram user (principal ``telegram:<user id>``) in a chat."""
        principal = f"telegram:{user_id}" if user_id is not None else f"telegram:chat:{chat_id}"
        return cls(principal, "telegram", tuple(scopes), mode=mode, extra={"chat_id": chat_id, **extra})

    @classmethod
    def slack(
        cls,
        team_id: str,
        user_id: str,
        channel_id: str | None = None,
        scopes: Iterable[str] = (),
        mode: Mode = "execute",
        **extra: Any,
    ) -> ToolContext:
        """A Slack user (principal ``slack:<team>:<user>``)."""
        return cls(
            f"slack:{team_id}:{user_id}",
            "slack",
            tuple(scopes),
            mode=mode,
            extra={"team_id": team_id, "channel_id": channel_id, **extra},
        )

    @classmethod
    def web(cls, principal: str | None, scopes: Iterable[str] = (), **extra: Any) -> ToolContext:
        """A web session (the channel requires a principal)."""
        return cls(principal, "web", tuple(scopes), extra=extra)

    @classmethod
    def jupyter(cls, principal: str = "jupyter", scopes: Iterable[str] = ("*",), mode: Mode = "execute") -> ToolContext:
        """A notebook user. The kernel is local, so every scope by default; pass ``scopes`` to narrow."""
        return cls(principal, "jupyter", tuple(scopes), mode=mode)
