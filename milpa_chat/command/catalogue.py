"""One way of reading the catalogue: registry tools (and projected Operations) as :class:`ToolModel` s.

Every surface past the registry — the Telegram command menu, Slack ``/milpa`` subcommands, the
``milpa-chat`` CLI, the Jupyter explorer — reads the same thing: the tools a caller may see
(``registry.get_tool_summaries(ctx)``, its scopes), each read back as a :class:`ToolModel`
(:meth:`ToolModel.of`). A :class:`CatalogueProjector` is a :class:`SurfaceProjector` whose input is
an :class:`Operation`, a :class:`ToolModel` or a registry tool, so a plain ``@tool`` and a declared
operation are projected alike; it decides per tool whether it projects (:meth:`~CatalogueProjector.supports`):
a tool the operation did not opt into (``surfaces=[...]``) or a hidden one (``resolve_verification``:
approvers decide with buttons, it is no command) is left out.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeAlias, TypeVar

from milpa_chat.command.atom import Operation
from milpa_chat.command.registry import ToolModel, tool_model_of
from milpa_chat.command.surfaces import SurfaceModel, SurfaceProjector

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import ToolDefinition
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["HIDDEN", "CatalogueProjector", "Projectable", "model_of", "read_catalogue", "usage_of"]

#: Tools driven by buttons, never listed as commands.
HIDDEN: frozenset[str] = frozenset({"resolve_verification"})

Projectable: TypeAlias = "Operation | ToolModel | ToolDefinition"
M = TypeVar("M", bound=SurfaceModel, covariant=True)


def model_of(item: Projectable) -> ToolModel:
    """``item`` as the catalogue's model (an Operation as the registry projector would register it)."""
    if isinstance(item, ToolModel):
        return item
    if isinstance(item, Operation):
        return tool_model_of(item)
    return ToolModel.of(item)


def read_catalogue(registry: ToolRegistry, ctx: ToolContext | None = None) -> list[ToolModel]:
    """The tools ``ctx`` may see (all of them without ``ctx``), in registration order, as models."""
    found = (registry.get(summary["name"]) for summary in registry.get_tool_summaries(ctx))
    return [ToolModel.of(tool) for tool in found if tool is not None]


class CatalogueProjector(SurfaceProjector[M]):
    """A projector of catalogue entries onto one surface. Subclasses set ``surface`` and :meth:`describe`.

    ``hidden``: tool names never projected here (default :data:`HIDDEN`).
    """

    surface: ClassVar[str]

    def __init__(self, *, hidden: Iterable[str] = HIDDEN) -> None:
        self.hidden = frozenset(hidden)

    def supports(self, operation: Projectable) -> bool:
        """Whether the tool opted into this surface and is not hidden."""
        entry = model_of(operation)
        return entry.name not in self.hidden and entry.supports_surface(self.surface)

    def project(self, operation: Projectable) -> M:
        """The tool on this surface (inert: nothing is registered, sent or run)."""
        return self.describe(model_of(operation))

    @abstractmethod
    def describe(self, entry: ToolModel) -> M:
        """The surface model of one catalogue entry."""

    def catalogue(self, registry: ToolRegistry, ctx: ToolContext | None = None) -> list[M]:
        """Every tool ``ctx`` may see that this surface projects, as this surface's models."""
        return [self.describe(entry) for entry in read_catalogue(registry, ctx) if self.supports(entry)]


def _types(prop: Mapping[str, Any]) -> list[str]:
    kind = prop.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    found: list[str] = []
    for alt in [*prop.get("anyOf", ()), *prop.get("oneOf", ())]:
        if isinstance(alt, Mapping):
            found += _types(alt)
    return found


def type_of(prop: Mapping[str, Any]) -> str:
    """A property's type in one word (``integer``, ``string|null``, ``any``)."""
    kinds = _types(prop)
    return "|".join(dict.fromkeys(kinds)) if kinds else "any"


def enum_of(prop: Mapping[str, Any]) -> list[Any] | None:
    """A property's admissible values (``enum``, or a ``const`` per alternative), or ``None``."""
    if isinstance(prop.get("enum"), list):
        return list(prop["enum"])
    alternatives = [*prop.get("anyOf", ()), *prop.get("oneOf", ())]
    consts = [alt["const"] for alt in alternatives if isinstance(alt, Mapping) and "const" in alt]
    return consts or None


def _usage_part(name: str, prop: Mapping[str, Any], required: bool) -> str:
    choices = enum_of(prop)
    shown = "|".join(str(v) for v in choices) if choices else type_of(prop)
    if required:
        return f"<{name}: {shown}>"
    default = f" = {prop['default']}" if "default" in prop else ""
    return f"[{name}: {shown}{default}]"


def usage_of(name: str, schema: Mapping[str, Any], prefix: str = "/") -> str:
    """``/delete_note <note_id: integer> [reason: done|wrong = done]``: required first, in schema order."""
    props: Mapping[str, Any] = schema.get("properties") or {}
    required = [p for p in schema.get("required", ()) if p in props]
    order = required + [p for p in props if p not in required]
    parts = [_usage_part(p, props[p] if isinstance(props[p], Mapping) else {}, p in required) for p in order]
    return " ".join([f"{prefix}{name}", *parts])
