"""Kit approvals for agents built on other frameworks.

:class:`ApprovalHost` is the one small host API (open an approval for a proposed call, await the people's
decision durably, run the approved call once). One module per framework builds on it, each an optional extra:
``milpa_chat.agents.pydantic_ai`` (``milpa-chat[pydantic-ai]``), ``milpa_chat.agents.openai_agents``
(``milpa-chat[openai-agents]``) and ``milpa_chat.agents.langgraph`` (``milpa-chat[langgraph]``; also LangChain's
``create_agent`` with ``HumanInTheLoopMiddleware``, ``milpa-chat[langchain]``).
"""

from milpa_chat.agents.host import ApprovalHost, Decision, approval_id

__all__ = ["ApprovalHost", "Decision", "approval_id"]
