"""The seam standing grants plug into: what the pipeline's ``standing`` step asks of ``registry.grants``.

The runtime knows nothing of grants themselves (documents, the judge, who signs): those live above it,
in :mod:`milpa_chat.grants` (``GrantDesk(registry)`` sets ``registry.grants``). Before a gate would
open an approval, the ``standing`` step hands the call to :meth:`StandingGate.gate`, which answers with
a result (a call a grant lent, or a stop's refusal) or ``None`` (the call goes on to its approval).
A call the kit does not run itself (an agent framework's tool, :class:`~milpa_chat.agents.ApprovalHost`) is
handed to :meth:`StandingGate.consult`, which answers with a :class:`StandingAnswer` (lent, or stopped) or ``None``.
The protocol is declared beside the :class:`~milpa_chat.runtime.services.Services` that carry it.
"""

from __future__ import annotations

from milpa_chat.runtime.services import StandingAnswer, StandingGate

__all__ = ["StandingAnswer", "StandingGate"]
