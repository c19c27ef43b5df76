"""Where ``milpa-chat`` keeps its state, and the registry a command runs on that store.

The store is ``--store PATH`` (a SQLite file, ``sqlite:///file.db``, ``postgresql://...``), else
``MILPA_STORE``, else ``store.db`` in the user's data directory (``$XDG_DATA_HOME/milpa-chat``,
by default ``~/.local/share/milpa-chat``), created on first use and announced once on stderr.

A registry loaded with ``--tools pkg.mod:obj`` runs on that store: a factory that takes a ``store``
parameter is given it; a registry that kept the default in-memory store is moved onto it. Every
call and every approval change is recorded in the store's audit trail, and approvals opened from
the command line run, once approved, in the process that approved them.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from milpa_chat.cli.errors import CliError
from milpa_chat.runtime.registry import ToolRegistry
from milpa_chat.store.memory import MemoryStore

if TYPE_CHECKING:
    from milpa_chat.runtime.approvals import Change
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.result import ToolResult
    from milpa_chat.store.base import Store

__all__ = [
    "DEFAULT_TOOLS",
    "STORE_ENV",
    "default_store_path",
    "demo_tools",
    "importable_cwd",
    "load_registry",
    "open_cli_store",
    "resolve_store",
    "runs_cli_approvals",
]

STORE_ENV = "MILPA_STORE"
#: The tools a command runs on when it is given no ``--tools``.
DEFAULT_TOOLS = "milpa_chat.cli.store:demo_tools"


def _usage_error(message: str) -> Exception:
    return CliError(message)


def default_store_path() -> Path:
    """``$XDG_DATA_HOME/milpa-chat/store.db``, by default ``~/.local/share/milpa-chat/store.db``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "milpa-chat" / "store.db"


def resolve_store(given: str | None) -> tuple[str, bool]:
    """The store URL to use, and whether it is the default one (``--store``, then ``MILPA_STORE``)."""
    if given:
        return given, False
    env = os.environ.get(STORE_ENV, "").strip()
    if env:
        return env, False
    return str(default_store_path()), True


def open_cli_store(given: str | None) -> Store:
    """Open the store a command uses (see the module docstring); a bad one is a one-line usage error."""
    from milpa_chat.errors import StoreError
    from milpa_chat.store import open_store

    url, is_default = resolve_store(given)
    created = False
    if is_default:
        path = Path(url)
        created = not path.exists()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _usage_error(
                f"cannot create {path.parent} for the default store ({exc.strerror}); "
                f"pass --store PATH or set {STORE_ENV}"
            ) from exc
    try:
        store = open_store(url)
    except (ValueError, StoreError) as exc:
        where = "--store" if given else STORE_ENV if not is_default else "the default store"
        raise _usage_error(f"{where}: {exc}") from exc
    if created:
        print(
            f"milpa-chat: keeping state in {url} (created now; --store PATH or {STORE_ENV} to use another)",
            file=sys.stderr,
        )
    return store


def importable_cwd() -> None:
    """Make the modules of the current directory importable, as ``python -m`` does (a console script's
    ``sys.path`` starts with its own directory instead)."""
    cwd = os.getcwd()
    if cwd not in sys.path and "" not in sys.path:
        sys.path.insert(0, cwd)


def _import(spec: str, hint: str) -> Any:
    module_name, _, attr = spec.partition(":")
    importable_cwd()
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise _usage_error(
            f"cannot import {module_name!r} ({exc}); run from the directory that holds it "
            f"(or set PYTHONPATH) and pass {hint}"
        ) from exc
    for part in attr.split(".") if attr else ():
        if not hasattr(obj, part):
            raise _usage_error(f"{module_name!r} has no attribute {attr!r}; pass {hint}")
        obj = getattr(obj, part)
    return obj


def _takes_store(fn: Callable[..., Any]) -> bool:
    try:
        return "store" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def load_registry(
    spec: str, store: Store | None = None, *, hint: str = "--tools package.module:object"
) -> ToolRegistry:
    """``pkg.mod:obj`` -> a registry on ``store``. ``obj`` may be a ToolRegistry, a factory returning one
    (given ``store=`` when it takes that parameter), a class (instantiated without arguments), an
    instance or module with ``@tool`` methods; without ``:obj`` the module itself is scanned."""
    obj = _import(spec, hint)
    is_factory = callable(obj) and not isinstance(obj, ToolRegistry) and not hasattr(obj, "__milpa_tool__")
    if is_factory and not isinstance(obj, type) and store is not None and _takes_store(obj):
        obj = obj(store=store)
    elif isinstance(obj, type) or is_factory:
        obj = obj()
    if not isinstance(obj, ToolRegistry):
        registry = ToolRegistry(store=store)
        if registry.scan(obj) == 0:
            raise _usage_error(f"{spec!r} declares no @tool functions or methods; pass {hint}")
        return registry
    moved_before = _MOVED.get(id(obj)) is obj.store  # an earlier command in this process moved it
    if store is not None and (isinstance(obj.store, MemoryStore) or moved_before):
        _move(obj, store)
    return obj


#: The registries a command moved onto its store (by id), with that store: the next command moves them again.
_MOVED: dict[int, Store] = {}


def _move(registry: ToolRegistry, store: Store) -> None:
    """Put a registry built on the default memory store onto ``store`` (its approvals and rate windows)."""
    old = registry.store
    registry.store = store
    registry.approvals.store = store
    limiter = registry.rate_limiter
    if limiter is not None and getattr(limiter, "store", None) is old:
        limiter.store = store
    _MOVED[id(registry)] = store


def demo_tools(store: Store | None = None) -> ToolRegistry:
    """The demo tools (notes and a payment a manager approves) on ``store``: the commands' default."""
    from milpa_chat.demo import DemoTools
    from milpa_chat.runtime import VerificationTool

    registry = ToolRegistry(store=store)
    registry.scan(DemoTools())
    VerificationTool(registry.verifier, resolve_scopes=["payments:approve"]).register(registry)
    return registry


def runs_cli_approvals(registry: ToolRegistry, requester: Callable[[dict[str, Any]], ToolContext]) -> list[ToolResult]:
    """Let ``registry`` run the approvals the command line opens, once approved, in the process that
    approves them (as the requester, ``requester(record)``). Returns the list the results are put in."""
    from milpa_chat.runtime.approval import Approval
    from milpa_chat.runtime.trail import AuditTrail

    results: list[ToolResult] = []
    desk = registry.approvals

    def cli_opener(value: dict[str, Any], ctx: ToolContext) -> None:
        if ctx.channel == "cli" and value.get("tool") is not None and value.get("kind") == "verification":
            value["auto_run"] = True  # no chat layer waits for it: whoever approves runs it

    async def follow(change: Change) -> None:
        if not change.claimed:
            return  # nothing to deliver: the command line shows no cards
        approval: Approval = change.approval
        async with desk.holding(approval):
            results.append(await registry.run_approval(approval, requester(approval.data)))

    desk.install(opener=cli_opener, follower=follow)  # a second call replaces this cli_opener, adds none
    if desk.hooks.trail is None:
        AuditTrail(registry.store).attach(registry)
    elif _MOVED.get(id(registry)) is registry.store and isinstance(desk.hooks.trail, AuditTrail):
        desk.hooks.trail.store = registry.store  # moved again by this command: its trail follows
    return results
