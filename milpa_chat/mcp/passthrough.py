"""The upstreams' resources and prompts, passed through the proxy read-only.

``resources/list`` and ``prompts/list`` merge every upstream's lists (each prompt is named with its
upstream's tool prefix, as its tools are); ``resources/read`` goes to the upstream that listed the
URI, ``prompts/get`` to the prompt's upstream. Reading a resource or getting a prompt changes
nothing, so no approval is asked; an upstream that fails is skipped in a list and named in the error
of a read. Subscriptions and completions are not passed through.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from milpa_chat.mcp.upstream import UpstreamError

if TYPE_CHECKING:
    from milpa_chat.mcp.upstream import UpstreamClient

__all__ = ["Passthrough"]

log = logging.getLogger("milpa_chat.mcp.proxy")


class Passthrough:
    """Request handlers for the SDK's ``Server`` over ``upstreams``' resources and prompts."""

    def __init__(self, upstreams: Iterable[UpstreamClient]) -> None:
        self.upstreams = list(upstreams)
        self._owner_of_uri: dict[str, UpstreamClient] = {}

    def handlers(self) -> dict[str, Any]:
        return {
            "on_list_resources": self.list_resources,
            "on_read_resource": self.read_resource,
            "on_list_prompts": self.list_prompts,
            "on_get_prompt": self.get_prompt,
        }

    async def _each(self, what: str, send: Any) -> list[tuple[UpstreamClient, Any]]:
        async def one(u: UpstreamClient) -> tuple[UpstreamClient, Any]:
            try:
                return u, await u.request(what, send)
            except UpstreamError as exc:
                log.warning("%s", exc)
                return u, None

        return [(u, r) for u, r in await asyncio.gather(*(one(u) for u in self.upstreams)) if r is not None]

    async def list_resources(self, request_ctx: Any, params: Any) -> Any:
        import mcp.types as types

        found = []
        for upstream, listed in await self._each("resources/list", lambda s: s.list_resources()):
            for resource in listed.resources:
                self._owner_of_uri[str(resource.uri)] = upstream
                found.append(resource)
        return types.ListResourcesResult(resources=found)

    async def read_resource(self, request_ctx: Any, params: Any) -> Any:
        from mcp.shared.exceptions import MCPError
        from mcp.types import INVALID_PARAMS

        uri = str(params.uri)
        if uri not in self._owner_of_uri:
            await self.list_resources(request_ctx, None)
        owner = self._owner_of_uri.get(uri)
        if owner is None:
            raise MCPError(INVALID_PARAMS, f"No upstream lists the resource {uri!r}; list the resources first.")
        try:
            return await owner.request(f"resources/read {uri}", lambda s: s.read_resource(uri))
        except UpstreamError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None

    async def list_prompts(self, request_ctx: Any, params: Any) -> Any:
        import mcp.types as types

        found = []
        for upstream, listed in await self._each("prompts/list", lambda s: s.list_prompts()):
            prefix = upstream.config.tool_prefix
            found += [p.model_copy(update={"name": prefix + p.name}) for p in listed.prompts]
        return types.ListPromptsResult(prompts=found)

    async def get_prompt(self, request_ctx: Any, params: Any) -> Any:
        from mcp.shared.exceptions import MCPError
        from mcp.types import INVALID_PARAMS

        candidates = [u for u in self.upstreams if params.name.startswith(u.config.tool_prefix)]
        candidates.sort(key=lambda u: -len(u.config.tool_prefix))  # the longest prefix names the upstream
        if not candidates:
            raise MCPError(INVALID_PARAMS, f"No upstream has a prompt named {params.name!r}.")
        owner = candidates[0]
        name = params.name[len(owner.config.tool_prefix) :]
        try:
            return await owner.request(f"prompts/get {name}", lambda s: s.get_prompt(name, params.arguments))
        except UpstreamError as exc:
            raise MCPError(INVALID_PARAMS, str(exc)) from None
