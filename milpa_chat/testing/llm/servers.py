"""Local LLM servers for tests: the OpenAI chat-completions and Anthropic messages wire formats.

Real HTTP on 127.0.0.1 (aiohttp), so the official SDKs talk to them unmodified through
``base_url``. Each server answers from a queue of scripted replies, records every request it
received and validates requests the way the real API does where that is cheap (tool results must
answer the tool calls before them, Anthropic roles must alternate, tool schemas must be objects),
answering 400 in the provider's error shape when a request is invalid::

    async with FakeAnthropicServer() as server:
        server.reply_tool_call("add", {"a": 1, "b": 2}).reply_text("3")
        llm = LlmService(model="claude-test", api_key=server.api_key, base_url=server.base_url)
        ...
        assert server.requests[0].body["tools"][0]["name"] == "add"

A request with ``"stream": true`` is answered with server-sent events in the provider's stream shape
(OpenAI ``chat.completion.chunk`` lines ending in ``data: [DONE]``; Anthropic ``message_start`` …
``message_stop`` events), the text a word at a time; :attr:`~_FakeLlmServer.first_tokens` records
when each stream's first text went out (what a measurement of latency compares against).

``responder``: a function ``body -> ScriptedReply`` that answers every request the script does not (a model
that decides from the request it reads, such as the playground's scripted model).
"""

from __future__ import annotations

import asyncio
import json
import re
import secrets
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Self

from aiohttp import web

from milpa_chat.testing._server import LocalServer
from milpa_chat.testing.llm.wire import (
    RecordedRequest,
    ScriptedReply,
    ScriptedToolCall,
    anthropic_problem,
    openai_problem,
)

__all__ = [
    "FakeAnthropicServer",
    "FakeOpenAIServer",
    "RecordedRequest",
    "ScriptedReply",
    "ScriptedToolCall",
]


