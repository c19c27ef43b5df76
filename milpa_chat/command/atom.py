"""``Operation``: the atom — one operation, written once, that every surface projects.

An operation is an immutable value: a name, a description, a handler, and what a projector needs to
decide how — and whether — to expose it. Every constructor argument is a public field of the same
name, so ``dataclasses.replace(op, description=...)`` keeps every declaration.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass
from typing import TYPE_CHECKING, Any

from milpa_chat.command.declared import SOURCE_ATTRIBUTE, Resolver, read_declared
from milpa_chat.command.effects import EffectProfile
from milpa_chat.command.errors import InvalidOperation
from milpa_chat.command.evidence import CallSubject
from milpa_chat.command.ids import OperationId, trim_ascii
from milpa_chat.command.levels import Mutation

if TYPE_CHECKING:
    from milpa_chat.command.context import InvocationContext
    from milpa_chat.command.evidence import AuthorityPolicy, ContextFacts

__all__ = ["SOURCE_ATTRIBUTE", "DeclaredCondition", "Operation", "declared_operation", "handler_arity"]


@dataclass(frozen=True, slots=True)
class DeclaredCondition:
    """A named condition an operation declares (before or after it runs)."""

    name: str
    description: str

    def __post_init__(self) -> None:
        for what in ("name", "description"):
            value = getattr(self, what)
            if not isinstance(value, str) or trim_ascii(value) == "":
                raise InvalidOperation(f"A declared condition needs a non-blank {what}, got {value!r}")

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "description": self.description}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DeclaredCondition:
        for what in ("name", "description"):
            if not isinstance(data.get(what), str):
                raise InvalidOperation(f"a stored condition needs a string «{what}»")
        return cls(data["name"], data["description"])


def _strings(op: str, what: str, value: Any, *, example: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise InvalidOperation(f"Operation {op!r}: {what}= takes a list of strings, got {value!r}; write {example}")
    items = tuple(value)
    if not all(isinstance(v, str) and v for v in items):
        raise InvalidOperation(f"Operation {op!r}: {what}= takes non-empty strings, got {value!r}")
    return items


def _optional(op: str, what: str, value: Any, kind: type | tuple[type, ...], expected: str) -> None:
    if value is not None and not isinstance(value, kind):
        raise InvalidOperation(f"Operation {op!r}: {what}= must be {expected} or None, got {value!r}")


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation. ``handler(input)`` or ``handler(input, context)`` returns domain data (or an awaitable).

    ``mutating`` is the coarse "does it write" flag; ``effects`` refines it (``None`` is
    *unclassified*, which every consumer reads as "could do anything" — see :meth:`effect_ceiling`).
    ``surfaces=None`` opts into every surface. ``named_target`` names the argument whose value the
    person must have named in their request. ``permission`` is exclusive with ``scopes``.
    """

    name: str
    description: str
    handler: Callable[..., Any]
    _: KW_ONLY
    input_schema: Mapping[str, Any] | None = None
    mutating: bool = False
    requires_confirmation: bool = False
    scopes: Sequence[str] = ()
    output_schema: Mapping[str, Any] | None = None
    version: str | None = None
    path: str | None = None
    surfaces: Sequence[str] | None = None
    permission: str | None = None
    named_target: str | None = None
    effects: EffectProfile | None = None
    creates_named_target: bool = False
    amends_named_target: bool = False
    continues: Callable[[Mapping[str, Any]], str | None] | None = None
    preconditions: Sequence[DeclaredCondition] = ()
    postconditions: Sequence[DeclaredCondition] = ()
    artifacts: Sequence[str] = ()
    observable_evidence: Sequence[str] = ()
    acts_on: Callable[[Mapping[str, Any]], str | None] | None = None

    def __post_init__(self) -> None:
        self._check_kinds()
        self._check_contradictions()

    def _check_kinds(self) -> None:
        if not isinstance(self.name, str) or trim_ascii(self.name) == "":
            raise InvalidOperation(f"An operation needs a name such as 'posts:publish', got {self.name!r}")
        op = self.name
        if not isinstance(self.description, str) or not self.description.strip():
            raise InvalidOperation(f"Operation {op!r} needs a description: one sentence saying what it does")
        if not callable(self.handler):
            raise InvalidOperation(
                f"Operation {op!r}: the handler must be callable as handler(input) or handler(input, context), "
                f"got {self.handler!r}"
            )
        for flag in ("mutating", "requires_confirmation", "creates_named_target", "amends_named_target"):
            if not isinstance(getattr(self, flag), bool):
                raise InvalidOperation(f"Operation {op!r}: {flag}= must be True or False, got {getattr(self, flag)!r}")
        for what in ("input_schema", "output_schema"):
            _optional(op, what, getattr(self, what), Mapping, "a JSON schema (a dict)")
            if getattr(self, what) is not None:
                object.__setattr__(self, what, dict(getattr(self, what)))
        for what in ("version", "path", "permission", "named_target"):
            _optional(op, what, getattr(self, what), str, "a string")
        for what in ("continues", "acts_on"):
            if getattr(self, what) is not None and not callable(getattr(self, what)):
                raise InvalidOperation(f"Operation {op!r}: {what}= takes a function of the arguments, or None")
        _optional(op, "effects", self.effects, EffectProfile, "an EffectProfile")
        object.__setattr__(self, "scopes", _strings(op, "scopes", self.scopes, example="scopes=['posts:write']"))
        if self.surfaces is not None:
            object.__setattr__(self, "surfaces", _strings(op, "surfaces", self.surfaces, example="surfaces=['cli']"))
        for what in ("artifacts", "observable_evidence"):
            object.__setattr__(self, what, _strings(op, what, getattr(self, what), example=f"{what}=['...']"))
        for what in ("preconditions", "postconditions"):
            items = tuple(getattr(self, what))
            if not all(isinstance(c, DeclaredCondition) for c in items):
                raise InvalidOperation(f"Operation {op!r}: {what}= takes DeclaredCondition(name, description) items")
            object.__setattr__(self, what, items)

    def _check_contradictions(self) -> None:
        op = self.name
        if self.mutating and self.effects is not None and self.effects.mutation is Mutation.NONE:
            raise InvalidOperation(
                f"Operation {op!r} declares mutating=True and an effect profile with mutation 'none'. One of the "
                f"two is wrong, and no consumer can be asked to guess which: declare the mutation it performs"
            )
        if self.scopes and self.permission is not None:
            raise InvalidOperation(
                f"Operation {op!r} declares BOTH scopes and a permission; an operation is typed by scopes or by "
                f"a permission: declare one, not both"
            )
        if self.amends_named_target and self.named_target is None:
            raise InvalidOperation(
                f"Operation {op!r} declares that it amends its named target and names none: "
                f"pass named_target='<argument>'"
            )
        if self.creates_named_target and self.amends_named_target:
            raise InvalidOperation(
                f"Operation {op!r} declares that it creates its named target AND that it amends it: "
                f"it does one of the two"
            )
        if self.creates_named_target and self.named_target is None:
            raise InvalidOperation(
                f"Operation {op!r} declares that it creates its named target and names none: "
                f"pass named_target='<argument>'"
            )
        properties = (self.input_schema or {}).get("properties")
        if self.named_target is not None and isinstance(properties, Mapping) and self.named_target not in properties:
            raise InvalidOperation(
                f"Operation {op!r} names the target {self.named_target!r}, which is not an argument of its input "
                f"schema ({', '.join(properties) or 'none'}): name one of its arguments"
            )

    # ------------------------------------------------------------------ queries
    @property
    def id(self) -> OperationId:
        """The operation's identity, whatever the spelling of its name."""
        return OperationId(self.name)

    def supports_surface(self, surface: str) -> bool:
        """Every surface when ``surfaces`` is None; otherwise exact membership (case-sensitive)."""
        return self.surfaces is None or surface in self.surfaces

    def effect_ceiling(self) -> EffectProfile:
        """``effects``, or :meth:`EffectProfile.unclassified` — never ``None``, never harmless by default."""
        return self.effects if self.effects is not None else EffectProfile.unclassified()

    @property
    def may_mutate(self) -> bool:
        """What every gate should read: declared mutating, or a ceiling that allows a change (unclassified does)."""
        return self.mutating or self.effect_ceiling().mutates

    def ceiling_for_call(
        self, arguments: Mapping[str, Any], policy: AuthorityPolicy | None = None, facts: ContextFacts | None = None
    ) -> EffectProfile:
        """The ceiling this call carries, with this handler named (descents bound to its digest may apply)."""
        subject = CallSubject(self.name, self.handler_digest(), policy, facts)
        return self.effect_ceiling().for_call(arguments, subject)

    def handler_digest(self) -> str | None:
        """``sha256:<hex>`` of the handler's source lines; ``None`` when they cannot be read (builtins...).

        Its limit is part of the contract: a handler that delegates changes behaviour without changing
        this digest. A declared operation's digest covers its whole class (constructor and ``run``).
        """
        source = getattr(self.handler, SOURCE_ATTRIBUTE, self.handler)
        try:
            lines, _ = inspect.getsourcelines(source)
        except (OSError, TypeError):
            return None
        return "sha256:" + hashlib.sha256("".join(lines).encode()).hexdigest()

    def content_of(self, arguments: Mapping[str, Any]) -> str | None:
        """What content this call acts on: ``acts_on(arguments)`` (e.g. ``sha256:<hex>`` of an archive).

        ``None`` when the operation declares no ``acts_on``, when it says ``None``, or when what it
        returns is not one line of plain text (a digest with a space or a line break around it is
        "cannot say", never trimmed into one). A standing grant lends nothing to a call whose
        content cannot be said.
        """
        if self.acts_on is None:
            return None
        from milpa_chat.command.canonical import Canonical

        found = self.acts_on(arguments)
        return found if isinstance(found, str) and Canonical.one_line(found) else None

    def instrument_digest(self) -> str | None:
        """``sha256:<hex>`` pinning this operation as a measuring instrument: its declaration and its handler.

        Taken over the canonical JSON of every declared field (the handler as :meth:`handler_digest`);
        ``None`` when the handler's source cannot be read or a declared schema is not JSON, so nothing
        measured by it can count as green. Same limit as :meth:`handler_digest`: a handler that
        delegates changes behaviour without changing it.
        """
        handler = self.handler_digest()
        if handler is None:
            return None
        declared = {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
            "output_schema": self.output_schema,
            "mutating": self.mutating,
            "requires_confirmation": self.requires_confirmation,
            "scopes": list(self.scopes),
            "version": self.version,
            "path": self.path,
            "surfaces": None if self.surfaces is None else list(self.surfaces),
            "permission": self.permission,
            "named_target": self.named_target,
            "effects": None if self.effects is None else self.effects.to_dict(),
            "creates_named_target": self.creates_named_target,
            "amends_named_target": self.amends_named_target,
            "preconditions": [c.to_dict() for c in self.preconditions],
            "postconditions": [c.to_dict() for c in self.postconditions],
            "artifacts": list(self.artifacts),
            "observable_evidence": list(self.observable_evidence),
            "handler": handler,
        }
        try:
            text = json.dumps(declared, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            return None
        return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def sequence_for(self, arguments: Mapping[str, Any]) -> str | None:
        """Which sequence this call continues (``continues`` trimmed; blank is none)."""
        if self.continues is None:
            return None
        found = self.continues(arguments)
        if not isinstance(found, str) or trim_ascii(found) == "":
            return None
        return trim_ascii(found)

    # -------------------------------------------------------------------- calling
    def invoke(self, arguments: Mapping[str, Any], context: InvocationContext | None = None) -> Any:
        """Call the handler with the input (and the context when it takes one); may return an awaitable."""
        return call_handler(self.handler, dict(arguments), context, handler_arity(self.handler))

    @classmethod
    def from_class(cls, declared: type | str, resolve: Resolver | None = None) -> Operation:
        """The operation a declared class describes; ``resolve(type)`` provides ``run()``'s collaborators.

        Raises :class:`~milpa_chat.command.OperationDeclarationError` saying what to declare.
        """
        parts = read_declared(declared, resolve)
        return cls(parts.name, parts.description, parts.handler, **parts.options)


def declared_operation(target: type | str, resolve: Resolver | None = None) -> Operation:
    """The :class:`Operation` a declared class describes: :meth:`Operation.from_class` as a function."""
    return Operation.from_class(target, resolve)


def handler_arity(handler: Callable[..., Any]) -> int:
    """How many positional arguments a handler takes, capped at 2 (input, context)."""
    try:
        params = list(inspect.signature(handler).parameters.values())
    except (TypeError, ValueError):
        return 2
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return 2
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return min(len(positional), 2)


def call_handler(handler: Callable[..., Any], arguments: dict[str, Any], context: Any, arity: int) -> Any:
    if arity >= 2:
        return handler(arguments, context)
    return handler(arguments) if arity == 1 else handler()
