"""Exceptions of the LLM gateway, and the mapping from the official SDKs' errors to them.

Every exception names the provider, the model and what to do about it. The original SDK exception
is kept as ``__cause__``. Nothing here imports ``openai`` or ``anthropic``: :func:`from_sdk_error`
receives the SDK module that raised.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import ModuleType
from typing import Any

from milpa_chat.errors import MilpaError

__all__ = [
    "LlmAuthError",
    "LlmBadResponseError",
    "LlmContextTooLongError",
    "LlmError",
    "LlmRateLimitError",
    "LlmRequestError",
    "LlmUnavailableError",
    "from_sdk_error",
]

_PROVIDER_NAMES = {"openai": "OpenAI", "anthropic": "Anthropic"}
_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
_CONTEXT_PATTERN = re.compile(
    r"context[ _-]?length|context window|prompt is too long|too many tokens|maximum context|"
    r"input is too long|exceeds? the (model's )?(maximum|max)",
    re.IGNORECASE,
)


class LlmError(MilpaError):
    """The model could not be asked or did not answer usably.

    ``provider`` is ``"openai"`` or ``"anthropic"``; ``status_code`` is the HTTP status when the
    provider answered with one; ``detail`` is the provider's own message, when it gave one.
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        model: str,
        status_code: int | None = None,
        detail: str | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.status_code = status_code
        self.detail = detail


class LlmAuthError(LlmError):
    """The provider rejected the credentials (HTTP 401/403), or none were configured."""


class LlmRateLimitError(LlmError):
    """HTTP 429 after the SDK's own retries. ``retry_after`` is the provider's hint in seconds."""

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class LlmContextTooLongError(LlmError):
    """The conversation plus ``max_tokens`` does not fit the model's context window."""


class LlmUnavailableError(LlmError):
    """The provider is down, overloaded, unreachable or too slow (5xx, connection errors, timeouts)."""


class LlmBadResponseError(LlmError):
    """The provider answered, but not with something the gateway can read."""


class LlmRequestError(LlmError):
    """The provider refused the request itself (HTTP 400/404/422 ...): unknown model, invalid history."""


def provider_label(provider: str) -> str:
    """``"openai"`` -> ``"OpenAI"``; other names are returned unchanged."""
    return _PROVIDER_NAMES.get(provider, provider)


def _detail_of(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping) and isinstance(error.get("message"), str):
            return str(error["message"])
    message = getattr(exc, "message", None)
    return str(message if isinstance(message, str) else exc)


def _error_code(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping):
        error = body.get("error", body)
        if isinstance(error, Mapping):
            return f"{error.get('code') or ''} {error.get('type') or ''}"
    return ""


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """The provider's ``retry-after-ms`` / ``retry-after`` hint in seconds, when it is a number."""
    if headers is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            continue
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None


def _status_error(status: int, exc: BaseException, provider: str, model: str, where: str) -> LlmError:
    label = provider_label(provider)
    detail = _detail_of(exc).rstrip(". ")
    common: dict[str, Any] = {"provider": provider, "model": model, "status_code": status, "detail": detail}
    said = f"{label} answered HTTP {status} for model {model!r} at {where}: {detail}"
    if status in (401, 403):
        env = _KEY_ENV.get(provider, "the API key")
        return LlmAuthError(f"{said}. Check api_key= (or {env}) and that the key may use this model.", **common)
    if status == 429:
        response = getattr(exc, "response", None)
        retry_after = retry_after_seconds(getattr(response, "headers", None))
        hint = f"retry in {retry_after:g} s" if retry_after is not None else "retry later"
        return LlmRateLimitError(
            f"{said}. Rate limit or quota reached; {hint}, or raise max_retries=.", retry_after=retry_after, **common
        )
    if status in (400, 413) and (
        "context_length" in _error_code(exc) or status == 413 or _CONTEXT_PATTERN.search(detail)
    ):
        return LlmContextTooLongError(
            f"{said}. The conversation is too long for the model; drop or summarise old messages, "
            f"or lower max_tokens=.",
            **common,
        )
    if status >= 500 or status in (408, 409):
        return LlmUnavailableError(f"{said}. The provider is failing or overloaded; retry later.", **common)
    if status == 404:
        return LlmRequestError(f"{said}. Check the model name and base_url=.", **common)
    return LlmRequestError(f"{said}. The provider refused the request as sent.", **common)


def from_sdk_error(exc: BaseException, sdk: ModuleType, *, provider: str, model: str, where: str) -> LlmError | None:
    """Translate an exception raised by the ``openai`` or ``anthropic`` SDK (``sdk``).

    ``where`` names the endpoint (a base URL) for the message. Returns ``None`` for exceptions
    that are not the SDK's (those are programming errors and should propagate unchanged).
    """
    label = provider_label(provider)
    common: dict[str, Any] = {"provider": provider, "model": model}
    if isinstance(exc, sdk.APIStatusError):
        return _status_error(int(exc.status_code), exc, provider, model, where)
    if isinstance(exc, sdk.APITimeoutError):
        return LlmUnavailableError(
            f"{label} did not answer in time for model {model!r} at {where}. Retry later or raise timeout=.",
            **common,
        )
    if isinstance(exc, sdk.APIConnectionError):
        return LlmUnavailableError(
            f"Could not reach {label} for model {model!r} at {where}: {_detail_of(exc).rstrip('. ')}. "
            f"Check base_url= and the network.",
            **common,
        )
    if isinstance(exc, sdk.APIResponseValidationError):
        return LlmBadResponseError(
            f"{label} sent a response for model {model!r} that does not match its API: {_detail_of(exc)}.",
            **common,
        )
    credentials_error = getattr(sdk, "CredentialsError", None)
    if isinstance(credentials_error, type) and isinstance(exc, credentials_error):
        return LlmAuthError(
            f"{label} credentials for model {model!r} could not be used: {exc} "
            f"Pass api_key=... or set {_KEY_ENV.get(provider, 'the API key variable')}.",
            **common,
        )
    bases = tuple(c for c in (getattr(sdk, "OpenAIError", None), getattr(sdk, "AnthropicError", None)) if c)
    if isinstance(exc, bases):
        return LlmError(f"{label} call for model {model!r} failed: {exc}", **common)
    return None