class _FakeLlmServer(LocalServer, ABC):
    """The shared machinery; see :class:`FakeOpenAIServer` and :class:`FakeAnthropicServer`."""

    path = ""
    label = ""
    _context_message = ""

    def __init__(
        self,
        *,
        api_key: str | None = "test-key",
        validate: bool = True,
        responder: Callable[[dict[str, Any]], ScriptedReply] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        super().__init__(host=host, port=port)
        self.api_key = api_key
        self.validate = validate
        self.responder = responder
        self.requests: list[RecordedRequest] = []
        #: ``time.monotonic()`` when each streamed reply's first text was written, in order.
        self.first_tokens: list[float] = []
        self._script: deque[ScriptedReply] = deque()

    # --- lifecycle (start/stop, ``async with``/``with``, host/port/url: LocalServer) -----------

    def _routes(self, app: web.Application) -> None:
        app.router.add_post(self.path, self._handle)

    @property
    def base_url(self) -> str:
        """What to pass as the SDK's ``base_url``."""
        return self.url

    # --- scripting -------------------------------------------------------------------------------

    def enqueue(self, *replies: ScriptedReply) -> Self:
        """Append replies to the script; each request consumes one. Returns ``self`` for chaining."""
        self._script.extend(replies)
        return self

    def reply_text(
        self, text: str, *, delay: float = 0.0, usage: tuple[int, int] | None = None, chunk_delay: float = 0.0
    ) -> Self:
        """The next completion is a final text answer (streamed a word at a time, ``chunk_delay`` s apart)."""
        return self.enqueue(ScriptedReply(text=text, delay=delay, usage=usage, chunk_delay=chunk_delay))

    def reply_tool_call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | None = None,
        *,
        id: str | None = None,
        text: str = "",
        delay: float = 0.0,
    ) -> Self:
        """The next completion asks for one tool call (optionally with some text before it)."""
        call = ScriptedToolCall(name, arguments if arguments is not None else {}, id)
        return self.enqueue(ScriptedReply(text=text, tool_calls=(call,), delay=delay))

    def reply_tool_calls(
        self,
        calls: Iterable[ScriptedToolCall | tuple[str, Mapping[str, Any]]],
        *,
        text: str = "",
        delay: float = 0.0,
    ) -> Self:
        """The next completion asks for several tool calls at once."""
        items = tuple(c if isinstance(c, ScriptedToolCall) else ScriptedToolCall(c[0], c[1]) for c in calls)
        return self.enqueue(ScriptedReply(text=text, tool_calls=items, delay=delay))

    def fail(
        self,
        status: int,
        message: str | None = None,
        *,
        retry_after: float | None = None,
        error_type: str | None = None,
        code: str | None = None,
        times: int = 1,
        delay: float = 0.0,
    ) -> Self:
        """The next ``times`` requests get an HTTP error in the provider's shape.

        ``retry_after`` (seconds, may be fractional) is sent as ``retry-after``; the SDKs honour it
        between their retries.
        """
        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
        reply = ScriptedReply(
            status=status,
            error_message=message or f"scripted HTTP {status}",
            error_type=error_type,
            error_code=code,
            headers=headers,
            delay=delay,
        )
        return self.enqueue(*([reply] * times))

    def fail_context_too_long(self) -> Self:
        """The next request is refused the way the provider refuses an over-long prompt."""
        return self.enqueue(
            ScriptedReply(status=400, error_message=self._context_message, error_code="context_length_exceeded")
        )

    def reply_raw(
        self, body: str, *, status: int = 200, content_type: str = "application/json", delay: float = 0.0
    ) -> Self:
        """The next request gets ``body`` verbatim (for malformed-response tests)."""
        return self.enqueue(
            ScriptedReply(status=status, raw_body=body, headers={"content-type": content_type}, delay=delay)
        )

    @property
    def pending(self) -> int:
        """Scripted replies not consumed yet."""
        return len(self._script)

    @property
    def bodies(self) -> list[Any]:
        """The JSON body of every request received, in order."""
        return [r.body for r in self.requests]

    # --- handling --------------------------------------------------------------------------------

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        headers = {k.lower(): v for k, v in request.headers.items()}
        raw = await request.text()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        status, problem = self._check(headers, body, raw)
        if problem is not None:
            self._record(request, headers, body, status, problem, rejected=True)
            return self._error_response(ScriptedReply(status=status, error_message=problem))
        if not self._script and self.responder is not None:
            self._script.append(self.responder(body))
        if not self._script:
            message = f"{type(self).__name__}: no scripted reply left ({len(self.requests) + 1} requests received)"
            self._record(request, headers, body, 500, message, rejected=True)
            return self._error_response(
                ScriptedReply(status=500, error_message=message, headers={"x-should-retry": "false"})
            )
        reply = self._script.popleft()
        self._record(request, headers, body, reply.status, reply.error_message)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.raw_body is not None:
            return web.Response(status=reply.status, text=reply.raw_body, headers=dict(reply.headers))
        if reply.status >= 400:
            return self._error_response(reply)
        if body.get("stream") is True:
            return await self._stream(request, reply, body)
        return web.json_response(self._render(reply, body), headers=self._response_headers())

    async def _stream(self, request: web.Request, reply: ScriptedReply, body: dict[str, Any]) -> web.StreamResponse:
        response = web.StreamResponse(
            headers={**self._response_headers(), "content-type": "text/event-stream", "cache-control": "no-cache"}
        )
        await response.prepare(request)
        first = True
        for event, data, is_text in self._events(reply, body):
            if is_text and reply.chunk_delay and not first:
                await asyncio.sleep(reply.chunk_delay)
            line = (
                f"event: {event}\n" if event else ""
            ) + f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n"
            await response.write(line.encode())
            if is_text and first:
                first = False
                self.first_tokens.append(time.monotonic())
        await response.write_eof()
        return response

    def _check(self, headers: Mapping[str, str], body: Any, raw: str) -> tuple[int, str | None]:
        auth = self._auth_problem(headers)
        if auth is not None:
            return 401, auth
        if not isinstance(body, dict):
            return 400, "the request body is not a JSON object" if raw else "the request body is empty"
        if "stream" in body and not isinstance(body["stream"], bool):
            return 400, "stream: Input should be a valid boolean"
        problem = self._body_problem(body) if self.validate else None
        return (400, problem) if problem is not None else (200, None)

    def _record(
        self,
        request: web.Request,
        headers: dict[str, str],
        body: Any,
        status: int,
        error: str | None,
        *,
        rejected: bool = False,
    ) -> None:
        self.requests.append(
            RecordedRequest(request.method, request.path, headers, body, status, error, rejected, time.monotonic())
        )
        self.activity.notify()

    def _error_response(self, reply: ScriptedReply) -> web.Response:
        headers = {**self._response_headers(), **reply.headers}
        body = self._error_body(reply.status, reply.error_message or "", reply.error_type, reply.error_code)
        return web.json_response(body, status=reply.status, headers=headers)

    def _call_id(self, call: ScriptedToolCall) -> str:
        return call.id or f"{self._id_prefix()}{secrets.token_hex(12)}"

    @staticmethod
    def _arguments(call: ScriptedToolCall) -> Any:
        args = call.arguments
        return json.loads(args) if isinstance(args, str) and args else dict(args) if args else {}

    @staticmethod
    def _usage(reply: ScriptedReply, body: Mapping[str, Any]) -> tuple[int, int]:
        if reply.usage is not None:
            return reply.usage
        prompt = len(json.dumps(body.get("messages"), ensure_ascii=False)) // 4 + 1
        return prompt, len(reply.text) // 4 + 8 * len(reply.tool_calls) + 1

    # --- per provider ----------------------------------------------------------------------------

    @abstractmethod
    def _auth_problem(self, headers: Mapping[str, str]) -> str | None: ...

    @abstractmethod
    def _body_problem(self, body: dict[str, Any]) -> str | None: ...

    @abstractmethod
    def _render(self, reply: ScriptedReply, body: dict[str, Any]) -> dict[str, Any]: ...

    @abstractmethod
    def _events(self, reply: ScriptedReply, body: dict[str, Any]) -> Iterator[tuple[str | None, Any, bool]]:
        """The stream's events: ``(event name or None, data, carries text?)``."""

    @abstractmethod
    def _error_body(self, status: int, message: str, kind: str | None, code: str | None) -> dict[str, Any]: ...

    def _response_headers(self) -> dict[str, str]:
        return {}

    def _id_prefix(self) -> str:
        return ""


