"""The value types of a declaration: ``Param`` (what a developer writes) and ``ParamSpec`` (what was found).

A leaf module: it imports nothing of the runtime, so ``declare``, ``signature``, ``schema`` and
``schema_derive`` all build on it without importing each other in a circle.
"""

from __future__ import annotations

import copy
import inspect
import math
from dataclasses import KW_ONLY, dataclass
from typing import Any

from milpa_chat.errors import DeclarationError

__all__ = ["Param", "ParamSpec"]

_EMPTY = inspect.Parameter.empty


@dataclass(frozen=True, slots=True)
class Param:
    """Describes one parameter: ``Annotated[int, Param("Page number", clamp=(1, 1000))]``.

    ``clamp=(low, high)`` moves an out-of-range number into the range (it never rejects) and
    the schema advertises ``minimum``/``maximum``; for bounds that reject, use
    ``Annotated[int, Field(ge=1, le=10)]``. ``type="object"`` (or ``properties=``/
    ``required_properties=``) declares an object-shaped ``dict`` parameter, open when
    ``properties`` is omitted and closed (``additionalProperties: false``) when given.
    ``examples`` go into the schema.
    """

    description: str = ""
    _: KW_ONLY
    clamp: tuple[float, float] | None = None
    type: str | None = None
    properties: dict[str, Any] | None = None
    required_properties: list[str] | None = None
    examples: list[Any] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.description, str):
            raise DeclarationError(f"Param(description=...) must be a string, got {self.description!r}")
        if self.clamp is not None:
            object.__setattr__(self, "clamp", _clamp(self.clamp))
        if self.type not in (None, "object"):
            raise DeclarationError(
                f"Param(type={self.type!r}) is not supported: only type='object' (an object-shaped dict "
                f"parameter) can be given; every other type comes from the annotation"
            )
        if self.properties is not None and not (
            isinstance(self.properties, dict) and all(isinstance(v, dict) for v in self.properties.values())
        ):
            raise DeclarationError(
                "Param(properties=...) must map property names to JSON schemas, e.g. {'title': {'type': 'string'}}"
            )
        self._check_required()
        if self.examples is not None and not isinstance(self.examples, list):
            raise DeclarationError(f"Param(examples=...) must be a list of example values, got {self.examples!r}")

    def _check_required(self) -> None:
        required = self.required_properties
        if required is None:
            return
        if isinstance(required, str) or not all(isinstance(r, str) for r in required):
            raise DeclarationError(f"Param(required_properties=...) must be a list of names, got {required!r}")
        unknown = [r for r in required if self.properties is not None and r not in self.properties]
        if unknown:
            raise DeclarationError(
                f"Param(required_properties=...) names {unknown} that are not in properties "
                f"({', '.join(self.properties or {})}); add them to properties or remove them"
            )

    @property
    def object_shaped(self) -> bool:
        return self.type == "object" or self.properties is not None or self.required_properties is not None

    def object_schema(self) -> dict[str, Any]:
        """The JSON Schema of an object-shaped parameter."""
        schema: dict[str, Any] = {"type": "object"}
        if self.properties is not None:
            schema["properties"] = copy.deepcopy(self.properties)
        if self.required_properties:
            schema["required"] = list(self.required_properties)
        if self.properties is not None:
            schema["additionalProperties"] = False
        return schema


def _clamp(value: Any) -> tuple[float, float]:
    ok = isinstance(value, tuple | list) and len(value) == 2
    ok = ok and all(isinstance(b, int | float) and not isinstance(b, bool) and math.isfinite(b) for b in value)
    if not ok or value[0] > value[1]:
        raise DeclarationError(
            f"Param(clamp={value!r}) must be a pair of finite numbers (low, high) with low <= high, "
            f"e.g. clamp=(1, 1000)"
        )
    return (value[0], value[1])


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """One schema parameter of a tool, as ``declare.py`` found it.

    ``annotation`` is resolved and stripped of ``Param``; ``default`` is ``inspect.Parameter.empty``
    for a required parameter; ``shape`` is the hand-written object schema of an object-shaped
    ``dict`` parameter (``Param(type="object")``), or None.
    """

    name: str
    annotation: Any
    default: Any = _EMPTY
    description: str | None = None
    clamp: tuple[float, float] | None = None
    shape: dict[str, Any] | None = None
    examples: list[Any] | None = None
