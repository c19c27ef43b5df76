"""``McpProxy``: the kit in front of other MCP servers — their tools, gated by people.

Each upstream's tools are imported into a kit :class:`~milpa_chat.runtime.ToolRegistry` as
hand-registered tools with the upstream's input schema, so every call — from an MCP client of the
proxy's own :class:`~milpa_chat.mcp.McpServer`, or from the kit's own agent — runs the whole
pipeline: scopes, the channel policy, rate limits, standing grants, confirmation or an approvers'
verification, events, audit and the trail. Only then is the upstream called, exactly once, with the
arguments the pipeline runs (the approved, or an approver's edited, ones).

Effects are read from the upstream's annotations and fail closed: ``readOnlyHint: true`` is a read;
anything else (``destructiveHint``, ``openWorldHint``, no annotations) changes things and is
confirmed. The proxy file overrides it per tool (``confirm``, ``verify``, ``scopes``, ``risk``,
``mutating``, ``wait_seconds``, ``hidden``). See ``docs/mcp.md``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TextIO

from milpa_chat.errors import DeclarationError
from milpa_chat.mcp.proxy_grants import operation_for, operation_name
from milpa_chat.mcp.upstream import UpstreamClient, UpstreamError
from milpa_chat.runtime.definition import VerifyPolicy
from milpa_chat.runtime.result import ErrorCode, ToolResult

if TYPE_CHECKING:
    from milpa_chat.mcp.proxy_config import ProxyConfig, ToolRule, UpstreamConfig
    from milpa_chat.mcp.server import McpServer
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.definition import ToolDefinition
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["McpProxy", "UpstreamError", "gating_of", "result_of"]

log = logging.getLogger("milpa_chat.mcp.proxy")


def _read_only(tool: Any) -> bool:
    ann = tool.annotations
    return bool(ann is not None and ann.read_only_hint is True and ann.destructive_hint is not True)


def gating_of(tool: Any, upstream: UpstreamConfig) -> dict[str, Any]:
    """How an upstream ``tool`` (an SDK ``Tool``) is gated: ``registry.register`` keyword options."""
    rule: ToolRule = upstream.rule(tool.name)
    reads = _read_only(tool)
    mutating = rule.mutating if rule.mutating is not None else not reads
    verify = None
    if rule.verify is not None:
        v = rule.verify
        verify = VerifyPolicy(
            approver_scopes=v.approver_scopes,
            quorum=v.quorum,
            four_eyes=v.four_eyes,
            expires_in=v.expires_in,
            risk=v.risk or rule.risk,
        )
    confirm = rule.confirm if rule.confirm is not None else (mutating and verify is None)
    scopes = rule.scopes if rule.scopes is not None else upstream.scopes
    return {
        "mutating": mutating,
        "confirm": confirm,
        "verify": verify,
        "scopes": tuple(scopes),
        "idempotent": bool(tool.annotations is not None and tool.annotations.idempotent_hint),
    }


def result_of(upstream: str, answer: Any) -> ToolResult:
    """An upstream ``CallToolResult`` as a kit result: its text and structured content; ``isError`` -> error."""
    texts = [c.text for c in answer.content if getattr(c, "type", None) == "text"]
    text = "\n".join(texts).strip()
    if answer.is_error:
        return ToolResult.error(
            text or f"upstream {upstream!r} reported an error without a text",
            code=ErrorCode.INTERNAL_ERROR,
            meta={"upstream": upstream, "upstream_error": True},
        )
    data = answer.structured_content if answer.structured_content is not None else (text or None)
    return ToolResult.success(data, text or None, meta={"upstream": upstream})


class McpProxy:
    """The upstreams of ``config`` imported into ``registry`` (a fresh one by default).

    ``await proxy.start()`` connects to every upstream and imports its tools; ``proxy.server(...)`` is the
    kit's :class:`McpServer` over them; ``await proxy.close()`` ends the connections. Upstream tool lists
    that change (``tools/list_changed``) are imported again.
    """

    def __init__(
        self, config: ProxyConfig, registry: ToolRegistry | None = None, *, errlog: TextIO | None = None
    ) -> None:
        from milpa_chat.runtime.registry import ToolRegistry

        self.config = config
        self.registry = registry if registry is not None else ToolRegistry()
        self.upstreams: dict[str, UpstreamClient] = {}
        for u in config.upstream:
            self.upstreams[u.name] = UpstreamClient(u, errlog=errlog, on_tools_changed=self._refresher(u.name))
        #: kit tool name -> (upstream name, upstream tool name), for every tool imported now
        self.imported: dict[str, tuple[str, str]] = {}
        self._servers: list[McpServer] = []

    def _refresher(self, name: str) -> Any:
        async def refresh() -> None:
            try:
                await self.refresh(name)
            except Exception as exc:
                log.warning("upstream %r changed its tools, and importing them again failed: %s", name, exc)

        return refresh

    # ------------------------------------------------------------------ importing
    async def start(self) -> McpProxy:
        """Connect to every upstream and import its tools (all at once)."""
        await asyncio.gather(*(self.refresh(name) for name in self.upstreams))
        return self

    async def refresh(self, name: str) -> list[str]:
        """(Re-)import upstream ``name``'s tools: new ones are added, gone or changed ones replaced."""
        client = self.upstreams[name]
        tools = await client.list_tools()
        upstream = client.config
        fresh = [(tool.name, self._definition(client, tool)) for tool in tools if not upstream.rule(tool.name).hidden]
        added = [d for _, d in fresh if d is not None]
        for kit in [kit for kit, (owner, _) in self.imported.items() if owner == name]:  # swapped with no await
            self.registry.remove(kit)
            del self.imported[kit]
        for upstream_name, definition in fresh:
            if definition is not None:
                self.registry.add(definition)
                self.imported[definition.name] = (name, upstream_name)
        names = [d.name for d in added]
        self._know(client, added)
        unknown = sorted(set(upstream.tools) - {t.name for t in tools})
        if unknown:
            log.warning("upstream %r lists no tool named %s, which the proxy file configures", name, unknown)
        await self._announce()
        return names

    def _definition(self, client: UpstreamClient, tool: Any) -> ToolDefinition | None:
        from milpa_chat.runtime.declare import definition_from_schema

        upstream = client.config
        kit_name = upstream.tool_prefix + tool.name
        owner = self.imported.get(kit_name)
        if (owner is not None and owner[0] != upstream.name) or (owner is None and self.registry.has(kit_name)):
            raise DeclarationError(
                f"upstream {upstream.name!r} has a tool {tool.name!r}, but the registry already "
                f'has {kit_name!r}; give the upstream a prefix = "{upstream.name}_" in the '
                f"proxy file"
            )
        gating = gating_of(tool, upstream)
        idempotent = gating.pop("idempotent")
        description = tool.description or tool.title or f"{tool.name} (upstream {upstream.name})"
        try:
            definition = definition_from_schema(
                kit_name,
                description,
                dict(tool.input_schema or {"type": "object"}),
                self._handler(client, tool.name),
                timeout=upstream.timeout + 5,
                tags=("mcp-proxy", f"upstream:{upstream.name}"),
                **gating,
            )
        except DeclarationError as exc:
            log.warning("upstream %r: tool %r is not offered: %s", upstream.name, tool.name, exc)
            return None
        annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
        extra = {
            **definition.extra,
            "upstream": upstream.name,
            "upstream_tool": tool.name,
            "upstream_annotations": annotations,
        }
        named = operation_name(upstream, tool.name)
        if named is not None:
            extra["operation_name"] = named
        return replace(definition, extra=extra, idempotent=idempotent)

    def _know(self, client: UpstreamClient, imported: list[ToolDefinition]) -> None:
        """Tell the registry's standing grants (a ``GrantDesk``) the operations just imported."""
        from milpa_chat.grants.desk import GrantDesk

        desk = self.registry.grants
        if not isinstance(desk, GrantDesk):
            return
        for definition in imported:
            operation = operation_for(client.config, self.imported[definition.name][1], definition)
            if operation is not None:
                desk.know(operation)

    @staticmethod
    def _handler(client: UpstreamClient, tool: str) -> Any:
        async def call_upstream(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            try:
                answer = await client.call_tool(tool, args)
            except UpstreamError as exc:
                log.warning("%s", exc)
                return ToolResult.error(
                    str(exc),
                    code=ErrorCode.INTERNAL_ERROR,
                    meta={"upstream": client.name, "upstream_failed": True, "sent": exc.sent},
                )
            return result_of(client.name, answer)

        call_upstream.__qualname__ = f"upstream:{client.name}:{tool}"
        return call_upstream

    async def _announce(self) -> None:
        for server in self._servers:
            await server.tools_changed()

    # ------------------------------------------------------------------ serving
    def wait_seconds(self, tool: ToolDefinition) -> float:
        """How long a call of ``tool`` waits for its person inside ``tools/call`` (the file's ``wait_seconds``)."""
        owner = self.imported.get(tool.name)
        if owner is None:
            return self.config.wait_seconds
        upstream = self.upstreams[owner[0]].config
        rule = upstream.rule(owner[1])
        if rule.wait_seconds is not None:
            return rule.wait_seconds
        return upstream.wait_seconds or self.config.wait_seconds

    def server(self, **options: Any) -> McpServer:
        """The kit's :class:`McpServer` over the imported tools (keyword options go to ``McpServer``);
        the upstreams' resources and prompts pass through, read-only."""
        from milpa_chat.mcp.passthrough import Passthrough
        from milpa_chat.mcp.server import McpServer

        options.setdefault("name", self.config.name)
        options.setdefault("waits", self.wait_seconds)
        options.setdefault("handlers", Passthrough(self.upstreams.values()).handlers())
        server = McpServer(self.registry, **options)
        self._servers.append(server)
        return server

    async def close(self) -> None:
        """Close every upstream connection."""
        await asyncio.gather(*(u.close() for u in self.upstreams.values()), return_exceptions=True)

    async def __aenter__(self) -> McpProxy:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def tools_of(self, upstream: str) -> Iterable[str]:
        """The kit names of the tools imported from ``upstream``."""
        return [kit for kit, (owner, _) in self.imported.items() if owner == upstream]
