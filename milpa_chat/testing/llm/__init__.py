"""Local LLM servers for tests: :class:`FakeOpenAIServer` (chat completions) and
:class:`FakeAnthropicServer` (messages), with scripted replies and the requests they received.

The official SDKs talk to them unmodified through ``base_url``; :mod:`.wire` holds the records,
the scripts and the request checks (what the real APIs refuse with HTTP 400). Needs ``aiohttp``.
"""

from __future__ import annotations

from milpa_chat.testing.llm.servers import FakeAnthropicServer, FakeOpenAIServer
from milpa_chat.testing.llm.wire import RecordedRequest, ScriptedReply, ScriptedToolCall

__all__ = ["FakeAnthropicServer", "FakeOpenAIServer", "RecordedRequest", "ScriptedReply", "ScriptedToolCall"]
