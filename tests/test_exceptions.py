"""The exception tree by audience: every public exception of milpa-chat is a MilpaError."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

import milpa_chat
from milpa_chat.errors import DeclarationError, InvalidOptionError, MilpaError

SUBPACKAGES = sorted(
    ["milpa_chat", "milpa_chat.errors"]
    + [m.name for m in pkgutil.iter_modules(milpa_chat.__path__, "milpa_chat.") if m.ispkg]
)
#: Public exceptions known not to be MilpaErrors yet, each with the reason. Keep this empty.
ALLOWED: dict[str, str] = {}


def _public_exceptions(module_name: str) -> list[tuple[str, type[BaseException]]]:
    module = importlib.import_module(module_name)
    found = []
    for name in getattr(module, "__all__", ()):
        value = getattr(module, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            found.append((f"{module_name}.{name}", value))
    return found


def test_every_subpackage_is_checked() -> None:
    assert {
        "milpa_chat.runtime",
        "milpa_chat.store",
        "milpa_chat.renderers",
        "milpa_chat.chat",
        "milpa_chat.gateway",
        "milpa_chat.jupyter",
        "milpa_chat.testing",
        "milpa_chat.bots",
    } <= set(SUBPACKAGES)
    found = [name for sub in SUBPACKAGES for name, _ in _public_exceptions(sub)]
    assert set(ALLOWED) <= set(found), "an allow-list entry names nothing public any more: drop it"
    assert "milpa_chat.errors.DeclarationError" in found and "milpa_chat.gateway.LlmError" in found


@pytest.mark.parametrize("module_name", SUBPACKAGES)
def test_public_exceptions_derive_from_milpa_error(module_name: str) -> None:
    bad = [
        f"{name} ({', '.join(b.__name__ for b in cls.__mro__[1:-1])})"
        for name, cls in _public_exceptions(module_name)
        if not issubclass(cls, MilpaError) and name not in ALLOWED
    ]
    assert not bad, "not a MilpaError: " + "; ".join(bad)


def test_declaration_errors_keep_their_builtin_meaning() -> None:
    assert issubclass(DeclarationError, TypeError)
    assert issubclass(InvalidOptionError, DeclarationError) and issubclass(InvalidOptionError, ValueError)
