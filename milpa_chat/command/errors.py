"""Exceptions of :mod:`milpa_chat.command`, all under :class:`~milpa_chat.errors.MilpaError`.

* :class:`InvalidOperation` — an :class:`~milpa_chat.command.Operation` contradicts itself
  (raised by its constructor).
* :class:`InvalidEffectProfile` — an :class:`~milpa_chat.command.EffectProfile` (or a reading of
  one) breaks an invariant of the effect lattice.
* :class:`OperationDeclarationError` — a declared operation class cannot become an operation;
  raised once, by :func:`~milpa_chat.command.declared_operation`, saying what to declare.
* :class:`InvalidInput` — a declared operation's handler was called with input its constructor
  cannot take (a required input missing, a value that is not one of an enum's members).

Each is also a :class:`ValueError`, so ``except ValueError`` keeps
working for code ported from it. The declaration errors are also
:class:`~milpa_chat.errors.DeclarationError` (a developer mistake, with the fix in the message).
"""

from __future__ import annotations

from milpa_chat.errors import DeclarationError, MilpaError

__all__ = ["InvalidEffectProfile", "InvalidInput", "InvalidOperation", "OperationDeclarationError"]


class InvalidOperation(DeclarationError, ValueError):
    """An operation declares two things that contradict each other (or a field of the wrong kind)."""


class InvalidEffectProfile(MilpaError, ValueError):
    """An effect profile that nobody could honestly declare (e.g. ``guaranteed`` with no rollback)."""


class OperationDeclarationError(DeclarationError, ValueError):
    """A class declared as an operation cannot be turned into one; the message says what to declare."""


class InvalidInput(MilpaError, ValueError):
    """A declared operation's handler received input its constructor cannot take."""
