"""The markers of a declared operation: intent is declared, the mechanics are derived.

On the class: ``@operation(name, description)``, then exactly one of ``@Mutates(...)`` or ``@Reads``,
and optionally ``@Needs(scopes=[...])``, ``@Confirms`` and ``@Because("why")``. On a constructor
parameter: ``Annotated[str, Target, Because("which post")]``. Markers only record what was said;
:func:`~milpa_chat.command.declared_operation` reads them and refuses what cannot be served.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final, TypeVar, overload

from milpa_chat.command.effects import EffectProfile
from milpa_chat.command.errors import OperationDeclarationError
from milpa_chat.command.ids import trim_ascii
from milpa_chat.command.levels import Authority, Externality, Mutation, Reversibility, Subject

if TYPE_CHECKING:
    from milpa_chat.command.effects import Descent

__all__ = [
    "Because",
    "Confirms",
    "ConfirmsDeclaration",
    "Mutates",
    "MutatesDeclaration",
    "Needs",
    "NeedsDeclaration",
    "OperationDeclaration",
    "Reads",
    "ReadsDeclaration",
    "Target",
    "TargetMarker",
    "declarations_of",
    "operation",
]

T = TypeVar("T", bound=type)

#: The attribute the markers fill on a declared class (a dict: marker name -> declaration).
ATTRIBUTE = "__milpa_operation__"


def declarations_of(cls: type) -> dict[str, Any]:
    """What the markers recorded on ``cls`` itself (declarations are not inherited)."""
    found = cls.__dict__.get(ATTRIBUTE)
    return dict(found) if isinstance(found, dict) else {}


def _attach(cls: Any, key: str, value: Any) -> Any:
    if not isinstance(cls, type):
        raise OperationDeclarationError(f"@{key} decorates a class (the operation), not {cls!r}")
    found = declarations_of(cls)
    if key in found:
        raise OperationDeclarationError(f"{cls.__qualname__} declares @{key} twice; keep one")
    found[key] = value
    setattr(cls, ATTRIBUTE, found)
    return cls


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or trim_ascii(value) == "":
        raise OperationDeclarationError(f"{what} must be a non-empty string, got {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class OperationDeclaration:
    """What ``@operation(...)`` recorded: the name, description and where the operation appears."""

    name: str
    description: str
    version: str | None = None
    path: str | None = None
    surfaces: Sequence[str] | None = None

    def __call__(self, cls: T) -> T:
        return _attach(cls, "operation", self)  # type: ignore[no-any-return]


def operation(
    name: str,
    description: str,
    *,
    version: str | None = None,
    path: str | None = None,
    surfaces: Iterable[str] | None = None,
) -> OperationDeclaration:
    """Mark a class as a declared operation: ``@operation("posts:publish", "Publish a post.")``."""
    if isinstance(surfaces, str):
        raise OperationDeclarationError(
            f"@operation(surfaces=...) takes a list, got {surfaces!r}; write [{surfaces!r}]"
        )
    return OperationDeclaration(
        _text(name, "@operation(name=...)"),
        _text(description, "@operation(description=...)"),
        version,
        path,
        None if surfaces is None else tuple(surfaces),
    )


@dataclass(frozen=True, slots=True)
class MutatesDeclaration:
    """``@Mutates(mutation, externality, reversibility, authority, subject=..., rollback=...)``: what it changes.

    Every axis left out stays ``unknown`` (the top). ``rollback`` names the operation that undoes it.
    """

    mutation: Mutation | str = Mutation.UNKNOWN
    externality: Externality | str = Externality.UNKNOWN
    reversibility: Reversibility | str = Reversibility.UNKNOWN
    authority: Authority | str = Authority.UNKNOWN
    subject: Subject | str = Subject.UNKNOWN
    rollback: str | None = None
    escalates_on: Sequence[str] = ()
    descents: Sequence[Descent] = ()

    def profile(self) -> EffectProfile:
        """The declared ceiling, field for field (``rollback`` is the profile's ``rollback_contract``)."""
        return EffectProfile(
            self.mutation,  # type: ignore[arg-type]  # EffectProfile reads level strings too
            self.externality,  # type: ignore[arg-type]
            self.reversibility,  # type: ignore[arg-type]
            self.authority,  # type: ignore[arg-type]
            subject=self.subject,  # type: ignore[arg-type]
            rollback_contract=self.rollback,
            escalates_on=self.escalates_on,
            descents=self.descents,
        )

    @overload
    def __call__(self, target: T, /) -> T: ...

    @overload
    def __call__(
        self,
        mutation: Mutation | str = ...,
        externality: Externality | str = ...,
        reversibility: Reversibility | str = ...,
        authority: Authority | str = ...,
        *,
        subject: Subject | str = ...,
        rollback: str | None = ...,
        escalates_on: Iterable[str] = ...,
        descents: Iterable[Descent] = ...,
    ) -> MutatesDeclaration: ...

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], type):
            return _attach(args[0], "Mutates", self)
        declared = MutatesDeclaration(*args, **kwargs)
        if isinstance(declared.escalates_on, str):
            raise OperationDeclarationError(f"@Mutates(escalates_on=...) takes a list of argument names, got "
                                            f"{declared.escalates_on!r}")  # fmt: skip
        return replace(declared, escalates_on=tuple(declared.escalates_on), descents=tuple(declared.descents))


