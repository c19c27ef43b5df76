"""``ToolResult``: the one shape every tool call returns.

The wire form is the 5-key envelope ``{success, data, message, error, meta}``.
``meta["type"]`` tells renderers which shape they hold (``list``, ``detail``,
``confirmation``, ``blocked``, ``error`` or absent for a generic result) and
``meta["code"]`` carries the :class:`ErrorCode` of a failed call.

``ToolResult.success`` and ``ToolResult.error`` are both factories (on the class) and
fields (on an instance)::

    r = ToolResult.success({"id": 1})   # factory
    r.success                            # True
    ToolResult.error("boom", code=ErrorCode.INTERNAL_ERROR).error   # "boom"
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any, Generic, Protocol, TypeVar, overload

__all__ = ["ErrorCode", "ToolResult"]


class ErrorCode(StrEnum):
    """Error codes carried in ``meta["code"]`` of a failed result."""

    TOOL_NOT_FOUND = "TOOL_NOT_FOUND"
    VALIDATION_ERROR = "VALIDATION_ERROR"
    NOT_FOUND = "NOT_FOUND"
    UNAUTHORIZED = "UNAUTHORIZED"
    FORBIDDEN = "FORBIDDEN"
    CONFIRMATION_REQUIRED = "CONFIRMATION_REQUIRED"
    TIMEOUT = "TIMEOUT"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    RATE_LIMITED = "RATE_LIMITED"


F = TypeVar("F")
V = TypeVar("V")


class _FactoryField(Generic[F, V]):
    """A name that is a factory on the class and a stored field on an instance."""

    def __init__(self, factory: Callable[..., Any]) -> None:
        self._factory = factory
        self._slot = ""
        self._bound: dict[type, Any] = {}

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = "_" + name

    @overload
    def __get__(self, obj: None, owner: type) -> F: ...
    @overload
    def __get__(self, obj: object, owner: type) -> V: ...
    def __get__(self, obj: object | None, owner: type) -> F | V:
        if obj is None:
            bound: Any = self._bound.get(owner)
            if bound is None:
                bound = self._bound[owner] = functools.partial(self._factory, owner)
            return bound  # type: ignore[no-any-return]
        return getattr(obj, self._slot)  # type: ignore[no-any-return]


def _make_success(
    cls: type[ToolResult],
    data: Any = None,
    message: str | None = None,
    meta: Mapping[str, Any] | None = None,
) -> ToolResult:
    return cls(True, data, message, None, dict(meta) if meta else {})


def _make_error(
    cls: type[ToolResult],
    error: str,
    data: Any = None,
    meta: Mapping[str, Any] | None = None,
    *,
    code: ErrorCode | str | None = None,
) -> ToolResult:
    merged: dict[str, Any] = dict(meta) if meta else {}
    if code is not None:
        merged["code"] = str(code)
    merged["type"] = "error"
    return cls(False, data, None, error, merged)


class _SuccessFactory(Protocol):
    def __call__(
        self, data: Any = None, message: str | None = None, meta: Mapping[str, Any] | None = None
    ) -> ToolResult: ...


class _ErrorFactory(Protocol):
    def __call__(
        self,
        error: str,
        data: Any = None,
        meta: Mapping[str, Any] | None = None,
        *,
        code: ErrorCode | str | None = None,
    ) -> ToolResult: ...


class ToolResult:
    """Immutable result of a tool call: ``success``, ``data``, ``message``, ``error``, ``meta``."""

    __slots__ = ("_data", "_error", "_message", "_meta", "_success")
    _success: bool
    _data: Any
    _message: str | None
    _error: str | None
    _meta: dict[str, Any]

    success: _FactoryField[_SuccessFactory, bool] = _FactoryField(_make_success)
    error: _FactoryField[_ErrorFactory, str | None] = _FactoryField(_make_error)

    def __init__(
        self,
        success: bool,
        data: Any = None,
        message: str | None = None,
        error: str | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        object.__setattr__(self, "_success", bool(success))
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_message", message)
        object.__setattr__(self, "_error", error)
        object.__setattr__(self, "_meta", dict(meta) if meta else {})

    @classmethod
    def _of(cls, success: bool, data: Any, message: str | None, error: str | None, meta: dict[str, Any]) -> ToolResult:
        """The pipeline's constructor: ``meta`` is a fresh dict the result takes over (not copied)."""
        result = object.__new__(cls)
        _set_success(result, success)
        _set_data(result, data)
        _set_message(result, message)
        _set_error(result, error)
        _set_meta(result, meta)
        return result

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ToolResult is immutable; use with_meta() to derive a new one ({name!r})")

    # ----------------------------------------------------------------- fields
    @property
    def data(self) -> Any:
        return self._data

    @property
    def message(self) -> str | None:
        return self._message

    @property
    def meta(self) -> dict[str, Any]:
        return self._meta

    # -------------------------------------------------------------- factories
    @classmethod
    def paginated(
        cls,
        items: list[Any],
        page: int,
        total_items: int,
        limit: int,
        message: str | None = None,
        extra_meta: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """A page of ``items``; ``meta.pagination`` tells renderers which page buttons to show."""
        if limit <= 0:
            raise ValueError(f"paginated(): limit must be a positive page size, got {limit}")
        total_pages = math.ceil(total_items / limit)
        meta = dict(extra_meta) if extra_meta else {}
        meta["type"] = "list"
        meta["pagination"] = {
            "page": page,
            "total_pages": total_pages,
            "total_items": total_items,
            "limit": limit,
            "has_prev": page > 1,
            "has_next": page < total_pages,
        }
        return cls(True, list(items), message, None, meta)

    @classmethod
    def detail(
        cls,
        item: Any,
        entity: str,
        message: str | None = None,
        actions: list[Mapping[str, Any]] | None = None,
    ) -> ToolResult:
        """One entity and the actions a user can take on it (``[{label, action, ...}]``)."""
        return cls(
            True,
            item,
            message,
            None,
            {"type": "detail", "entity": entity, "actions": [dict(a) for a in actions or []]},
        )

    @classmethod
    def confirmation(
        cls,
        message: str,
        details: Any,
        action: str,
        target: str,
        target_id: int | str,
    ) -> ToolResult:
        """A result that asks the caller to confirm ``action`` on ``target``."""
        return cls(
            True,
            details,
            message,
            None,
            {
                "type": "confirmation",
                "requires_confirmation": True,
                "action": action,
                "target": target,
                "target_id": target_id,
            },
        )

    @classmethod
    def blocked(cls, reason: str, suggestion: str | None = None) -> ToolResult:
        """A refusal by a rule, with an optional suggestion of what to do instead."""
        return cls(
            False,
            None,
            None,
            reason,
            {"type": "blocked", "blocked_by_rule": True, "suggestion": suggestion},
        )

    # ---------------------------------------------------------------- helpers
    @property
    def code(self) -> str | None:
        """The error code (``meta["code"]``), or ``None``."""
        code = self._meta.get("code")
        return code if isinstance(code, str) else None

    @property
    def type(self) -> str:
        """``meta["type"]`` or ``"generic"``."""
        t = self._meta.get("type")
        return t if isinstance(t, str) else "generic"

    def requires_confirmation(self) -> bool:
        return ToolResult.asks_for_confirmation(self.to_dict())

    @staticmethod
    def asks_for_confirmation(payload: Mapping[str, Any] | str | bytes) -> bool:
        """True when a result payload (dict or JSON text) asks for confirmation.

        Looks at ``meta.requires_confirmation`` and at a top-level ``requires_confirmation``
        (the flat data a model sees); never deeper.
        """
        if isinstance(payload, str | bytes):
            try:
                payload = json.loads(payload)
            except ValueError:
                return False
        if not isinstance(payload, Mapping):
            return False
        meta = payload.get("meta")
        if isinstance(meta, Mapping) and meta.get("requires_confirmation") is True:
            return True
        return payload.get("requires_confirmation") is True

    def is_blocked(self) -> bool:
        return self._meta.get("blocked_by_rule") is True

    @property
    def pagination(self) -> dict[str, Any] | None:
        p = self._meta.get("pagination")
        return p if isinstance(p, dict) else None

    @property
    def actions(self) -> list[dict[str, Any]]:
        a = self._meta.get("actions")
        return a if isinstance(a, list) else []

    @property
    def confirm_token(self) -> str | None:
        if isinstance(self._data, Mapping):
            token = self._data.get("confirm_token")
            return token if isinstance(token, str) else None
        return None

    def with_meta(self, extra: Mapping[str, Any] | None = None, /, **more: Any) -> ToolResult:
        """A copy with ``meta`` updated by ``extra`` and keyword items (the new keys win)."""
        meta = dict(self._meta)
        if extra:
            meta.update(extra)
        meta.update(more)
        return ToolResult(self._success, self._data, self._message, self._error, meta)

    # ---------------------------------------------------------- serialisation
    def to_dict(self) -> dict[str, Any]:
        return {
            "success": self._success,
            "data": self._data,
            "message": self._message,
            "error": self._error,
            "meta": self._meta,
        }

    def to_json(self, *, indent: int | None = 4) -> str:
        """The envelope as JSON (unicode kept as is; values JSON cannot hold are stringified)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=indent, default=_json_default)

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> ToolResult:
        """Rebuild a result from :meth:`to_dict` output (or a decoded wire envelope)."""
        if not isinstance(payload, Mapping) or "success" not in payload:
            raise ValueError(
                "ToolResult.from_dict() needs a mapping with at least a 'success' key "
                "(the envelope {success, data, message, error, meta})"
            )
        meta = payload.get("meta") or {}
        if not isinstance(meta, Mapping):
            raise ValueError(f"ToolResult.from_dict(): 'meta' must be an object, got {type(meta).__name__}")
        return cls(
            bool(payload["success"]),
            payload.get("data"),
            payload.get("message"),
            payload.get("error"),
            meta,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> ToolResult:
        return cls.from_dict(json.loads(text))

    # ----------------------------------------------------------------- dunder
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ToolResult):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if self._success:
            return f"ToolResult.success(data={self._data!r}, message={self._message!r}, meta={self._meta!r})"
        return f"ToolResult.error({self._error!r}, data={self._data!r}, meta={self._meta!r})"


# The slots' own setters: ToolResult._of fills a result without going through the refusing __setattr__.
_set_success = ToolResult.__dict__["_success"].__set__
_set_data = ToolResult.__dict__["_data"].__set__
_set_message = ToolResult.__dict__["_message"].__set__
_set_error = ToolResult.__dict__["_error"].__set__
_set_meta = ToolResult.__dict__["_meta"].__set__


def _json_default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    return str(value)