_OPENAI_ERROR_TYPES = {401: "invalid_request_error", 403: "permission_denied", 429: "requests"}
_OPENAI_ERROR_CODES = {401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded"}


class FakeOpenAIServer(_FakeLlmServer):
    """``POST /v1/chat/completions``; ``base_url`` is ``http://127.0.0.1:<port>/v1``.

    Checks ``Authorization: Bearer <api_key>`` when ``api_key`` is set.
    """

    path = "/v1/chat/completions"
    label = "OpenAI"
    _context_message = (
        "This model's maximum context length is 128000 tokens. However, your messages resulted in "
        "131072 tokens. Please reduce the length of the messages."
    )

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def _auth_problem(self, headers: Mapping[str, str]) -> str | None:
        if self.api_key is None:
            return None
        given = headers.get("authorization", "")
        if given == f"Bearer {self.api_key}":
            return None
        shown = given.removeprefix("Bearer ")[:8] or "(none)"
        return f"Incorrect API key provided: {shown}***. You can find your API key in your account settings."

    def _body_problem(self, body: dict[str, Any]) -> str | None:
        return openai_problem(body)

    def _id_prefix(self) -> str:
        return "call_"

    def _render(self, reply: ScriptedReply, body: dict[str, Any]) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None, "refusal": None}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": self._call_id(c),
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(self._arguments(c), ensure_ascii=False)},
                }
                for c in reply.tool_calls
            ]
        prompt, completion = self._usage(reply, body)
        finish = reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")
        return {
            "id": f"chatcmpl-{secrets.token_hex(12)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model"),
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }

    def _events(self, reply: ScriptedReply, body: dict[str, Any]) -> Iterator[tuple[str | None, Any, bool]]:
        base = {
            "id": f"chatcmpl-{secrets.token_hex(12)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model"),
        }

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}

        yield None, chunk({"role": "assistant", "content": ""}), False
        for piece in words(reply.text):
            yield None, chunk({"content": piece}), True
        for index, call in enumerate(reply.tool_calls):
            arguments = json.dumps(self._arguments(call), ensure_ascii=False)
            head = {"index": index, "id": self._call_id(call), "type": "function"}
            yield None, chunk({"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]}), False
            yield None, chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]}), False
        yield None, chunk({}, reply.finish_reason or ("tool_calls" if reply.tool_calls else "stop")), False
        options = body.get("stream_options") or {}
        if isinstance(options, dict) and options.get("include_usage"):
            prompt, completion = self._usage(reply, body)
            usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
            yield None, {**base, "choices": [], "usage": usage}, False
        yield None, "[DONE]", False

    def _error_body(self, status: int, message: str, kind: str | None, code: str | None) -> dict[str, Any]:
        default_type = "server_error" if status >= 500 else "invalid_request_error"
        return {
            "error": {
                "message": message,
                "type": kind or _OPENAI_ERROR_TYPES.get(status, default_type),
                "param": None,
                "code": code or _OPENAI_ERROR_CODES.get(status),
            }
        }

    def _response_headers(self) -> dict[str, str]:
        return {"x-request-id": f"req_{secrets.token_hex(12)}"}


_ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


class FakeAnthropicServer(_FakeLlmServer):
    """``POST /v1/messages``; ``base_url`` is ``http://127.0.0.1:<port>``.

    Requires an ``anthropic-version`` header and, when ``api_key`` is set, the key in ``x-api-key``
    or as ``Authorization: Bearer <key>`` (how the current ``anthropic`` SDK sends it).
    """

    path = "/v1/messages"
    label = "Anthropic"
    _context_message = "prompt is too long: 210000 tokens > 200000 maximum"

    def _auth_problem(self, headers: Mapping[str, str]) -> str | None:
        if self.api_key is not None and self.api_key not in (
            headers.get("x-api-key"),
            headers.get("authorization", "").removeprefix("Bearer "),
        ):
            return "invalid x-api-key"
        return None

    def _check(self, headers: Mapping[str, str], body: Any, raw: str) -> tuple[int, str | None]:
        status, problem = super()._check(headers, body, raw)
        if status == 401 or headers.get("anthropic-version"):
            return status, problem
        return 400, "anthropic-version: header is required"

    def _body_problem(self, body: dict[str, Any]) -> str | None:
        return anthropic_problem(body)

    def _id_prefix(self) -> str:
        return "toolu_"

    def _render(self, reply: ScriptedReply, body: dict[str, Any]) -> dict[str, Any]:
        content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
        content += [
            {"type": "tool_use", "id": self._call_id(c), "name": c.name, "input": self._arguments(c)}
            for c in reply.tool_calls
        ]
        prompt, completion = self._usage(reply, body)
        return {
            "id": f"msg_{secrets.token_hex(12)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": content,
            "stop_reason": reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn"),
            "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": completion},
        }

    def _events(self, reply: ScriptedReply, body: dict[str, Any]) -> Iterator[tuple[str | None, Any, bool]]:
        prompt, completion = self._usage(reply, body)
        message: dict[str, Any] = {
            "id": f"msg_{secrets.token_hex(12)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": prompt, "output_tokens": 1},
        }
        yield "message_start", {"type": "message_start", "message": message}, False
        index = 0
        if reply.text:
            start = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
            yield "content_block_start", start, False
            for piece in words(reply.text):
                delta = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}}
                yield "content_block_delta", delta, True
            yield "content_block_stop", {"type": "content_block_stop", "index": 0}, False
            index = 1
        for offset, call in enumerate(reply.tool_calls):
            block = {"type": "tool_use", "id": self._call_id(call), "name": call.name, "input": {}}
            at = index + offset
            yield "content_block_start", {"type": "content_block_start", "index": at, "content_block": block}, False
            partial = json.dumps(self._arguments(call), ensure_ascii=False)
            delta = {"type": "input_json_delta", "partial_json": partial}
            yield "content_block_delta", {"type": "content_block_delta", "index": at, "delta": delta}, False
            yield "content_block_stop", {"type": "content_block_stop", "index": at}, False
        stop = reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn")
        end = {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
               "usage": {"output_tokens": completion}}  # fmt: skip
        yield "message_delta", end, False
        yield "message_stop", {"type": "message_stop"}, False

    def _error_body(self, status: int, message: str, kind: str | None, code: str | None) -> dict[str, Any]:
        default_type = "api_error" if status >= 500 else "invalid_request_error"
        error = {"type": kind or _ANTHROPIC_ERROR_TYPES.get(status, default_type), "message": message}
        return {"type": "error", "error": error, "request_id": f"req_{secrets.token_hex(12)}"}

    def _response_headers(self) -> dict[str, str]:
        return {"request-id": f"req_{secrets.token_hex(12)}"}


def words(text: str) -> list[str]:
    """``text`` in stream pieces: each word with the blanks after it (joined, they give ``text`` back)."""
    return re.findall(r"\S+\s*|\s+", text)
