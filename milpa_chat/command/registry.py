"""``RegistryProjector``: operations as tools of a :class:`~milpa_chat.runtime.ToolRegistry`.

Projected onto the registry, an operation runs through the whole pipeline — validation, scopes,
channel policy, rate limits, confirmation, verification, events, audit — so the agent and every
chat adapter get it with the same approvals as a ``@tool``. The mapping:

* name: the tool catalogue's spelling of the identity (``posts:publish`` -> ``posts_publish``);
* ``mutating``: declared mutating, *or* a ceiling that allows any change — an operation that
  declared no effect is unclassified and therefore treated as mutating (confirmation on chat
  channels), never as harmless;
* ``Confirms`` -> ``confirm=True``; ``Needs(scopes)`` -> ``scopes`` (a ``permission`` becomes the one
  scope required); ``verify=`` (per operation) -> ``verify=`` (someone else approves);
* the handler receives the :class:`~milpa_chat.command.InvocationContext` attributed from the
  :class:`~milpa_chat.runtime.ToolContext` of each call (:func:`attribute_call`), never from arguments.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from milpa_chat.command.atom import Operation, call_handler, declared_operation, handler_arity
from milpa_chat.command.context import InvocationContext
from milpa_chat.command.declared import Resolver, is_declared
from milpa_chat.command.errors import InvalidInput
from milpa_chat.command.ids import OperationId
from milpa_chat.command.surfaces import CommandProvider, SurfaceProjector
from milpa_chat.errors import DeclarationError, ToolAlreadyRegisteredError, ToolError
from milpa_chat.runtime.signature import is_async_callable

if TYPE_CHECKING:
    from milpa_chat.runtime import ToolContext, ToolDefinition, ToolRegistry, VerifyPolicy

__all__ = ["VERIFIED_CHANNELS", "RegistryProjector", "ToolModel", "attribute_call", "tool_model_of"]

#: Channels whose principal is an identity the platform vouched for (a signed update, a session).
VERIFIED_CHANNELS: frozenset[str] = frozenset({"telegram", "slack", "web"})
#: Channels whose principal is the local process or notebook user: an executor, not an actor.
LOCAL_CHANNELS: frozenset[str] = frozenset({"cli", "jupyter"})

Source = Operation | CommandProvider | type
VerifyChoice = Callable[[Operation], "VerifyPolicy | None"] | Mapping[str, "VerifyPolicy"] | None


def attribute_call(ctx: ToolContext) -> InvocationContext | None:
    """The attribution of a call: ``None`` when the surface names nobody.

    ``telegram``/``slack``/``web`` principals are verified actors; ``cli``/``jupyter`` principals
    are executors (a terminal is not a person); any other channel names an unverified actor.
    ``ctx.extra["approval_id"]``, when a surface sets it, is the authorising decision.
    """
    if not ctx.principal:
        return None
    approval = ctx.extra.get("approval_id")
    authorization = approval if isinstance(approval, str) else None
    if ctx.channel in LOCAL_CHANNELS:
        return InvocationContext(channel=ctx.channel, executor=ctx.principal, authorization_id=authorization,
                                 correlation_id=ctx.request_id)  # fmt: skip
    return InvocationContext(
        actor=ctx.principal,
        verified=ctx.channel in VERIFIED_CHANNELS,
        channel=ctx.channel,
        authorization_id=authorization,
        correlation_id=ctx.request_id,
    )


@dataclasses.dataclass(frozen=True, slots=True)
class ToolModel:
    """An operation as a registry tool: plain data, what :meth:`RegistryProjector.register` materialises."""

    name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None
    mutating: bool
    confirm: bool
    scopes: tuple[str, ...]
    version: str | None
    operation: str
    named_target: str | None
    effects: dict[str, Any] | None
    #: The surfaces the operation opted into (``None``: every surface).
    surfaces: tuple[str, ...] | None = None
    #: Someone else approves each call (a ``VerifyPolicy``).
    verify: bool = False
    tags: tuple[str, ...] = ()

    surface: ClassVar[str] = "tools"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"surface": self.surface}
        data.update({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})
        data["scopes"] = list(self.scopes)
        data["tags"] = list(self.tags)
        data["surfaces"] = None if self.surfaces is None else list(self.surfaces)
        return data

    def supports_surface(self, surface: str) -> bool:
        """Every surface when ``surfaces`` is None; otherwise exact membership (as ``Operation``)."""
        return self.surfaces is None or surface in self.surfaces

    @classmethod
    def of(cls, tool: ToolDefinition) -> ToolModel:
        """A registry tool read back as a model: the one way every surface reads the catalogue.

        A tool projected from an :class:`Operation` brings its canonical id, named target, effects
        and surfaces (from ``tool.extra``); a plain ``@tool`` has no effect profile (``None``) and
        opts into every surface.
        """
        extra = tool.extra
        surfaces = extra.get("surfaces")
        effects = extra.get("effects")
        return cls(
            name=tool.name,
            description=tool.description,
            input_schema=dict(tool.input_schema or {"type": "object", "properties": {}}),
            output_schema=None if tool.output_schema is None else dict(tool.output_schema),
            mutating=tool.mutating,
            confirm=tool.confirm,
            scopes=tuple(tool.scopes),
            version=tool.version,
            operation=str(extra.get("operation") or OperationId(tool.name).canonical),
            named_target=extra.get("named_target") if isinstance(extra.get("named_target"), str) else None,
            effects=dict(effects) if isinstance(effects, Mapping) else None,
            surfaces=tuple(surfaces) if isinstance(surfaces, list | tuple) else None,
            verify=tool.verify is not None,
            tags=tuple(tool.tags),
        )


def tool_model_of(operation: Operation, *, verify: bool = False) -> ToolModel:
    """The tool ``operation`` becomes on a registry (what :meth:`RegistryProjector.project` returns)."""
    scopes = tuple(operation.scopes) or ((operation.permission,) if operation.permission else ())
    return ToolModel(
        name=OperationId(operation.name).for_tool(),
        description=operation.description,
        input_schema=dict(operation.input_schema or {"type": "object", "properties": {}}),
        output_schema=None if operation.output_schema is None else dict(operation.output_schema),
        mutating=operation.may_mutate,
        confirm=operation.requires_confirmation,
        scopes=scopes,
        version=operation.version,
        operation=OperationId(operation.name).canonical,
        named_target=operation.named_target,
        effects=operation.effect_ceiling().to_dict(),
        surfaces=None if operation.surfaces is None else tuple(operation.surfaces),
        verify=verify,
        tags=("operation",),
    )


class RegistryProjector(SurfaceProjector[ToolModel]):
    """Projects operations onto ``registry`` (surface ``"tools"``: the agent's catalogue and the chat commands).

    ``resolve`` provides the collaborators of declared classes passed to :meth:`register`;
    ``verify`` gives an operation (by any spelling of its name, or through a function) a
    :class:`~milpa_chat.runtime.VerifyPolicy`; ``attribute`` builds the InvocationContext of a call.
    """

    surface: ClassVar[str] = "tools"

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        resolve: Resolver | None = None,
        verify: VerifyChoice = None,
        timeout: float = 30.0,
        attribute: Callable[[ToolContext], InvocationContext | None] = attribute_call,
    ) -> None:
        self.registry = registry
        self.resolve = resolve
        self.verify = verify
        self.timeout = timeout
        self.attribute = attribute

    # ------------------------------------------------------------------- model
    def project(self, operation: Operation) -> ToolModel:
        """The tool ``operation`` becomes (inert: nothing is registered)."""
        return tool_model_of(operation, verify=self._verify_policy(operation) is not None)

    # -------------------------------------------------------------- materialise
    def operations_of(self, *sources: Source | Iterable[Source]) -> list[Operation]:
        """Operations from operations, providers, declared classes (with ``resolve``) or lists of them."""
        found: list[Operation] = []
        for source in sources:
            if isinstance(source, Operation):
                found.append(source)
            elif is_declared(source):
                found.append(declared_operation(source, self.resolve))  # type: ignore[arg-type]
            elif isinstance(source, CommandProvider) and not isinstance(source, type):
                found.extend(source.operations())
            elif isinstance(source, Iterable) and not isinstance(source, str | type):
                found.extend(self.operations_of(*source))
            else:
                raise DeclarationError(
                    f"RegistryProjector cannot project {source!r}: pass an Operation, a CommandProvider, or a "
                    f"class declared with @operation(...)"
                )
        return found

    def register(self, *sources: Source | Iterable[Source]) -> list[ToolDefinition]:
        """Register every operation that opts into this surface; all or none (a name clash registers nothing)."""
        definitions = [self.definition(op) for op in self.operations_of(*sources) if self.supports(op)]
        seen: set[str] = set()
        for d in definitions:
            if d.name in seen or self.registry.has(d.name):
                raise ToolAlreadyRegisteredError(d.name)
            seen.add(d.name)
        return [self.registry.add(d) for d in definitions]

    def definition(self, operation: Operation) -> ToolDefinition:
        """The :class:`~milpa_chat.runtime.ToolDefinition` of ``operation`` (not registered)."""
        from milpa_chat.runtime.declare import definition_from_schema

        model = self.project(operation)
        definition = definition_from_schema(
            model.name, model.description, model.input_schema, self._invoke(operation),
            scopes=model.scopes, mutating=model.mutating, confirm=model.confirm, timeout=self.timeout,
            version=model.version, output_schema=model.output_schema, verify=self._verify_policy(operation),
            tags=("operation",),
        )  # fmt: skip
        extra = {
            "qualname": getattr(operation.handler, "__qualname__", operation.name),
            "operation": model.operation,
            "operation_name": operation.name,
            "named_target": operation.named_target,
            "effects": model.effects,
            "path": operation.path,
            "surfaces": None if model.surfaces is None else list(model.surfaces),
        }
        return dataclasses.replace(definition, extra=extra)

    def _verify_policy(self, operation: Operation) -> VerifyPolicy | None:
        choice = self.verify
        if choice is None:
            return None
        if isinstance(choice, Mapping):
            return next((p for name, p in choice.items() if OperationId(name) == operation.id), None)
        return choice(operation)

    def _invoke(self, operation: Operation) -> Callable[[dict[str, Any], ToolContext], Any]:
        handler, arity, attribute = operation.handler, handler_arity(operation.handler), self.attribute
        if is_async_callable(handler):

            async def invoke_async(args: dict[str, Any], ctx: ToolContext) -> Any:
                try:
                    return _plain(await call_handler(handler, args, attribute(ctx), arity))
                except InvalidInput as exc:
                    raise ToolError(str(exc), code="VALIDATION_ERROR") from None

            return invoke_async

        def invoke(args: dict[str, Any], ctx: ToolContext) -> Any:
            try:
                return _plain(call_handler(handler, args, attribute(ctx), arity))
            except InvalidInput as exc:
                raise ToolError(str(exc), code="VALIDATION_ERROR") from None

        return invoke


def _plain(value: Any) -> Any:
    """Domain data as JSON-ready data (enums as their values, dataclasses as dicts); a ToolResult as it is."""
    from milpa_chat.runtime import ToolResult

    if isinstance(value, ToolResult):
        return value
    from pydantic_core import to_jsonable_python

    return to_jsonable_python(value, fallback=str)
