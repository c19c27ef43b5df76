"""The playground's scripted model: plain requests about the example tools become tool calls, with no provider key.

It answers the OpenAI chat-completions requests the kit's agent sends to the local OpenAI server of
:mod:`milpa_chat.testing.llm` (``FakeOpenAIServer(responder=ScriptedModel())``), so the agent runs exactly
as with a real model: the official openai SDK, the gateway, the agent loop, the approval gates. It decides
from the request alone (the last request of the person and the tool results after it), offers only the
tools the request offers (the tools the person may call), and never pretends to be more than it is::

    "pay ACME 120"                  -> send_payment {"to": "ACME", "amount": 120}
    "send 45.50 to Bob"             -> send_payment {"to": "Bob", "amount": 45.5}
    "delete the note about milk"    -> search_notes {"query": "milk"}, then delete_note {"note_id": <the match>}
    "delete note 3"                 -> delete_note {"note_id": 3}
    "find notes about the plumber"  -> search_notes {"query": "plumber"}
    "list my notes" / "page 2"      -> list_notes {"page": ...}
    "build the report"              -> slow_report {}

After a tool's result it says what happened in one sentence, from the result itself ("Done: Paid 120.00 EUR
to ACME.").
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from milpa_chat.testing.llm import ScriptedReply, ScriptedToolCall

__all__ = ["EXAMPLES", "REQUESTS", "ScriptedModel", "suggested_requests"]

#: What the page suggests typing to the agent.
EXAMPLES = ("pay ACME 120", "delete the note about milk", "find notes about the plumber", "list my notes")

#: A plain request for each example tool: what Slack's assistant pane suggests to a person who may call it.
REQUESTS = {
    "send_payment": ("Pay ACME 120 €", "pay ACME 120"),
    "delete_note": ("Delete the milk note", "delete the note about milk"),
    "search_notes": ("Find a note", "find notes about the plumber"),
    "list_notes": ("List my notes", "list my notes"),
    "slow_report": ("Build the report", "build the report"),
}


def suggested_requests(tools: Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """Suggested prompts for the assistant pane (``SlackPane(prompts=...)``): a request the scripted model
    understands for each of the person's tools, the riskiest first (at most four)."""
    names = [str(t["name"]) for t in tools]
    return [{"title": title, "message": message} for name, (title, message) in REQUESTS.items() if name in names][:4]


_PAY = (
    re.compile(r"\b(?:pay|send)\s+(?P<to>[A-Za-z][\w .&'-]*?)\s+(?P<amount>\d+(?:[.,]\d+)?)\s*(?:eur|€)?\s*$", re.I),
    re.compile(r"\b(?:pay|send)\s+(?P<amount>\d+(?:[.,]\d+)?)\s*(?:eur|€)?\s+to\s+(?P<to>[A-Za-z][\w .&'-]*)$", re.I),
)
_DELETE_ID = re.compile(r"\b(?:delete|remove)\s+(?:the\s+)?note\s+(?:number\s+|#)?(?P<id>\d+)\b", re.I)
_DELETE_ABOUT = re.compile(
    r"\b(?:delete|remove)\s+(?:the\s+|my\s+)?notes?\s+(?:about|with|on|mentioning|that says)\s+(?P<q>.+)$", re.I
)
_SEARCH = re.compile(r"\b(?:find|search|look for|show)\b.*?\bnotes?\s+(?:about|with|on|mentioning)\s+(?P<q>.+)$", re.I)
_LIST = re.compile(r"\b(?:list|show|read)\b.*\bnotes\b|\bmy notes\b|^notes$", re.I)
_PAGE = re.compile(r"\bpage\s+(?P<page>\d+)\b", re.I)
_REPORT = re.compile(r"\breport\b", re.I)
_FILLER = re.compile(r"^(?:the|a|an|my)\s+", re.I)


@dataclass(frozen=True)
class _Turn:
    """The person's last request and what the tools answered since (name, parsed result), oldest first."""

    request: str
    results: tuple[tuple[str, dict[str, Any]], ...]
    offered: frozenset[str]


