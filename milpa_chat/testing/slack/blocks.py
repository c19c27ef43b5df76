"""Block Kit validation for the local Slack Web API server.

Slack rejects a message whose blocks break Block Kit rules with ``invalid_blocks`` (and blocks that are not a
JSON array with ``invalid_blocks_format``). slack_sdk's model classes check most per-item limits when a block is
serialised, so each block goes through ``Block.parse(...).to_dict()``; the rules slack_sdk leaves to the server
(blocks per message, per-field length, text object types, empty text, unknown elements, duplicate ids) are
checked here. Error strings follow Slack's ``"<reason> [json-pointer:/blocks/0/text]"`` form.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Iterator, Mapping
from typing import Any

from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block

from milpa_chat.errors import MilpaError

MAX_MESSAGE_BLOCKS = 50
MAX_VIEW_BLOCKS = 100
MAX_FIELD_TEXT = 2000
TEXT_OBJECT_TYPES = frozenset({"plain_text", "mrkdwn"})
# Objects whose ``text`` is a text object (``None``: untyped options and confirm dialogs) ...
_TEXT_OWNERS = frozenset({"section", "header", "button", "workflow_button", None})
# ... and those where Slack accepts only plain_text.
_PLAIN_TEXT_OWNERS = frozenset({"header", "button", "workflow_button"})

_sdk_logger = logging.getLogger("slack_sdk.models")


class BlocksFormatError(MilpaError, ValueError):
    """The ``blocks`` argument is not a JSON array of objects (Slack: ``invalid_blocks_format``)."""


def load_blocks(raw: object) -> list[dict[str, Any]]:
    """Turn a ``blocks`` argument (a list, or a JSON string as form bodies carry it) into a list of dicts."""
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise BlocksFormatError(f"blocks is not valid JSON: {exc}") from exc
    if not isinstance(value, list) or not all(isinstance(b, dict) for b in value):
        raise BlocksFormatError("blocks must be a JSON array of objects")
    return [dict(b) for b in value]


def block_errors(blocks: list[dict[str, Any]], *, max_blocks: int = MAX_MESSAGE_BLOCKS) -> list[str]:
    """Every Block Kit rule the blocks break, as Slack-style error strings; empty when they are valid."""
    errors: list[str] = []
    if len(blocks) > max_blocks:
        errors.append(f"no more than {max_blocks} items allowed [json-pointer:/blocks]")
    seen_block_ids: set[str] = set()
    for index, block in enumerate(blocks):
        pointer = f"/blocks/{index}"
        errors.extend(_one_block_errors(block, pointer))
        block_id = block.get("block_id")
        if isinstance(block_id, str):
            if block_id in seen_block_ids:
                errors.append(f"duplicate block_id {block_id!r} [json-pointer:{pointer}/block_id]")
            seen_block_ids.add(block_id)
    return errors


def _one_block_errors(block: dict[str, Any], pointer: str) -> list[str]:
    block_type = block.get("type")
    if not isinstance(block_type, str) or block_type not in known_block_types():
        return [f"unsupported type {block_type!r} [json-pointer:{pointer}/type]"]
    errors = _sdk_errors(block, pointer)
    errors.extend(_text_object_errors(block, pointer))
    if block_type == "section":
        errors.extend(_section_errors(block, pointer))
    if block_type == "actions":
        errors.extend(_actions_errors(block, pointer))
    return errors


def _sdk_errors(block: dict[str, Any], pointer: str) -> list[str]:
    previous = _sdk_logger.level
    _sdk_logger.setLevel(logging.ERROR)  # unknown elements are reported below, not logged as warnings
    try:
        parsed = Block.parse(block)
        if parsed is None:
            return [f"unsupported block [json-pointer:{pointer}]"]
        serialised = parsed.to_dict()
    except SlackObjectFormationError as exc:
        return [f"{exc} [json-pointer:{pointer}]"]
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        return [f"invalid block: {exc} [json-pointer:{pointer}]"]
    finally:
        _sdk_logger.setLevel(previous)
    return [f"unsupported element [json-pointer:{pointer}{path}]" for path in _none_paths(serialised, "")]


def _none_paths(value: object, path: str) -> Iterator[str]:
    """Paths of list items slack_sdk could not parse (it turns unknown elements into ``None``)."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            if item is None:
                yield f"{path}/{i}"
            else:
                yield from _none_paths(item, f"{path}/{i}")
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _none_paths(item, f"{path}/{key}")


