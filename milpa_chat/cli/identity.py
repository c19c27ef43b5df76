"""Who a ``milpa-chat`` command acts as: the local shell, or a configured principal.

``--as PRINCIPAL`` (or ``MILPA_PRINCIPAL``) names the person; a bare name ``alice`` is the principal
``cli:alice``. Their scopes come from an identities file (``--identities FILE`` or
``MILPA_IDENTITIES``: its ``[users]`` entry for the principal, roles expanded, else its
``[defaults]``) and from ``--scopes a,b``. Never from a tool's arguments. Without ``--as`` a
command runs as the local shell (every scope; the process is the trust boundary).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from milpa_chat.cli.errors import CliError
from milpa_chat.runtime.context import ToolContext

if TYPE_CHECKING:
    from milpa_chat.chat.identity import Identities

__all__ = ["IDENTITIES_ENV", "PRINCIPAL_ENV", "CliIdentity"]

PRINCIPAL_ENV = "MILPA_PRINCIPAL"
IDENTITIES_ENV = "MILPA_IDENTITIES"


def _usage_error(message: str) -> Exception:
    return CliError(message)


def _principal(name: str) -> str:
    name = name.strip()
    if not name or any(c.isspace() for c in name):
        raise _usage_error(f"--as {name!r}: a principal is one word such as alice or cli:alice")
    return name if ":" in name else f"cli:{name}"


def _load_identities(path: str) -> Identities:
    from milpa_chat.chat.identity import Identities

    try:
        return Identities.from_toml(path)
    except FileNotFoundError as exc:
        raise _usage_error(
            f'--identities {path}: no such file; write one ([roles], [users] with "cli:NAME" '
            f"entries, [defaults]) or leave out --identities and {IDENTITIES_ENV}"
        ) from exc
    except ValueError as exc:
        raise _usage_error(f"--identities: {exc}") from exc


@dataclass(frozen=True, slots=True)
class CliIdentity:
    """The principal (``None``: the local shell), the identities file and the extra ``--scopes``."""

    principal: str | None = None
    identities: Identities | None = None
    scopes: tuple[str, ...] = ()

    @classmethod
    def from_options(cls, as_: str | None, identities: str | None, scopes: str | None) -> CliIdentity:
        name = as_ or os.environ.get(PRINCIPAL_ENV, "").strip() or None
        path = identities or os.environ.get(IDENTITIES_ENV, "").strip() or None
        extra = tuple(s.strip() for s in (scopes or "").split(",") if s.strip())
        if name is None and (identities or extra):
            raise _usage_error(f"--identities and --scopes need a principal: add --as NAME (or set {PRINCIPAL_ENV})")
        return cls(None if name is None else _principal(name), None if path is None else _load_identities(path), extra)

    def scopes_of(self, principal: str, fallback: tuple[str, ...] = ()) -> tuple[str, ...]:
        """``principal``'s scopes in the identities file (``fallback`` without one), plus ``--scopes`` for the
        configured principal."""
        found: list[str] = list(fallback)
        if self.identities is not None:
            ids = self.identities
            entries = ids.users.get(principal)
            found = (
                [s for e in entries for s in ids.roles.get(e, (e,))]
                if entries is not None
                else list(ids.default_scopes)
            )
        if principal == self.principal:
            found += self.scopes
        return tuple(dict.fromkeys(found))

    def context(self) -> ToolContext:
        """The caller of this command."""
        if self.principal is None:
            return ToolContext.cli()
        name = self.principal.removeprefix("cli:")
        return ToolContext(self.principal, "cli", self.scopes_of(self.principal), extra={"user_name": name})

    def requester(self, record: dict[str, Any]) -> ToolContext:
        """The requester of an approval, to run what was approved: their scopes now (from the identities
        file when one is given, else as they were when they asked)."""
        r = record["requester"]
        principal = r.get("principal")
        stored = tuple(r.get("scopes", ()))
        scopes = (
            stored
            if self.identities is None or principal in (None, "local-shell")
            else self.scopes_of(principal, stored)
        )
        return ToolContext(principal, r.get("channel", "cli"), scopes, extra=dict(r.get("extra", {})))
