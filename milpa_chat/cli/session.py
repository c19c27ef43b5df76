"""One command's session: the store, the registry on it, and who acts (``tools``, ``call``, ``run``)."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import AsyncIterator

from milpa_chat.cli.identity import CliIdentity
from milpa_chat.cli.store import load_registry, open_cli_store, runs_cli_approvals
from milpa_chat.runtime.context import ToolContext
from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["session"]


@contextlib.asynccontextmanager
async def session(spec: str, ns: argparse.Namespace) -> AsyncIterator[tuple[ToolRegistry, ToolContext]]:
    """The registry ``spec`` on the command's store, and the caller (``--as``, else the local shell).

    Approvals opened in the session run, once approved, wherever they are approved from the command
    line; every call and approval change goes to the store's audit trail. The store is closed after.
    """
    identity = CliIdentity.from_options(
        getattr(ns, "as_", None), getattr(ns, "identities", None), getattr(ns, "scopes", None)
    )
    store = open_cli_store(getattr(ns, "store", None))
    try:
        registry = load_registry(spec, store)
        runs_cli_approvals(registry, identity.requester)
        yield registry, identity.context()
    finally:
        await store.close()
