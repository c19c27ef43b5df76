"""What the local Slack Web API server remembers: channels, messages with their edit history, calls."""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from milpa_chat.errors import MilpaError
from milpa_chat.testing.slack.blocks import interactive_elements

JsonDict = dict[str, Any]


class SlackMethodError(MilpaError):
    """A Web API method failed the way Slack reports it: ``{"ok": false, "error": <error>}``."""

    def __init__(self, error: str, *, status: int = 200, details: JsonDict | None = None) -> None:
        super().__init__(error)
        self.error = error
        self.status = status
        self.details = details or {}

    def body(self) -> JsonDict:
        return {"ok": False, "error": self.error, **self.details}


@dataclass
class SlackChannel:
    """A conversation: public channel, private channel, or a direct message with ``user``."""

    id: str
    name: str
    is_im: bool = False
    is_private: bool = False
    user: str | None = None

    def to_api(self) -> JsonDict:
        data: JsonDict = {
            "id": self.id,
            "is_channel": not (self.is_im or self.is_private),
            "is_group": self.is_private,
            "is_im": self.is_im,
            "is_private": self.is_private or self.is_im,
            "is_archived": False,
        }
        if self.is_im:
            data["user"] = self.user
        else:
            data["name"] = self.name
            data["is_member"] = True
        return data


@dataclass(frozen=True)
class SlackMessageVersion:
    """A message's text and blocks as they were before an edit; ``replaced_at`` is the ts of that edit."""

    text: str
    blocks: list[JsonDict]
    replaced_at: str


@dataclass
class SlackMessage:
    """One message as the server holds it. ``ephemeral_to`` is set for ephemeral messages (seen by one user)."""

    channel: str
    ts: str
    text: str
    user: str
    blocks: list[JsonDict] = field(default_factory=list)
    attachments: list[JsonDict] = field(default_factory=list)
    bot_id: str | None = None
    thread_ts: str | None = None
    ephemeral_to: str | None = None
    team: str | None = None
    history: list[SlackMessageVersion] = field(default_factory=list)
    edited_ts: str | None = None
    deleted: bool = False
    via: str = "chat.postMessage"
    #: A streamed message (``chat.startStream``): ``"streaming"`` until ``chat.stopStream``, then ``"stopped"``.
    stream_state: str | None = None
    #: Every chunk streamed into it, in order (``markdown_text`` arguments count as markdown chunks).
    chunks: list[JsonDict] = field(default_factory=list)

    def tasks(self) -> dict[str, list[str]]:
        """Each streamed task's (or plan step's) statuses in the order they were sent: ``{id: ["pending", ...]}``."""
        found: dict[str, list[str]] = {}
        for chunk in self.chunks:
            if chunk.get("type") == "task_update":
                found.setdefault(str(chunk["id"]), []).append(str(chunk["status"]))
        return found

    def task_titles(self) -> dict[str, str]:
        """Each streamed task's last title."""
        return {str(c["id"]): str(c["title"]) for c in self.chunks if c.get("type") == "task_update"}

    @property
    def edited(self) -> bool:
        return bool(self.history)

    @property
    def ephemeral(self) -> bool:
        return self.ephemeral_to is not None

    def buttons(self) -> list[JsonDict]:
        """Every interactive element (buttons, selects, ...) of the message, in display order."""
        return [element for block in self.blocks for element in interactive_elements(block)]

    def find_action(self, action_id: str, value: str | None = None) -> tuple[JsonDict, JsonDict]:
        """The ``(block, element)`` whose element has ``action_id`` (and ``value``, when given)."""
        for block in self.blocks:
            for element in interactive_elements(block):
                values = [element.get("value")]
                if element.get("type") == "feedback_buttons":  # two buttons in one element
                    values += [(element.get(k) or {}).get("value") for k in ("positive_button", "negative_button")]
                if element.get("action_id") == action_id and (value is None or value in values):
                    return block, element
        wanted = action_id if value is None else f"{action_id} with value {value!r}"
        raise LookupError(f"message {self.ts} in {self.channel} has no element {wanted}")

    def all_text(self) -> str:
        """The fallback text plus every text shown by the blocks, one per line (handy for assertions)."""
        parts = [self.text] if self.text else []
        parts.extend(_block_texts(self.blocks))
        return "\n".join(parts)

    def replace(self, *, text: str, blocks: list[JsonDict], at: str) -> None:
        self.history.append(SlackMessageVersion(text=self.text, blocks=self.blocks, replaced_at=at))
        self.text = text
        self.blocks = blocks
        self.edited_ts = at

    def to_api(self) -> JsonDict:
        """The message object as Slack returns it in API answers and interactive payloads."""
        data: JsonDict = {"type": "message", "user": self.user, "text": self.text, "ts": self.ts}
        if self.bot_id is not None:
            data["bot_id"] = self.bot_id
        if self.team is not None:
            data["team"] = self.team
        if self.blocks:
            data["blocks"] = copy.deepcopy(self.blocks)
        if self.attachments:
            data["attachments"] = copy.deepcopy(self.attachments)
        if self.thread_ts is not None:
            data["thread_ts"] = self.thread_ts
        if self.edited_ts is not None:
            data["edited"] = {"user": self.user, "ts": self.edited_ts}
        return data


def _block_texts(value: object) -> list[str]:
    found: list[str] = []
    if isinstance(value, list):
        for item in value:
            found.extend(_block_texts(item))
    elif isinstance(value, dict):
        if value.get("type") in ("plain_text", "mrkdwn", "text", "markdown") and isinstance(value.get("text"), str):
            found.append(value["text"])
        else:
            for item in value.values():
                found.extend(_block_texts(item))
    return found


@dataclass(frozen=True)
class SlackApiCall:
    """One request the app made: a Web API method (``chat.update``) or a ``response_url`` post (``response_url``)."""

    method: str
    args: JsonDict
    token: str | None
    http_method: str
    content_type: str
    status: int
    response: JsonDict | str
    at: float
    #: ``time.monotonic()`` when it was answered (``at`` is the wall clock, which may be adjusted meanwhile).
    monotonic: float = 0.0

    @property
    def ok(self) -> bool:
        if isinstance(self.response, dict):
            return self.status == 200 and self.response.get("ok") is True
        return self.status == 200

    def __str__(self) -> str:
        outcome = self.response if isinstance(self.response, str) else self.response.get("error", "ok")
        return f"{self.method} {json.dumps(self.args, default=str)[:200]} -> {self.status} {outcome}"


@dataclass
class ResponseUrl:
    """Where a ``response_url`` points: the channel, the acting user, and the message it came from (if any)."""

    id: str
    channel: str
    user: str | None
    message_ts: str | None
    ephemeral: bool
    created_at: float
    uses: int = 0


@dataclass(frozen=True)
class SlackView:
    """A modal opened with ``views.open``."""

    id: str
    view: JsonDict
    trigger_id: str
    hash: str
