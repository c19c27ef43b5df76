"""``ApprovalDesk``: the one place approvals are opened, decided, claimed, finished and recovered.

Every path that decides — a button on any surface, a typed command, the ``resolve_verification``
tool, the notebook inbox, the CLI, a confirm-token replay — calls :meth:`ApprovalDesk.decide`.
Each change is one compare-and-set on the record (:meth:`ApprovalDesk._change`, the only CAS loop),
with its effects and its next due time in the same write.

Execution happens exactly once: only the caller whose write moves the record into ``executing``
holds the lease and runs the tool (``Change.claimed``). A lease that ends without a result becomes
``effect_uncertain`` (or, for a tool declared idempotent, is run again).

The desk knows nothing of chats. It is built with its :class:`ApprovalHooks`, and whatever is plugged in
later goes through :meth:`ApprovalDesk.install`: a chat layer's ``opener`` (adds the cards and the
requester's route to a record before it is first written) and ``follower`` (runs what a decision claimed,
delivers what it owes). A decision taken where no follower runs leaves an approved record ``approved``
and due, for a worker with a follower to pick up.

The desk is put together from one module per responsibility: :mod:`~milpa_chat.runtime.approval_hooks`
(what plugs in), :mod:`~milpa_chat.runtime.desk_core` (reading, the compare-and-set loop, events),
:mod:`~milpa_chat.runtime.desk_open`, :mod:`~milpa_chat.runtime.desk_decide` (decisions and edits),
:mod:`~milpa_chat.runtime.desk_runs` (claims, leases, results) and :mod:`~milpa_chat.runtime.desk_recover`
(due records, dead processes, deliveries). This module assembles them and keeps the names importable.
"""

from __future__ import annotations

from milpa_chat.runtime.approval_hooks import ApprovalHooks, Change, Delivery
from milpa_chat.runtime.desk_core import SETTLED_KEPT, DeskCore
from milpa_chat.runtime.desk_decide import DECISIONS, MODEL_VERBS, Deciding
from milpa_chat.runtime.desk_open import Opening
from milpa_chat.runtime.desk_recover import Recovering
from milpa_chat.runtime.desk_runs import Running

__all__ = [
    "DECISIONS",
    "MODEL_VERBS",
    "SETTLED_KEPT",
    "ApprovalDesk",
    "ApprovalHooks",
    "Change",
    "Delivery",
    "DeskCore",
]


class ApprovalDesk(Opening, Deciding, Running, Recovering):
    """Approvals in ``store`` (collection ``approvals``), changed only through compare-and-set.

    ``lease``: seconds a claimed run may take before it counts as lost (renewed while the run lives).
    ``handoff``: seconds the worker that wrote a change has to deliver its effects before any other
    worker may (none when this desk has no follower: nobody here would deliver them).
    ``retention``: seconds a settled record is kept (then the store purges it).
    ``max_pending_per_principal``: how many pending requests one requester may have open at once
    (``None``: no cap); one more is refused with code ``RATE_LIMITED``.

    A lease or a hand-off is held by a process (:func:`~milpa_chat.runtime.leases.this_holder`); one
    whose holder is a dead process on this host is taken over at once (:meth:`recover_dead`).
    """
