"""``McpServer``: a :class:`~milpa_chat.runtime.ToolRegistry` as an MCP server (the official ``mcp`` SDK).

Every tool the caller may see (its scopes) is an MCP tool with its input schema, its output schema
and annotations derived from its effects (:mod:`milpa_chat.mcp.tools`); every call runs through
``registry.call`` — validation, scopes, channel policy (``mcp`` requires an authenticated
principal), rate limits, confirmation, verification, events, audit — as:

* ``ToolContext.stdio(...)`` for the local process an MCP host spawned (:meth:`McpServer.run_stdio`);
* ``ToolContext.mcp(principal=..., scopes=...)`` for a streamable-HTTP caller, from the bearer token
  its request carries (:class:`~milpa_chat.mcp.BearerTokens`; :meth:`McpServer.run_http`).

A confirm or verify tool opens the same durable approval a chat does; when a chat
:class:`~milpa_chat.chat.Assistant` runs on this registry its cards go to the approver chats at
once, and the MCP client follows up with ``approval_status`` / ``approval_run``
(:mod:`milpa_chat.mcp.approvals`). ``resolve_verification`` is not offered (``hidden``): approvers
decide on their own surfaces, a model does not decide approvals.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from milpa_chat._extras import require
from milpa_chat.errors import DeclarationError
from milpa_chat.mcp.approvals import ApprovalTools
from milpa_chat.mcp.auth import BearerTokens, McpCaller
from milpa_chat.mcp.tools import Reply, annotations_for, error_reply, output_schema_for, reply_for
from milpa_chat.mcp.waiting import Progress, requested_wait, wait_for_decision
from milpa_chat.runtime.pipeline import CONFIRM_BY

if TYPE_CHECKING:
    from milpa_chat.chat.identity import Identities
    from milpa_chat.mcp.approvals import Ask
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import ToolDefinition
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["McpServer"]

log = logging.getLogger("milpa_chat.mcp")

Lifespan = Callable[[], AbstractAsyncContextManager[Any]]


def _sdk() -> Any:
    return require("mcp", extra="mcp", feature="The MCP server (milpa_chat.mcp)")


class McpServer:
    """Serve ``registry`` over MCP.

    ``stdio``: the caller a stdio server runs every call as (default ``McpCaller.stdio()``:
    principal ``stdio``, every scope). ``tokens``: the bearer tokens of streamable-HTTP callers
    (required for HTTP: there is no anonymous caller). ``hidden``: registry tools not offered.
    ``lifespan``: an async context manager factory entered while the server runs (start a chat bot
    that shows this server's approval cards, for example). ``people``: the identities whose ``[people]``
    section maps MCP principals to chat users (their confirm cards go to that chat). ``confirm_approvers``:
    approver scopes that decide, as a verification, the confirm requests of a caller nobody can ask (a
    client without elicitation whose principal ``people`` does not map to a chat).

    ``waits``: how long a call of a tool waits, in its own ``tools/call``, for a person to decide the
    approval it opened (``0``: answer at once with the pending approval); a request's
    ``_meta["milpa-chat/wait_seconds"]`` overrides it, up to ``max_wait`` (:mod:`milpa_chat.mcp.waiting`).
    ``handlers``: more request handlers for the SDK's ``Server`` (``on_list_resources=...``, ...).

    Every call is model-made unless its caller says ``person=True``: a confirm request is confirmed by
    the person behind the client through MCP elicitation (when the client declares it) or on a card in
    their chat; ``approval_run`` never confirms by itself.
    """

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        name: str = "milpa-chat",
        version: str = "",
        instructions: str | None = None,
        stdio: McpCaller | None = None,
        tokens: BearerTokens | None = None,
        hidden: Iterable[str] = ("resolve_verification",),
        status_tool: str = "approval_status",
        run_tool: str = "approval_run",
        lifespan: Lifespan | None = None,
        people: Identities | None = None,
        confirm_approvers: Iterable[str] = (),
        waits: Callable[[ToolDefinition], float] | None = None,
        max_wait: float = 3600.0,
        handlers: Mapping[str, Any] | None = None,
    ) -> None:
        mcp = _sdk()
        from mcp.server.lowlevel import Server

        self.registry = registry
        self.stdio_caller = stdio or McpCaller.stdio()
        self.tokens = tokens
        self.hidden = frozenset(hidden)
        self.lifespan = lifespan
        self.people = people
        self.confirm_approvers = tuple(confirm_approvers)
        self.waits = waits
        self.max_wait = max_wait
        self.approvals = ApprovalTools(registry, status_tool=status_tool, run_tool=run_tool)
        for builtin in (status_tool, run_tool):
            if registry.has(builtin):
                raise DeclarationError(
                    f"the registry has a tool named {builtin!r}, which McpServer offers itself; pass "
                    f"McpServer(..., {'status_tool' if builtin == status_tool else 'run_tool'}='another_name')"
                )
        self._builtins = {d["name"]: d for d in self.approvals.definitions()}
        self._types = mcp.types
        self._transport = "stdio"
        self._connections: set[Any] = set()
        self.server: Any = Server(
            name,
            version=version,
            instructions=instructions or _INSTRUCTIONS,
            on_list_tools=self._on_list_tools,
            on_call_tool=self._on_call_tool,
            **dict(handlers or {}),
        )

    # ------------------------------------------------------------------ callers
    def context(self, request: Any = None) -> ToolContext:
        """The context of the current request: the stdio caller, or the bearer token's caller."""
        if self._transport == "stdio":
            return self._person(self.stdio_caller, stdio=True)
        from mcp.server.auth.middleware.auth_context import get_access_token

        token = get_access_token()
        if token is None:  # the request's own scope, when the contextvar did not travel this far
            user = getattr(request, "scope", {}).get("user") if request is not None else None
            token = getattr(user, "access_token", None)
        if token is None:
            from milpa_chat.runtime.context import ToolContext

            return ToolContext.mcp()  # no principal: the mcp channel policy refuses every call
        claims = token.claims or {}
        return self._person(
            McpCaller(token.client_id, tuple(token.scopes), claims.get("name"), bool(claims.get("person")))
        )

    def _person(self, caller: McpCaller, *, stdio: bool = False) -> ToolContext:
        """``caller``'s context; when ``people`` maps its principal to a chat user (``[people]`` in
        identities.toml), the chat user's (their scopes, their chat for the cards), still model-made."""
        ctx = caller.context(stdio=stdio)
        person = self.people.person_context(caller.principal) if self.people is not None else None
        if person is None:
            return ctx
        person = person.with_extra(mcp_principal=caller.principal)
        return person if caller.person else person.as_model()

    # --------------------------------------------------------------- catalogue
    def visible(self, ctx: ToolContext) -> list[ToolDefinition]:
        """The registry tools ``ctx`` may see (its scopes), minus ``hidden``."""
        names = [s["name"] for s in self.registry.get_tool_summaries(ctx) if s["name"] not in self.hidden]
        return [t for t in (self.registry.get(n) for n in names) if t is not None]

    def may_ask(self, tool: ToolDefinition, ctx: ToolContext) -> bool:
        """Whether a call of ``tool`` by ``ctx`` may answer with a pending approval."""
        return tool.verify is not None or self.registry.policy.requires_confirmation(ctx, tool)

    def describe(self, tool: ToolDefinition, ctx: ToolContext) -> dict[str, Any]:
        """``tool`` as an MCP tool, in wire shape."""
        wire: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "inputSchema": dict(tool.input_schema or {"type": "object", "properties": {}}),
            "annotations": annotations_for(tool),
        }
        schema, _ = output_schema_for(tool, may_ask=self.may_ask(tool, ctx))
        if schema is not None:
            wire["outputSchema"] = schema
        return wire

    def tools(self, ctx: ToolContext) -> list[dict[str, Any]]:
        """Every MCP tool ``ctx`` sees: the registry's, then ``approval_status`` and ``approval_run``."""
        return [self.describe(t, ctx) for t in self.visible(ctx)] + list(self._builtins.values())

    # -------------------------------------------------------------------- calls
    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        ctx: ToolContext,
        ask: Ask | None = None,
        *,
        wait: float | None = None,
        progress: Progress | None = None,
    ) -> Reply:
        """One MCP tool call as ``ctx``: a built-in approval tool, or the registry's pipeline.

        ``ask``: the client's elicitation, when it declared the capability: a confirm request it opens
        is put to the person behind the client at once, and run (once) in this same call if they confirm.
        ``wait``: seconds to wait here for a person's decision (default: ``waits(tool)``), with ``progress``
        told what is awaited."""
        if name in self._builtins:
            return await self._builtin(name, arguments or {}, ctx, ask)
        tool = self.registry.get(name)
        if name in self.hidden or tool is None:
            return error_reply(f"Tool not found: {name}.", code="TOOL_NOT_FOUND")
        result = await self.registry.call(name, dict(arguments or {}), ctx)
        opened = result.meta.get("approval_id") if result.success else None
        if ask is not None and isinstance(opened, str):
            approval = await self.registry.approvals.get(opened)
            if approval is not None and approval.kind == "confirm" and approval.state == "pending":
                return await self.approvals.confirm(approval, ctx, ask)
        pending = await self.approvals.pending(result, ctx)
        if pending is not None and isinstance(opened, str):
            seconds = (self.waits(tool) if self.waits is not None else 0.0) if wait is None else wait
            if min(seconds, self.max_wait) > 0:
                decided = await wait_for_decision(
                    self.approvals, opened, ctx, min(seconds, self.max_wait), progress or _silent
                )
                return decided or pending
        if pending is not None:
            return pending
        _, wrapped = output_schema_for(tool, may_ask=False)
        return reply_for(result, wrapped=wrapped)

    async def _builtin(self, name: str, arguments: Mapping[str, Any], ctx: ToolContext, ask: Ask | None) -> Reply:
        from jsonschema import Draft202012Validator

        schema = self._builtins[name]["inputSchema"]
        errors = sorted(Draft202012Validator(schema).iter_errors(dict(arguments)), key=lambda e: list(e.path))
        if errors:
            text = "; ".join(f"{'.'.join(map(str, e.path)) or 'arguments'}: {e.message}" for e in errors)
            return error_reply(text, code="VALIDATION_ERROR")
        if not ctx.principal:
            return error_reply("Only an authenticated caller can follow up an approval.", code="FORBIDDEN")
        if name == self.approvals.status_tool:
            return await self.approvals.status(arguments, ctx)
        return await self.approvals.run(arguments, ctx, ask)

    # ------------------------------------------------------------ SDK handlers
    async def tools_changed(self) -> None:
        """Tell every connected client that the tool list changed (``notifications/tools/list_changed``)."""
        for connection in list(self._connections):
            try:
                await connection.outbound.notify("notifications/tools/list_changed", None)
            except Exception as exc:  # a connection that ended
                log.debug("tools/list_changed not sent: %s", exc)
                self._connections.discard(connection)

    def _remember(self, request_ctx: Any) -> None:
        """Keep the request's client connection (the SDK's per-client ``Connection``) until it closes."""
        connection = getattr(request_ctx.session, "_connection", None)  # the SDK keeps no public handle on it
        if connection is None or connection in self._connections:
            return
        self._connections.add(connection)
        connection.exit_stack.callback(self._connections.discard, connection)

    async def _on_list_tools(self, request_ctx: Any, params: Any) -> Any:
        self._remember(request_ctx)
        ctx = self.context(request_ctx.request)
        return self._types.ListToolsResult(tools=[self._types.Tool.model_validate(t) for t in self.tools(ctx)])

    async def _on_call_tool(self, request_ctx: Any, params: Any) -> Any:
        self._remember(request_ctx)
        ctx = self.context(request_ctx.request)
        ask = self._asker(request_ctx)
        if ask is None and self.confirm_approvers and ctx.by_model and ctx.channel == "mcp":
            ctx = ctx.with_extra(**{CONFIRM_BY: list(self.confirm_approvers)})  # approvers decide instead
        tool = self.registry.get(params.name)
        default = self.waits(tool) if self.waits is not None and tool is not None else 0.0
        wait = requested_wait(request_ctx.meta, default, self.max_wait)
        progress = self._progress(request_ctx)
        reply = await self.call(params.name, params.arguments, ctx, ask, wait=wait, progress=progress)
        return self._types.CallToolResult(
            content=[self._types.TextContent(type="text", text=reply.text)],
            structured_content=reply.structured,
            is_error=reply.is_error,
        )

    def _progress(self, request_ctx: Any) -> Progress:
        """Progress notifications for this request, when the client sent a progress token."""
        token = (request_ctx.meta or {}).get("progress_token")
        if token is None:
            return _silent
        session = request_ctx.session

        async def progress(step: float, message: str) -> None:
            try:
                await session.send_progress_notification(
                    token, step, None, message, related_request_id=request_ctx.request_id
                )
            except Exception as exc:  # a client that went away is not the call's failure
                log.debug("progress notification not sent: %s", exc)

        return progress

    def _asker(self, request_ctx: Any) -> Ask | None:
        """The client's form elicitation for this request, when the client declared it at initialization."""
        types = self._types
        session = request_ctx.session
        wanted = types.ClientCapabilities(elicitation=types.ElicitationCapability())
        if not session.check_client_capability(wanted):
            return None

        async def ask(message: str, schema: dict[str, Any]) -> tuple[str, Mapping[str, Any] | None]:
            answer = await session.elicit_form(message, schema, related_request_id=request_ctx.request_id)
            return str(answer.action), answer.content

        return ask

    # --------------------------------------------------------------- transports
    @contextlib.asynccontextmanager
    async def _running(self) -> AsyncIterator[None]:
        if self.lifespan is None:
            yield
            return
        async with self.lifespan():
            yield

    async def run_stdio(self) -> None:
        """Serve one MCP host over this process's stdin/stdout until it closes them."""
        from mcp.server.lowlevel import NotificationOptions
        from mcp.server.stdio import stdio_server

        self._transport = "stdio"
        options = self.server.create_initialization_options(NotificationOptions(tools_changed=True))
        async with self._running(), stdio_server() as (read, write):
            await self.server.run(read, write, options)

    def http_app(self, *, host: str = "127.0.0.1", port: int = 8000, path: str = "/mcp") -> Any:
        """The streamable-HTTP ASGI app (Starlette) behind bearer authentication with :attr:`tokens`."""
        if self.tokens is None:
            raise DeclarationError(
                "McpServer over HTTP needs callers: McpServer(registry, tokens=BearerTokens({...})) "
                "(or milpa-chat mcp --http PORT --tokens tokens.json); there is no anonymous MCP caller"
            )
        from mcp.server.auth.settings import AuthSettings

        self._transport = "http"
        url = f"http://{host}:{port}"
        auth = AuthSettings(issuer_url=url, resource_server_url=None)  # type: ignore[arg-type]
        return self.server.streamable_http_app(
            streamable_http_path=path, host=host, auth=auth, token_verifier=self.tokens
        )

    async def run_http(self, *, host: str = "127.0.0.1", port: int = 8000, path: str = "/mcp") -> None:
        """Serve streamable HTTP on ``host:port`` (``path``) with uvicorn until cancelled."""
        import uvicorn

        app = self.http_app(host=host, port=port, path=path)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on")
        async with self._running():
            await uvicorn.Server(config).serve()


async def _silent(step: float, message: str) -> None:
    return None


_INSTRUCTIONS = (
    "Tools of a milpa-chat registry. A risky call may answer with a pending approval instead of a result: "
    "a person decides it (often on Telegram or Slack). Then call approval_status with the approval id (it can "
    "wait up to 60 seconds for the decision), and approval_run once it is approved."
)
