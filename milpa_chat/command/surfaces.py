"""The two contracts every surface binds to, and the inert models projectors return.

* :class:`CommandProvider` — what a plugin implements to contribute operations.
* :class:`SurfaceProjector` — one per surface (``tools``, ``cli``, ``mcp``, ``http`` ...): it says
  whether an operation opts into its surface (:meth:`~SurfaceProjector.supports`) and describes the
  operation there as a :class:`SurfaceModel` (:meth:`~SurfaceProjector.project`). Projecting never
  runs, registers or answers anything, and projecting twice is harmless; materialising a model is
  another component's job (e.g. :meth:`RegistryProjector.register
  <milpa_chat.command.RegistryProjector.register>`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from milpa_chat.command.atom import Operation

__all__ = ["CommandProvider", "HttpRouteModel", "OperationHttpPolicy", "SurfaceModel", "SurfaceProjector"]


@runtime_checkable
class CommandProvider(Protocol):
    """Contributes operations: the host merges every provider's ``operations()`` into its command table."""

    def operations(self) -> Sequence[Operation]: ...


@runtime_checkable
class SurfaceModel(Protocol):
    """What one operation looks like on one surface: plain, comparable, serialisable data, no closures."""

    @property
    def surface(self) -> str: ...

    def to_dict(self) -> dict[str, Any]: ...


M = TypeVar("M", bound=SurfaceModel, covariant=True)


class SurfaceProjector(ABC, Generic[M]):
    """Turns an :class:`Operation` into its model on one surface. Subclasses set ``surface``."""

    surface: ClassVar[str]

    def supports(self, operation: Operation) -> bool:
        """Whether ``operation`` opts into this surface (``Operation.supports_surface``)."""
        return operation.supports_surface(self.surface)

    @abstractmethod
    def project(self, operation: Operation) -> M:
        """Describe ``operation`` on this surface. Must not execute, register or respond."""


@dataclass(frozen=True, slots=True)
class HttpRouteModel:
    """An HTTP route for an operation (the HTTP projector itself lives host-side)."""

    method: str
    path: str
    name: str
    scopes: Sequence[str] = ()
    permission: str | None = None

    surface: ClassVar[str] = "http"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scopes", tuple(self.scopes))

    def to_dict(self) -> dict[str, Any]:
        return {"surface": self.surface, "method": self.method, "path": self.path, "name": self.name,
                "scopes": list(self.scopes), "permission": self.permission}  # fmt: skip


Request = TypeVar("Request", contravariant=True)
Response = TypeVar("Response", covariant=True)


@runtime_checkable
class OperationHttpPolicy(Protocol[Request, Response]):
    """Decides an HTTP call of an operation: ``None`` to go ahead, or the refusal (401/403) already formed.

    It raises :class:`RuntimeError` when the operation demands identity and no authentication is
    wired (a configuration defect: not knowing is not allowing).
    """

    def enforce(self, operation: Operation, request: Request) -> Response | None: ...
