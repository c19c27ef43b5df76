"""``LlmService``: one async ``generate()`` over the official ``openai`` and ``anthropic`` SDKs.

Callers speak OpenAI's chat format (see :mod:`milpa_chat.gateway.translate`); Anthropic requests
and responses are translated both ways. The SDKs are imported on first use, so importing this
module is cheap and works without either installed.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, Protocol, cast

from milpa_chat._extras import require
from milpa_chat.gateway.errors import (
    LlmAuthError,
    LlmBadResponseError,
    LlmError,
    from_sdk_error,
    provider_label,
)
from milpa_chat.gateway.translate import (
    MalformedResponseError,
    anthropic_tools,
    from_anthropic,
    from_openai,
    openai_tools,
    to_anthropic,
)

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic
    from openai import AsyncOpenAI

__all__ = ["OPENAI_COMPATIBLE", "ChannelObserver", "LlmReply", "LlmService", "OnText", "Usage"]

#: ``on_text(piece)``: called with each piece of the answer's text as the provider streams it.
OnText = Callable[[str], Awaitable[None]]

OPENAI_COMPATIBLE = frozenset({"openai", "openai-compatible", "ollama", "vllm", "lmstudio", "lm-studio"})
"""Provider names served by the ``openai`` SDK (point ``base_url`` at the local server)."""

_DEFAULT_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
_ANTHROPIC_FINISH = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}

Tools = Iterable[Mapping[str, Any] | object]


class ChannelObserver(Protocol):
    """Sees every request body exactly as it is handed to the SDK (after translation), never headers.

    Called once per ``generate()`` just before the request; it must be quick and must not raise.
    """

    def observe(self, url: str, payload: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens the provider counted for one call."""

    input_tokens: int
    output_tokens: int

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class LlmReply(dict[str, Any]):
    """The assistant message, OpenAI-shaped: ``{"role": "assistant", "content": str, "tool_calls"?: [...]}``.

    It is a plain ``dict`` (append it to the history as is); the call's metadata are attributes:
    ``usage`` (:class:`Usage` or ``None``), ``finish_reason`` (OpenAI's vocabulary: ``stop``,
    ``tool_calls``, ``length`` ...; Anthropic's stop reasons are mapped), ``model`` and ``provider``.
    """

    def __init__(
        self,
        message: Mapping[str, Any],
        *,
        provider: str,
        model: str,
        usage: Usage | None = None,
        finish_reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model
        self.usage = usage
        self.finish_reason = finish_reason

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The requested tool calls (empty for a final answer)."""
        return list(self.get("tool_calls") or [])


def resolve_provider(provider: str | None, model: str, client: object | None = None) -> str:
    """``"openai"`` or ``"anthropic"``.

    An explicit ``provider`` wins (OpenAI-compatible names such as ``ollama`` or ``vllm`` mean
    ``"openai"``); else an injected SDK client's package decides; else ``claude`` in the model
    name selects Anthropic, and everything else OpenAI.
    """
    if provider is not None:
        name = provider.strip().lower()
        if name == "anthropic":
            return "anthropic"
        if name in OPENAI_COMPATIBLE:
            return "openai"
        raise ValueError(
            f"Unknown provider {provider!r}. Use 'anthropic', or 'openai' for OpenAI and any "
            f"OpenAI-compatible server (vLLM, Ollama, LM Studio) reached through base_url=."
        )
    if client is not None:
        root = type(client).__module__.split(".")[0]
        if root in ("openai", "anthropic"):
            return root
    return "anthropic" if "claude" in model.lower() else "openai"


class LlmService:
    """Ask a chat model for the next assistant message (streamed, when ``generate(on_text=...)`` is given).

    ``provider``: ``"openai"`` (also OpenAI-compatible servers), ``"anthropic"`` or ``None`` (pick
    by model name: ``claude`` -> Anthropic). ``api_key``: falls back to the SDK's environment
    variable (``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``); a local server that ignores keys still
    needs a placeholder such as ``api_key="local"`` for OpenAI. ``base_url``: another endpoint, e.g.
    ``http://127.0.0.1:11434/v1`` for Ollama. ``client``: a ready ``openai.AsyncOpenAI`` /
    ``anthropic.AsyncAnthropic`` (then ``api_key``, ``base_url``, ``http_client``, ``timeout`` and
    ``max_retries`` belong to that client). ``http_client``: the SDK's own ``http_client`` option
    (an ``httpx2.AsyncClient``; the openai SDK also takes an ``httpx.AsyncClient``) replacing the
    transport; it stays yours to close. ``timeout`` (seconds, per attempt) and ``max_retries``
    (the SDK's retries of 408/409/429/5xx, connection errors and timeouts, honouring
    ``retry-after``) are passed to the SDK. ``observer`` sees each translated request body.
    """

    def __init__(
        self,
        *,
        provider: str | None = None,
        model: str,
        api_key: str | None = None,
        base_url: str | None = None,
        client: object | None = None,
        http_client: object | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        observer: ChannelObserver | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        if not model:
            raise ValueError("LlmService(model=...) needs a model name, e.g. 'gpt-4o' or 'claude-sonnet-4-5'")
        if client is not None and (api_key or base_url or http_client is not None):
            raise ValueError(
                "LlmService(client=...) is an SDK client that is already configured; pass api_key, "
                "base_url and http_client to that client instead of to LlmService."
            )
        if timeout <= 0 or max_retries < 0:
            raise ValueError("LlmService needs timeout > 0 seconds and max_retries >= 0")
        self.provider = resolve_provider(provider, model, client)
        self.model = model
        self.base_url = base_url.rstrip("/") if base_url else None
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.observer = observer
        self.log = logger or logging.getLogger("milpa_chat.gateway.llm")
        self._api_key = api_key
        self._http_client = http_client
        self._client: object | None = client
        self._owns_client = client is None and http_client is None
        self._sdk: ModuleType | None = None

    #: ``generate`` takes ``on_text=`` (the agent streams through it only when this is true).
    streams = True

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return f"LlmService(provider={self.provider!r}, model={self.model!r}{where})"

    @property
    def endpoint(self) -> str:
        """The base URL requests go to (the SDK's default when ``base_url`` was not given)."""
        if self.base_url:
            return self.base_url
        base = getattr(self._client, "base_url", None)
        return str(base).rstrip("/") if base is not None else _DEFAULT_URLS[self.provider]

    def _raw(self, data: dict[str, Any]) -> dict[str, Any]:
        """The provider's response as received, on ``self.log`` at DEBUG (what a translation bug is read from)."""
        if self.log.isEnabledFor(logging.DEBUG):
            self.log.debug("%s %s raw response: %s", self.provider, self.model, json.dumps(data, ensure_ascii=False))
        return data

    # --- the call --------------------------------------------------------------------------------

    async def generate(
        self,
        messages: str | Sequence[Mapping[str, Any]],
        tools: Tools | None = None,
        max_tokens: int = 4096,
        *,
        observer: ChannelObserver | None = None,
        on_text: OnText | None = None,
    ) -> LlmReply:
        """Send the history (OpenAI chat format; a string is one user message) and the tools.

        ``observer`` sees this request's body too, after the service's own observer. With ``on_text``,
        the request streams (OpenAI ``stream=True``, Anthropic ``messages.stream``) and ``on_text`` is
        awaited with each piece of text as it arrives; the reply returned is the same whole message.

        Returns the assistant message as an :class:`LlmReply`. Raises an :class:`LlmError`
        subclass when the provider cannot be used (``LlmAuthError``, ``LlmRateLimitError``,
        ``LlmContextTooLongError``, ``LlmUnavailableError``, ``LlmBadResponseError``,
        ``LlmRequestError``), ``ValueError`` for a malformed history and ``MissingExtraError``
        when the provider's SDK is not installed.
        """
        history: list[Mapping[str, Any]] = (
            [{"role": "user", "content": messages}] if isinstance(messages, str) else list(messages)
        )
        tool_list = list(tools or ())
        client = self._ensure_client()
        sdk = cast(ModuleType, self._sdk)
        observers = tuple(o for o in (self.observer, observer) if o is not None)
        try:
            if self.provider == "anthropic":
                return await self._ask_anthropic(
                    cast("AsyncAnthropic", client), history, tool_list, max_tokens, observers, on_text
                )
            return await self._ask_openai(
                cast("AsyncOpenAI", client), history, tool_list, max_tokens, observers, on_text
            )
        except MalformedResponseError as exc:
            raise self._bad_response(str(exc)) from exc
        except LlmError:
            raise
        except Exception as exc:
            mapped = from_sdk_error(exc, sdk, provider=self.provider, model=self.model, where=self.endpoint)
            if mapped is None:
                raise
            raise mapped from exc

    async def _ask_openai(
        self,
        client: AsyncOpenAI,
        history: list[Mapping[str, Any]],
        tools: list[Any],
        max_tokens: int,
        observers: Sequence[ChannelObserver] = (),
        on_text: OnText | None = None,
    ) -> LlmReply:
        body: dict[str, Any] = {"model": self.model, "messages": history}
        if tools:
            body["tools"] = openai_tools(tools)
            body["tool_choice"] = "auto"
        # api.openai.com wants max_completion_tokens (reasoning models refuse max_tokens);
        # OpenAI-compatible servers (vLLM, Ollama, LM Studio) all understand max_tokens.
        official = "://api.openai.com" in self.endpoint
        body["max_completion_tokens" if official else "max_tokens"] = max_tokens
        if on_text is not None:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        self._observe(f"{self.endpoint}/chat/completions", body, observers)
        if on_text is not None:
            data = self._raw(await _openai_streamed(await client.chat.completions.create(**body), on_text))
        else:
            data = self._raw(_dump(await client.chat.completions.create(**body)))
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise MalformedResponseError("the response has no choices")
        message = from_openai(choices[0].get("message"))
        usage = data.get("usage") or {}
        return LlmReply(
            message,
            provider=self.provider,
            model=str(data.get("model") or self.model),
            usage=_usage(usage.get("prompt_tokens"), usage.get("completion_tokens")),
            finish_reason=choices[0].get("finish_reason"),
        )

    async def _ask_anthropic(
        self,
        client: AsyncAnthropic,
        history: list[Mapping[str, Any]],
        tools: list[Any],
        max_tokens: int,
        observers: Sequence[ChannelObserver] = (),
        on_text: OnText | None = None,
    ) -> LlmReply:
        request = to_anthropic(history)
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "messages": request.messages}
        if request.system:
            body["system"] = request.system
        if tools:
            body["tools"] = anthropic_tools(tools)
        self._observe(f"{self.endpoint}/v1/messages", body, observers)
        if on_text is not None:
            async with client.messages.stream(**body) as events:
                async for event in events:
                    if event.type == "text" and event.text:
                        await on_text(event.text)
                data = self._raw(_dump(await events.get_final_message()))
        else:
            data = self._raw(_dump(await client.messages.create(**body)))
        content = data.get("content")
        if not isinstance(content, list):
            raise MalformedResponseError("the response has no list of content blocks")
        usage = data.get("usage") or {}
        stop = data.get("stop_reason")
        return LlmReply(
            from_anthropic(content),
            provider=self.provider,
            model=str(data.get("model") or self.model),
            usage=_usage(usage.get("input_tokens"), usage.get("output_tokens")),
            finish_reason=_ANTHROPIC_FINISH.get(stop, stop) if isinstance(stop, str) else None,
        )

    @staticmethod
    def _observe(url: str, body: Mapping[str, Any], observers: Sequence[ChannelObserver]) -> None:
        for observer in observers:
            observer.observe(url, copy.deepcopy(dict(body)))

    def _bad_response(self, what: str) -> LlmBadResponseError:
        label = provider_label(self.provider)
        return LlmBadResponseError(
            f"{label} answered for model {self.model!r} at {self.endpoint}, but {what}. "
            f"Check that base_url= points at an {label}-compatible API.",
            provider=self.provider,
            model=self.model,
        )

    # --- the SDK client --------------------------------------------------------------------------

    def _ensure_client(self) -> object:
        if self._sdk is None:
            extra = self.provider
            self._sdk = require(extra, extra=extra, feature=f"LlmService(provider={extra!r})")
        if self._client is None:
            self._client = self._build_client(self._sdk)
        return self._client

    def _build_client(self, sdk: ModuleType) -> object:
        options: dict[str, Any] = {"timeout": self.timeout, "max_retries": self.max_retries}
        if self._api_key:
            options["api_key"] = self._api_key
        if self.base_url:
            options["base_url"] = self.base_url
        if self._http_client is not None:
            options["http_client"] = self._http_client
        if self.provider == "anthropic":
            try:
                client = sdk.AsyncAnthropic(**options)
            except sdk.AnthropicError as exc:  # e.g. a configured credentials profile that is unusable
                mapped = from_sdk_error(exc, sdk, provider=self.provider, model=self.model, where=self.endpoint)
                raise (mapped or self._no_key()) from exc
            if client.api_key is None and client.auth_token is None and client.credentials is None:
                raise self._no_key()
            return cast(object, client)
        try:
            return cast(object, sdk.AsyncOpenAI(**options))
        except sdk.OpenAIError as exc:
            if "credentials" in str(exc).lower() or "api_key" in str(exc):
                raise self._no_key() from exc
            raise

    def _no_key(self) -> LlmAuthError:
        env = "ANTHROPIC_API_KEY" if self.provider == "anthropic" else "OPENAI_API_KEY"
        return LlmAuthError(
            f"No API key for {provider_label(self.provider)} (model {self.model!r}). Pass api_key=... or set "
            f"{env}; a local server that ignores keys accepts any placeholder, e.g. api_key='local'.",
            provider=self.provider,
            model=self.model,
        )

    async def aclose(self) -> None:
        """Close the SDK client if this service created it (injected clients stay open)."""
        if self._client is None or not self._owns_client:
            return
        client, self._client = self._client, None
        await cast("AsyncOpenAI | AsyncAnthropic", client).close()

    async def __aenter__(self) -> LlmService:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _dump(response: object) -> dict[str, Any]:
    """The SDK's parsed response as plain JSON data (the SDKs hand back a ``str`` for non-JSON bodies)."""
    dump = getattr(response, "model_dump", None)
    data = dump(mode="json", warnings=False) if callable(dump) else None
    if not isinstance(data, dict):
        raise MalformedResponseError("the body is not a JSON object")
    return data


async def _openai_streamed(stream: Any, on_text: OnText) -> dict[str, Any]:
    """An OpenAI chat-completions stream put back together as the response it stands for, ``on_text``
    awaited with each text delta as it arrives (tool calls are joined by their ``index``)."""
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    data: dict[str, Any] = {}
    async for chunk in stream:
        part = _dump(chunk)
        data.update({k: part[k] for k in ("id", "model", "created") if part.get(k) is not None})
        if part.get("usage"):
            data["usage"] = part["usage"]
        for choice in part.get("choices") or ():
            delta = choice.get("delta") or {}
            text = delta.get("content")
            if isinstance(text, str) and text:
                content.append(text)
                await on_text(text)
            for call in delta.get("tool_calls") or ():
                slot = calls.setdefault(int(call.get("index") or 0), {"type": "function", "function": {}})
                if call.get("id"):
                    slot["id"] = call["id"]
                function = call.get("function") or {}
                if function.get("name"):
                    slot["function"]["name"] = function["name"]
                slot["function"]["arguments"] = slot["function"].get("arguments", "") + (
                    function.get("arguments") or ""
                )
            finish = choice.get("finish_reason") or finish
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {**data, "choices": [{"index": 0, "message": message, "finish_reason": finish}]}


def _usage(input_tokens: Any, output_tokens: Any) -> Usage | None:
    if isinstance(input_tokens, int) and isinstance(output_tokens, int):
        return Usage(input_tokens=input_tokens, output_tokens=output_tokens)
    return None
