"""Lazy imports: optional dependencies with an install hint, and packages whose names load on first use."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

from milpa_chat.errors import MissingExtraError


def require(module: str, *, extra: str, feature: str) -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming ``pip install "milpa-chat[extra]"``."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        root = module.split(".")[0]
        if exc.name is not None and exc.name.split(".")[0] != root:
            raise
        raise MissingExtraError(feature, extra, root) from exc


def lazy_exports(module: str, exports: Mapping[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for names imported on first use (``exports``: name ->
    the module that defines it), so importing the package imports none of them."""

    def getattr_(name: str) -> Any:
        where = exports.get(name)
        if where is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        return getattr(importlib.import_module(where), name)

    def dir_() -> list[str]:
        return sorted([*vars(sys.modules[module]), *exports])

    return getattr_, dir_
