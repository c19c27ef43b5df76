"""Seed 003: the ``Operation`` atom, declared effects, and one operation on every surface.

An :class:`Operation` is written once — by hand, or declared as a class whose constructor is its
input contract — and each :class:`SurfaceProjector` decides whether and how it appears on its
surface; :class:`RegistryProjector` puts it on a :class:`~milpa_chat.runtime.ToolRegistry`, so it
runs through the whole pipeline (confirmation on chat channels included). Effects are declared,
never inferred: an :class:`EffectProfile` on five axes, and a declared class that says neither
``@Mutates`` nor ``@Reads`` is refused by name. Standing grants (a person says "always allow this, within
these limits") live in :mod:`milpa_chat.grants`; their names are still answered here, from the old address
:mod:`milpa_chat.command.grants`.

``import milpa_chat`` does not import this package; ``import milpa_chat.command`` does.
"""

from __future__ import annotations

from milpa_chat.command.atom import DeclaredCondition, Operation, declared_operation
from milpa_chat.command.audits import RollbackContracts
from milpa_chat.command.canonical import Canonical
from milpa_chat.command.catalogue import HIDDEN, CatalogueProjector, model_of, read_catalogue, usage_of
from milpa_chat.command.certificates import generate_signing_key, public_key_of
from milpa_chat.command.composition import (
    AuthorityClaim,
    AuthorityPolicy,
    AuthorityRule,
    AxisReduction,
    CallSubject,
    ContextFacts,
    DeclaredAuthorityPolicy,
    Descent,
    DescentCertificate,
    ProfileComposition,
    SubjectAttestation,
    TrialConfinement,
)
from milpa_chat.command.context import InvocationContext
from milpa_chat.command.declaration import Because, Confirms, Mutates, Needs, Reads, Target, operation
from milpa_chat.command.declared import Resolver, is_declared
from milpa_chat.command.effects import EffectProfile
from milpa_chat.command.errors import InvalidEffectProfile, InvalidInput, InvalidOperation, OperationDeclarationError
from milpa_chat.command.ids import OperationId
from milpa_chat.command.levels import AXES, Authority, Externality, Mutation, Reversibility, Subject
from milpa_chat.command.principal import VerifiedPrincipal
from milpa_chat.command.projectors import (
    BUILTIN_COMMANDS,
    CliArgument,
    CliCommand,
    CliCommandProjector,
    ExplorerItem,
    ExplorerProjector,
    SlackSubcommand,
    SlackSubcommandProjector,
    TelegramCommand,
    TelegramCommandProjector,
)
from milpa_chat.command.registry import RegistryProjector, ToolModel, attribute_call, tool_model_of
from milpa_chat.command.surfaces import (
    CommandProvider,
    HttpRouteModel,
    OperationHttpPolicy,
    SurfaceModel,
    SurfaceProjector,
)

__all__ = [
    "AXES",
    "BUILTIN_COMMANDS",
    "HIDDEN",
    "Authority",
    "AuthorityClaim",
    "AuthorityPolicy",
    "AuthorityRule",
    "AxisReduction",
    "Because",
    "CallSubject",
    "Canonical",
    "CatalogueProjector",
    "CliArgument",
    "CliCommand",
    "CliCommandProjector",
    "CommandProvider",
    "Confirms",
    "ContextFacts",
    "DeclaredAuthorityPolicy",
    "DeclaredCondition",
    "Descent",
    "DescentCertificate",
    "EffectProfile",
    "ExplorerItem",
    "ExplorerProjector",
    "Externality",
    "HttpRouteModel",
    "InvalidEffectProfile",
    "InvalidInput",
    "InvalidOperation",
    "InvocationContext",
    "Mutates",
    "Mutation",
    "Needs",
    "Operation",
    "OperationDeclarationError",
    "OperationHttpPolicy",
    "OperationId",
    "ProfileComposition",
    "Reads",
    "RegistryProjector",
    "Resolver",
    "Reversibility",
    "RollbackContracts",
    "SlackSubcommand",
    "SlackSubcommandProjector",
    "Subject",
    "SubjectAttestation",
    "SurfaceModel",
    "SurfaceProjector",
    "Target",
    "TelegramCommand",
    "TelegramCommandProjector",
    "ToolModel",
    "TrialConfinement",
    "VerifiedPrincipal",
    "attribute_call",
    "declared_operation",
    "generate_signing_key",
    "is_declared",
    "model_of",
    "operation",
    "public_key_of",
    "read_catalogue",
    "tool_model_of",
    "usage_of",
]


#: Names this package exported before standing grants moved to :mod:`milpa_chat.grants`; still answered here.
_MOVED_TO_GRANTS = frozenset(
    {
        "Condition",
        "ConditionReceipt",
        "Falsifier",
        "GrantStanding",
        "GrantState",
        "InvalidGrant",
        "NamedCall",
        "StandingCall",
        "StandingCheck",
        "StandingGrant",
        "StandingJudge",
        "StandingVerdict",
    }
)


def __getattr__(name: str) -> object:
    if name in _MOVED_TO_GRANTS:  # read from the old address (inside this package), only when asked for
        from milpa_chat.command import grants

        return getattr(grants, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
