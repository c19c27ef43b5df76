"""Lazy import of optional dependencies with an install hint."""

from __future__ import annotations

import importlib
from types import ModuleType

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
