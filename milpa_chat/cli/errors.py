"""The command line's own error: a usage problem, printed as one line without a traceback (exit status 2)."""

from __future__ import annotations

from milpa_chat.errors import MilpaError

__all__ = ["CliError"]


class CliError(MilpaError):
    """A usage problem; printed without a traceback, exit status 2."""