@dataclass(frozen=True, slots=True)
class ReadsDeclaration:
    """``@Reads`` (or ``@Reads(externality=..., authority=...)``): it changes nothing.

    With the defaults its profile is exactly :meth:`EffectProfile.read_only`.
    """

    externality: Externality | str = Externality.NONE
    authority: Authority | str = Authority.READ
    escalates_on: Sequence[str] = ()

    def profile(self) -> EffectProfile:
        return EffectProfile(
            Mutation.NONE,
            self.externality,  # type: ignore[arg-type]
            Reversibility.NOT_APPLICABLE,
            self.authority,  # type: ignore[arg-type]
            subject=Subject.NONE,
            escalates_on=self.escalates_on,
        )

    @overload
    def __call__(self, target: T, /) -> T: ...

    @overload
    def __call__(
        self,
        *,
        externality: Externality | str = ...,
        authority: Authority | str = ...,
        escalates_on: Iterable[str] = ...,
    ) -> ReadsDeclaration: ...

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], type):
            return _attach(args[0], "Reads", self)
        if args:
            raise OperationDeclarationError("@Reads takes keywords only: @Reads(externality=..., authority=...)")
        declared = ReadsDeclaration(**kwargs)
        return replace(declared, escalates_on=tuple(declared.escalates_on))


@dataclass(frozen=True, slots=True)
class NeedsDeclaration:
    """``@Needs(scopes=["posts:write"])`` or ``@Needs(permission="crm.contact:update")``: whose authority it spends."""

    scopes: Sequence[str] = ()
    permission: str | None = None

    @overload
    def __call__(self, target: T, /) -> T: ...

    @overload
    def __call__(self, scopes: Iterable[str] = ..., *, permission: str | None = ...) -> NeedsDeclaration: ...

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(args) == 1 and not kwargs and isinstance(args[0], type):
            return _attach(args[0], "Needs", self)
        if len(args) > 1 or ("scopes" in kwargs and args):
            raise OperationDeclarationError(
                "@Needs takes the scopes once: @Needs(['posts:write']) or @Needs(scopes=[...])"
            )
        scopes = args[0] if args else kwargs.pop("scopes", ())
        if isinstance(scopes, str) or not isinstance(scopes, Iterable):
            raise OperationDeclarationError(f"@Needs(scopes=...) takes a list, got {scopes!r}; write [{scopes!r}]")
        unknown = set(kwargs) - {"permission"}
        if unknown:
            raise OperationDeclarationError(f"@Needs takes scopes and permission, not {', '.join(sorted(unknown))}")
        return NeedsDeclaration(tuple(scopes), kwargs.get("permission"))


@dataclass(frozen=True, slots=True)
class ConfirmsDeclaration:
    """``@Confirms``: a person confirms each call before it runs."""

    def __call__(self, target: T, /) -> T:
        return _attach(target, "Confirms", self)  # type: ignore[no-any-return]


@dataclass(frozen=True, slots=True)
class TargetMarker:
    """``Annotated[str, Target]``: the argument whose value the person must have named."""

    def __repr__(self) -> str:
        return "Target"


@dataclass(frozen=True, slots=True)
class Because:
    """Why: ``Annotated[str, Because("which post")]`` describes a field; ``@Because("...")`` adds to the description."""

    purpose: str = field()

    def __post_init__(self) -> None:
        _text(self.purpose, "Because(purpose)")

    def __call__(self, target: T, /) -> T:
        return _attach(target, "Because", self)  # type: ignore[no-any-return]


Mutates: Final = MutatesDeclaration()
Reads: Final = ReadsDeclaration()
Needs: Final = NeedsDeclaration()
Confirms: Final = ConfirmsDeclaration()
Target: Final = TargetMarker()