class ScriptedModel:
    """A ``responder`` for :class:`~milpa_chat.testing.llm.FakeOpenAIServer`: request body in, reply out.

    ``word_delay``: seconds between the words of a streamed text answer (0: all at once), to watch an answer
    grow (the playground's ``MILPA_PLAYGROUND_STREAM_DELAY``)."""

    def __init__(self, word_delay: float = 0.0) -> None:
        if word_delay < 0:
            raise ValueError(f"word_delay must be 0 or more seconds, got {word_delay}")
        self.word_delay = word_delay

    def __call__(self, body: dict[str, Any]) -> ScriptedReply:
        turn = _read(body)
        reply = self._after(turn) if turn.results else self._plan(turn)
        if self.word_delay and reply.text and not reply.tool_calls:
            return replace(reply, chunk_delay=self.word_delay)
        return reply

    # ------------------------------------------------------------------ the first step of a request
    def _plan(self, turn: _Turn) -> ScriptedReply:
        text = turn.request.strip().rstrip(".!?")
        for pattern in _PAY:
            found = pattern.search(text)
            if found:
                amount = float(found["amount"].replace(",", "."))
                return self._call(turn, "send_payment", {"to": found["to"].strip(), "amount": amount})
        found = _DELETE_ID.search(text)
        if found:
            return self._call(turn, "delete_note", {"note_id": int(found["id"])})
        found = _DELETE_ABOUT.search(text)
        if found:
            return self._call(turn, "search_notes", {"query": _query(found["q"])})
        found = _SEARCH.search(text)
        if found:
            return self._call(turn, "search_notes", {"query": _query(found["q"])})
        if _LIST.search(text) or _PAGE.search(text):
            page = _PAGE.search(text)
            return self._call(turn, "list_notes", {"page": int(page["page"])} if page else {})
        if _REPORT.search(text):
            return self._call(turn, "slow_report", {})
        return ScriptedReply(
            text=(
                "I am the playground's scripted model (no provider key), so I only understand requests like "
                + ", ".join(f"“{e}”" for e in EXAMPLES)
                + ". Set OPENAI_API_KEY or ANTHROPIC_API_KEY for a real model."
            )
        )

    def _call(self, turn: _Turn, name: str, arguments: Mapping[str, Any]) -> ScriptedReply:
        if name not in turn.offered:
            return ScriptedReply(text=f"I cannot do that for you: the tool {name} is not available to you here.")
        return ScriptedReply(tool_calls=(ScriptedToolCall(name, dict(arguments)),))

    # ------------------------------------------------------------------ after a tool answered
    def _after(self, turn: _Turn) -> ScriptedReply:
        name, result = turn.results[-1]
        if not result.get("success"):
            return ScriptedReply(text=f"{name} did not go ahead: {result.get('error') or 'it failed'}.")
        wanted = _DELETE_ABOUT.search(turn.request.strip().rstrip(".!?"))
        if name == "search_notes" and wanted and not any(n == "delete_note" for n, _ in turn.results):
            notes = _items(result)
            if len(notes) == 1:
                return self._call(turn, "delete_note", {"note_id": int(notes[0]["id"])})
            if not notes:
                return ScriptedReply(text=f"No note mentions “{_query(wanted['q'])}”; nothing was deleted.")
            listed = "; ".join(f"#{n['id']} {n.get('text', '')}" for n in notes[:5])
            return ScriptedReply(text=f"Several notes match ({listed}). Which one should I delete? Say its number.")
        if name in ("search_notes", "list_notes"):
            notes = _items(result)
            if not notes:
                return ScriptedReply(text="No notes found.")
            listed = "; ".join(f"#{n['id']} {n.get('text', '')}" for n in notes[:5])
            return ScriptedReply(text=f"{result.get('message') or 'Notes'}: {listed}.")
        said = str(result.get("message") or "").strip()
        return ScriptedReply(text=f"Done: {said}" if said else "Done.")


def _read(body: Mapping[str, Any]) -> _Turn:
    messages: Sequence[Mapping[str, Any]] = body.get("messages") or []
    offered = frozenset(
        str((t.get("function") or {}).get("name")) for t in body.get("tools") or () if isinstance(t, Mapping)
    )
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    request = _text(messages[last_user].get("content")) if last_user >= 0 else ""
    names: dict[str, str] = {}
    results: list[tuple[str, dict[str, Any]]] = []
    for message in messages[last_user + 1 :]:
        for call in message.get("tool_calls") or ():
            names[str(call.get("id"))] = str((call.get("function") or {}).get("name"))
        if message.get("role") == "tool":
            try:
                parsed = json.loads(_text(message.get("content")))
            except ValueError:
                parsed = {"success": False, "error": _text(message.get("content"))}
            results.append((names.get(str(message.get("tool_call_id")), "the tool"), parsed))
    return _Turn(request, tuple(results), offered)


def _text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return str(content or "")


def _items(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    data = result.get("data")
    if isinstance(data, Mapping):
        data = data.get("items")
    return [d for d in data if isinstance(d, dict) and "id" in d] if isinstance(data, list) else []


def _query(words: str) -> str:
    return _FILLER.sub("", words.strip().strip("\"'“”")).strip()
