"""``Identities``: chat users -> ``ToolContext`` (scopes from configuration), and approver chats.

Configuration in Python or TOML::

    [roles]
    writer = ["notes:read", "notes:write", "payments:send"]
    manager = ["notes:read", "payments:approve"]

    [users]                       # "<surface>:<user id>" (Slack: "slack:<team>:<user>") -> roles or scopes
    "telegram:1001" = ["writer"]
    "slack:T1:U2" = ["manager"]

    [chats]                       # everyone in a chat gets these as well
    "telegram:-1001234" = ["notes:read"]

    [defaults]
    scopes = []                   # unknown users: least privilege

    [approvers]                   # where verification cards are posted, per surface
    telegram = ["-1009876"]
    slack = ["C0APPROVERS"]

    [people]                      # callers of other channels -> the chat user they are (MCP clients)
    "mcp:alice-desktop" = "telegram:1001"

An entry that names a role expands to the role's scopes; anything else is taken as a scope.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from milpa_chat.chat.inbound import ChatUser
from milpa_chat.runtime.context import ToolContext

__all__ = ["Identities", "principal_for"]


def principal_for(surface: str, user: ChatUser) -> str:
    """``telegram:123``, ``slack:T1:U2``, ``jupyter:alice``."""
    if surface == "slack" and user.team:
        return f"slack:{user.team}:{user.id}"
    return f"{surface}:{user.id}"


class _Watched(dict[str, Any]):
    """A section of the configuration (``roles``, ``users``, ``chats``): a dict that forgets the scopes worked out
    from it whenever it changes (``identities.users["telegram:1"] = ("writer",)`` takes effect at once)."""

    __slots__ = ("_cache",)

    def __init__(self, items: Mapping[str, Any], cache: dict[Any, tuple[str, ...]]) -> None:
        super().__init__(items)
        self._cache = cache

    def __setitem__(self, key: str, value: Any) -> None:
        self._cache.clear()
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self._cache.clear()
        super().__delitem__(key)

    def __ior__(self, other: Any) -> _Watched:  # type: ignore[override,misc]
        self._cache.clear()
        return super().__ior__(other)

    def clear(self) -> None:
        self._cache.clear()
        super().clear()

    def pop(self, *args: Any) -> Any:
        self._cache.clear()
        return super().pop(*args)

    def popitem(self) -> tuple[str, Any]:
        self._cache.clear()
        return super().popitem()

    def setdefault(self, key: str, default: Any = None) -> Any:
        self._cache.clear()
        return super().setdefault(key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._cache.clear()
        super().update(*args, **kwargs)


#: Scopes worked out and kept per (surface, user, team, chat) at most; then they are worked out afresh.
_SCOPES_KEPT = 4096
#: The sections the kept scopes are worked out from (replacing one forgets them).
_SCOPE_SECTIONS = frozenset({"roles", "users", "chats", "default_scopes"})


class Identities:
    """Maps platform identities to tool contexts. Unknown users get ``default_scopes`` only.

    The scopes of a (surface, user, chat) are worked out once and kept until the configuration changes: a change
    through the sections (``identities.users[...] = ...``) or a section replaced (``identities.users = {...}``)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SCOPE_SECTIONS:
            cache: dict[Any, tuple[str, ...]] | None = self.__dict__.get("_scopes")
            if cache is not None:
                cache.clear()
                if name != "default_scopes" and type(value) is not _Watched:
                    # a dict of the caller's own: changes made to it later go unseen, so nothing is kept any more
                    self.__dict__["_keep"] = False
        super().__setattr__(name, value)

    def __init__(
        self,
        *,
        roles: Mapping[str, Iterable[str]] | None = None,
        users: Mapping[str, Iterable[str]] | None = None,
        chats: Mapping[str, Iterable[str]] | None = None,
        default_scopes: Iterable[str] = (),
        approvers: Mapping[str, Iterable[str | int]] | None = None,
        escalation: Mapping[str, Iterable[str | int]] | None = None,
        people: Mapping[str, str] | None = None,
    ) -> None:
        #: (surface, user id, team, chat id) -> scopes, while the configuration does not change.
        self._scopes: dict[tuple[str, str, str | None, str | None], tuple[str, ...]] = {}
        self._keep = True
        cache = self._scopes
        self.roles: dict[str, tuple[str, ...]] = _Watched({k: tuple(v) for k, v in (roles or {}).items()}, cache)
        self.users: dict[str, tuple[str, ...]] = _Watched({str(k): tuple(v) for k, v in (users or {}).items()}, cache)
        self.chats: dict[str, tuple[str, ...]] = _Watched({str(k): tuple(v) for k, v in (chats or {}).items()}, cache)
        self.default_scopes = tuple(default_scopes)
        self.approvers = {k: tuple(str(c) for c in v) for k, v in (approvers or {}).items()}
        self.escalation = {k: tuple(str(c) for c in v) for k, v in (escalation or {}).items()}
        self.people = {str(k): str(v) for k, v in (people or {}).items()}
        for caller, person in self.people.items():
            surface, _, rest = person.partition(":")
            if surface not in ("telegram", "slack") or not rest or (surface == "slack" and ":" not in rest):
                raise ValueError(
                    f"[people] {caller!r} must name a chat user as 'telegram:<user id>' or "
                    f"'slack:<team>:<user>', got {person!r}"
                )
        for where, entries in (("users", self.users), ("chats", self.chats)):
            for key, values in entries.items():
                if isinstance(values, str) or not all(isinstance(v, str) for v in values):
                    raise ValueError(f"[{where}] {key!r} must be a list of role or scope names, got {values!r}")

    # ----------------------------------------------------------------- loading
    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Identities:
        known = {"roles", "users", "chats", "defaults", "approvers", "escalation", "people"}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown identity section(s) {sorted(unknown)}; the known ones are {sorted(known)}")
        defaults = data.get("defaults", {})
        return cls(
            roles=data.get("roles"),
            users=data.get("users"),
            chats=data.get("chats"),
            default_scopes=defaults.get("scopes", ()),
            approvers=data.get("approvers"),
            escalation=data.get("escalation"),
            people=data.get("people"),
        )

    @classmethod
    def from_toml(cls, path: str | Path) -> Identities:
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"identity file {p} does not exist; create it or pass Identities(...)") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"identity file {p} is not valid TOML: {exc}") from exc
        try:
            return cls.from_dict(data)
        except ValueError as exc:
            raise ValueError(f"identity file {p}: {exc}") from exc

    # --------------------------------------------------------------- mapping
    def _expand(self, entries: Iterable[str]) -> list[str]:
        out: list[str] = []
        for e in entries:
            out.extend(self.roles.get(e, (e,)))
        return out

    def scopes_for(self, surface: str, user: ChatUser, chat_id: str | None = None) -> tuple[str, ...]:
        key = (surface, user.id, user.team, chat_id)
        kept = self._scopes.get(key)
        if kept is not None:
            return kept
        principal = principal_for(surface, user)
        found = self.users.get(principal)
        scopes = self._expand(found) if found is not None else list(self.default_scopes)
        chat: Iterable[str] = ()
        if chat_id is not None:  # a thread ("<conversation>/<thread>", a Slack thread) has its conversation's
            conversation = chat_id.partition("/")[0]
            chat = self.chats.get(f"{surface}:{chat_id}", self.chats.get(f"{surface}:{conversation}", ()))
            scopes += self._expand(chat)
        result = tuple(dict.fromkeys(scopes))
        if self._keep and self._fixed(found if found is not None else self.default_scopes) and self._fixed(chat):
            if len(self._scopes) >= _SCOPES_KEPT:
                self._scopes.clear()
            self._scopes[key] = result
        return result

    def _fixed(self, entries: Iterable[str]) -> bool:
        """Whether ``entries`` and the roles they name are tuples (a list put in could change unseen)."""
        roles = self.roles
        return type(entries) is tuple and all(type(roles.get(e, ())) is tuple for e in entries)

    def context_for(self, surface: str, user: ChatUser, chat_id: str | None = None, **extra: Any) -> ToolContext:
        """The context a tool call from this user runs with. Identity comes from the platform only."""
        return ToolContext(
            principal=principal_for(surface, user),
            channel=surface,
            scopes=self.scopes_for(surface, user, chat_id),
            extra=MappingProxyType(
                {
                    "chat_id": chat_id,
                    "user_id": user.id,
                    "user_name": user.display,
                    "user_username": user.username,
                    "user_team": user.team,
                    **extra,
                }
            ),
        )

    def person_context(self, principal: str | None) -> ToolContext | None:
        """The chat user ``[people]`` maps ``principal`` (an MCP caller, say) to, as their direct-message
        context (their scopes, their chat for cards); ``None`` when it is not mapped."""
        person = self.people.get(principal or "")
        if person is None:
            return None
        surface, _, rest = person.partition(":")
        team, _, user_id = rest.rpartition(":") if surface == "slack" else ("", "", rest)
        user = ChatUser(user_id, person, None, team or None)
        return self.context_for(surface, user, user_id)

    def approver_chats(self, surface: str) -> tuple[str, ...]:
        return self.approvers.get(surface, ())

    def people_with(self, surface: str, scopes: Iterable[str]) -> list[str]:
        """The platform user ids on ``surface`` of the configured users holding one of ``scopes`` (their
        direct-message chat on Telegram and Slack)."""
        wanted = set(scopes)
        found = []
        for principal, entries in self.users.items():
            kind, _, rest = principal.partition(":")
            if kind != surface or not rest:
                continue
            held = set(self._expand(entries))
            if "*" in held or not wanted or held & wanted:
                found.append(rest.rpartition(":")[2])  # slack:T1:U2 -> U2
        return found

    def escalation_chats(self, surface: str) -> tuple[str, ...]:
        """Where an undecided request goes after its policy's ``escalate_after`` (section ``[escalation]``)."""
        return self.escalation.get(surface, ())
