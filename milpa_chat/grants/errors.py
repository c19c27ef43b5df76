"""The one refusal of the standing-grant documents: :class:`InvalidGrant`.

It is a :class:`~milpa_chat.errors.DeclarationError` (a document nobody may sign, found when it is
built or read) and a ``ValueError``, so ``except ValueError`` catches it. Its message names the field, as a
path such as ``conditions[0].by.arguments.strict``, and says how to write it instead. A name given
as anything but a ``str`` is a plain ``TypeError``.
"""

from __future__ import annotations

from milpa_chat.errors import DeclarationError

__all__ = ["InvalidGrant"]


class InvalidGrant(DeclarationError, ValueError):
    """A standing grant (or a part of one) that cannot be written: the message names the field and the fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message

    def within(self, prefix: str) -> InvalidGrant:
        """The same refusal, its field named from ``prefix`` (``conditions[0].by`` + ``.operation``)."""
        joined = f"{prefix}{self.field}" if self.field.startswith("[") else f"{prefix}.{self.field}"
        return InvalidGrant(joined if prefix else self.field, self.reason)
