"""Exceptions of milpa-chat, split by audience.

* :class:`DeclarationError` — a developer mistake found when a tool is declared or registered.
  Raised at import/registration time, with the fix in the message (:class:`InvalidOptionError`
  when a value is out of range: also a ``ValueError``).
* :class:`MissingExtraError` — an optional dependency is not installed; names the exact
  ``pip install`` command.
* :class:`StoreError` and subclasses — the durable store cannot be used as asked.

Runtime outcomes of a tool call are never exceptions: ``ToolRegistry.call`` returns a
``ToolResult`` with an error code instead.
"""

from __future__ import annotations

__all__ = [
    "DeclarationError",
    "InvalidOptionError",
    "MilpaError",
    "MissingExtraError",
    "StoreCorruptError",
    "StoreError",
    "StoreSchemaError",
    "ToolAlreadyRegisteredError",
    "ToolError",
]


class MilpaError(Exception):
    """Base class of every exception raised by milpa-chat."""


class DeclarationError(MilpaError, TypeError):
    """A tool or parameter is declared in a way the runtime cannot serve.

    The message says what is wrong and how to fix it.
    """


class InvalidOptionError(DeclarationError, ValueError):
    """An option was given a value outside what it accepts (``VerifyPolicy(quorum=0)``, ...).

    A :class:`DeclarationError` that is also a ``ValueError``, so code written as
    ``except ValueError`` keeps catching it; wrong *types* raise a plain :class:`DeclarationError`
    (a ``TypeError``).
    """


class ToolAlreadyRegisteredError(DeclarationError):
    """A second tool was registered under a name that is already taken."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"Tool already registered: {name!r}. Tool names are unique per registry; "
            f"rename one of them (the first argument of @tool) or use a second ToolRegistry."
        )
        self.name = name


class MissingExtraError(MilpaError, ImportError):
    """An optional dependency of milpa-chat is missing."""

    def __init__(self, feature: str, extra: str, module: str) -> None:
        self.feature = feature
        self.extra = extra
        self.module = module
        super().__init__(
            f"{feature} needs the {module!r} package, which is not installed. "
            f'Install it with: pip install "milpa-chat[{extra}]"'
        )


class StoreError(MilpaError):
    """The store refused an operation or could not be opened."""


class StoreCorruptError(StoreError):
    """The database file or server holds something that is not a readable milpa-chat store."""


class StoreSchemaError(StoreError):
    """The database belongs to another application or to an incompatible milpa-chat version."""


class ToolError(MilpaError):
    """Raise inside a tool to return a typed error with a message meant for the caller.

    ``raise ToolError("Note 5 does not exist", code=ErrorCode.NOT_FOUND)`` becomes
    ``ToolResult.error("Note 5 does not exist", code="NOT_FOUND")``. Any other exception becomes
    ``INTERNAL_ERROR`` with no internals shown.
    """

    def __init__(self, message: str, *, code: str = "INTERNAL_ERROR", data: object = None) -> None:
        super().__init__(message)
        self.code = str(code)
        self.data = data
