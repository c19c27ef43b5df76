"""Per-call composition: how one call's arguments and circumstances may lower a ceiling.

Only producers lower an axis, and each says so in an :class:`AxisReduction`:

* a declared :class:`Descent` (``dry_run=True`` lowers the ceiling to a read) holds only with a
  signed :class:`DescentCertificate` bound to this operation, this predicate and this handler's
  digest — and a lowered *authority* only with an :class:`AuthorityPolicy` judging the caller's
  :class:`ContextFacts` live;
* a :class:`TrialConfinement` (the call runs in a disposable workspace) lowers *mutation* to
  ``ephemeral`` and nothing else;
* a :class:`SubjectAttestation` from the owner of the call's payload lowers *subject*.

Nothing here ever raises an axis, and a producer that cannot show its evidence lowers nothing.

The records live where they are used from: the evidence of a call in :mod:`milpa_chat.command.evidence`,
:class:`Descent`, :class:`ProfileComposition` and :func:`compose` beside the profile they lower in
:mod:`milpa_chat.command.effects`, the certificate in :mod:`milpa_chat.command.certificates`; this
module names them all, so ``from milpa_chat.command.composition import Descent`` keeps working.
"""

from __future__ import annotations

from milpa_chat.command.certificates import DescentCertificate
from milpa_chat.command.effects import Descent, ProfileComposition
from milpa_chat.command.effects import compose as compose
from milpa_chat.command.evidence import TRIAL_WORKSPACE as TRIAL_WORKSPACE
from milpa_chat.command.evidence import (
    AuthorityClaim,
    AuthorityPolicy,
    AuthorityRule,
    AxisReduction,
    CallSubject,
    ContextFacts,
    DeclaredAuthorityPolicy,
    SubjectAttestation,
    TrialConfinement,
)

__all__ = [
    "AuthorityClaim",
    "AuthorityPolicy",
    "AuthorityRule",
    "AxisReduction",
    "CallSubject",
    "ContextFacts",
    "DeclaredAuthorityPolicy",
    "Descent",
    "DescentCertificate",
    "ProfileComposition",
    "SubjectAttestation",
    "TrialConfinement",
]