def _text_object_errors(value: object, pointer: str) -> Iterator[str]:
    """``text`` of sections, headers, buttons, options and confirm dialogs must be a proper text object."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            yield from _text_object_errors(item, f"{pointer}/{i}")
        return
    if not isinstance(value, Mapping):
        return
    own_type = value.get("type")
    for key, item in value.items():
        child = f"{pointer}/{key}"
        if key == "text" and own_type in _TEXT_OWNERS:
            yield from _check_text_object(item, child, plain_only=own_type in _PLAIN_TEXT_OWNERS)
        elif isinstance(item, list | Mapping):
            yield from _text_object_errors(item, child)


def _check_text_object(item: object, pointer: str, *, plain_only: bool) -> Iterator[str]:
    if not isinstance(item, Mapping):
        yield f"must provide an object [json-pointer:{pointer}]"
        return
    kind = item.get("type")
    if kind not in TEXT_OBJECT_TYPES:
        yield f"must be a valid enum value [json-pointer:{pointer}/type]"
    elif plain_only and kind != "plain_text":
        yield f"must be plain_text [json-pointer:{pointer}/type]"
    text = item.get("text")
    if not isinstance(text, str) or not text:
        yield f"must be more than 0 characters [json-pointer:{pointer}/text]"


def _section_errors(block: dict[str, Any], pointer: str) -> Iterator[str]:
    fields = block.get("fields")
    if not isinstance(fields, list):
        return
    for i, field in enumerate(fields):
        child = f"{pointer}/fields/{i}"
        yield from _check_text_object(field, child, plain_only=False)
        text = field.get("text") if isinstance(field, Mapping) else None
        if isinstance(text, str) and len(text) > MAX_FIELD_TEXT:
            yield f"must be less than {MAX_FIELD_TEXT + 1} characters [json-pointer:{child}/text]"


def _actions_errors(block: dict[str, Any], pointer: str) -> Iterator[str]:
    elements = block.get("elements")
    if not isinstance(elements, list) or not elements:
        yield f"must provide at least 1 element [json-pointer:{pointer}/elements]"
        return
    seen: set[str] = set()
    for i, element in enumerate(elements):
        action_id = element.get("action_id") if isinstance(element, Mapping) else None
        if isinstance(action_id, str):
            if action_id in seen:
                yield f"duplicate action_id {action_id!r} [json-pointer:{pointer}/elements/{i}/action_id]"
            seen.add(action_id)


def fill_ids(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give blocks and interactive elements the ``block_id``/``action_id`` Slack generates when they are absent."""
    filled: list[dict[str, Any]] = []
    for block in blocks:
        copy = json.loads(json.dumps(block))
        copy.setdefault("block_id", _random_id())
        for element in _interactive_elements(copy):
            element.setdefault("action_id", _random_id())
        filled.append(copy)
    return filled


def interactive_elements(block: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The clickable elements of an ``actions`` block or a ``section`` accessory."""
    return list(_interactive_elements(block))


def _interactive_elements(block: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    candidates: list[object] = []
    if block.get("type") in ("actions", "context_actions", "input"):
        elements = block.get("elements", block.get("element"))
        candidates.extend(elements if isinstance(elements, list) else [elements])
    accessory = block.get("accessory")
    if accessory is not None:
        candidates.append(accessory)
    for candidate in candidates:
        if isinstance(candidate, dict) and candidate.get("type") not in (None, "image"):
            yield candidate


def _random_id() -> str:
    return secrets.token_urlsafe(4)[:5]


_KNOWN_BLOCK_TYPES: frozenset[str] | None = None


def known_block_types() -> frozenset[str]:
    """Block types slack_sdk can parse (``section``, ``actions``, ``header``, ...)."""
    global _KNOWN_BLOCK_TYPES
    if _KNOWN_BLOCK_TYPES is None:
        found: set[str] = set()
        pending: list[type[Block]] = [Block]
        while pending:
            cls = pending.pop()
            pending.extend(cls.__subclasses__())
            kind = getattr(cls, "type", None)
            if isinstance(kind, str):
                found.add(kind)
        _KNOWN_BLOCK_TYPES = frozenset(found)
    return _KNOWN_BLOCK_TYPES
