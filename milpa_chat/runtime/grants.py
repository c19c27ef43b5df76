"""The seam standing grants plug into: what the pipeline's ``standing`` step asks of ``registry.grants``.

The runtime knows nothing of grants themselves (documents, the judge, who signs): those live above it,
in :mod:`milpa_chat.grants` (``GrantDesk(registry)`` sets ``registry.grants``). Before a gate would
open an approval, the ``standing`` step hands the call to :meth:`StandingGate.gate`, which answers with
a result (a call a grant lent, or a stop's refusal) or ``None`` (the call goes on to its approval).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from milpa_chat.runtime.pipeline import Call
    from milpa_chat.runtime.result import ToolResult

__all__ = ["StandingGate"]


@runtime_checkable
class StandingGate(Protocol):
    """``registry.grants``: judged before an approval is opened."""

    async def gate(self, call: Call) -> ToolResult | None:
        """A result (lent, or refused by a stop), or ``None`` to go on to the approval."""
        ...
