"""The catalogue on the chat and local surfaces: Telegram commands, Slack subcommands, CLI commands, the explorer.

Each projector reads the one catalogue (:mod:`milpa_chat.command.catalogue`) and decides per tool
whether it projects:

* :class:`TelegramCommandProjector` (surface ``telegram``): a Bot API ``BotCommand`` per tool whose
  name Telegram accepts (1-32 of ``a-z 0-9 _``); another name is left out of the menu, said so
  once in a log line, and stays callable another way (typed, on Slack, the CLI, the agent);
* :class:`SlackSubcommandProjector` (surface ``slack``): ``/milpa <tool>`` with its usage;
* :class:`CliCommandProjector` (surface ``cli``): a command with one argument per schema property
  (what :mod:`milpa_chat.cli.schema` turns into ``argparse``);
* :class:`ExplorerProjector` (surface ``jupyter``): what the notebook's ToolExplorer lists.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from milpa_chat.command.catalogue import HIDDEN, CatalogueProjector, Projectable, enum_of, model_of, type_of, usage_of
from milpa_chat.command.registry import ToolModel

if TYPE_CHECKING:
    from milpa_chat.runtime.context import ToolContext
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = [
    "BUILTIN_COMMANDS",
    "CliArgument",
    "CliCommand",
    "CliCommandProjector",
    "ExplorerItem",
    "ExplorerProjector",
    "SlackSubcommand",
    "SlackSubcommandProjector",
    "TelegramCommand",
    "TelegramCommandProjector",
]

log = logging.getLogger("milpa_chat.command")

#: The chat core's own commands (the Assistant answers them before any tool of the same name).
BUILTIN_COMMANDS: tuple[tuple[str, str], ...] = (
    ("tools", "The tools you can use, and how to call them"),
    ("help", "How to write commands"),
)
_RESERVED = frozenset({"start", "help", "tools"})
_TELEGRAM_NAME = re.compile(r"[a-z0-9_]{1,32}")
#: Telegram keeps at most this many commands per scope and language.
TELEGRAM_MAX_COMMANDS = 100
TELEGRAM_MAX_DESCRIPTION = 256


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


@dataclasses.dataclass(frozen=True, slots=True)
class TelegramCommand:
    """A Bot API ``BotCommand``: ``command`` (no slash) and ``description``."""

    command: str
    description: str

    surface: ClassVar[str] = "telegram"

    def to_dict(self) -> dict[str, Any]:
        return {"command": self.command, "description": self.description}


class TelegramCommandProjector(CatalogueProjector[TelegramCommand]):
    """Registry tools as Telegram commands; :meth:`menu` is what ``setMyCommands`` gets for one scope.

    ``builtins``: the chat core's commands put first in every menu (``/tools``, ``/help``).
    """

    surface: ClassVar[str] = "telegram"

    def __init__(
        self, *, hidden: Iterable[str] = HIDDEN, builtins: Sequence[tuple[str, str]] = BUILTIN_COMMANDS
    ) -> None:
        super().__init__(hidden=hidden)
        self.builtins = tuple(TelegramCommand(name, text) for name, text in builtins)
        self._told: set[str] = set()

    def supports(self, operation: Projectable) -> bool:
        entry = model_of(operation)
        if not super().supports(entry):
            return False
        if entry.name in _RESERVED:
            self._tell(entry.name, "it is one of the chat's own commands (/start, /help, /tools)")
            return False
        if not _TELEGRAM_NAME.fullmatch(entry.name):
            self._tell(entry.name, "a Telegram command is 1-32 characters of a-z, 0-9 and _")
            return False
        return True

    def _tell(self, name: str, why: str) -> None:
        if name not in self._told:
            self._told.add(name)
            log.info(
                "Tool %r is left out of the Telegram command menu: %s; it stays callable otherwise "
                "(typed, on other surfaces, by the agent)",
                name,
                why,
            )

    def describe(self, entry: ToolModel) -> TelegramCommand:
        text = entry.description.strip() or f"Run {entry.name}"
        return TelegramCommand(entry.name, _one_line(text, TELEGRAM_MAX_DESCRIPTION))

    def menu(self, registry: ToolRegistry, ctx: ToolContext | None = None) -> list[TelegramCommand]:
        """The built-in commands, then every projected tool ``ctx`` may call (at most 100 in all)."""
        commands = [*self.builtins, *self.catalogue(registry, ctx)]
        if len(commands) > TELEGRAM_MAX_COMMANDS:
            left = [c.command for c in commands[TELEGRAM_MAX_COMMANDS:]]
            log.warning(
                "Telegram keeps %d commands per scope; left out of the menu: %s", TELEGRAM_MAX_COMMANDS, ", ".join(left)
            )
        return commands[:TELEGRAM_MAX_COMMANDS]


@dataclasses.dataclass(frozen=True, slots=True)
class SlackSubcommand:
    """``/milpa <name>``: its usage line (from the schema) and description."""

    name: str
    usage: str
    description: str

    surface: ClassVar[str] = "slack"

    def to_dict(self) -> dict[str, Any]:
        return {"surface": self.surface, "name": self.name, "usage": self.usage, "description": self.description}


class SlackSubcommandProjector(CatalogueProjector[SlackSubcommand]):
    """Registry tools as subcommands of one slash command (``command``, default ``/milpa``)."""

    surface: ClassVar[str] = "slack"

    def __init__(self, command: str = "/milpa", *, hidden: Iterable[str] = HIDDEN) -> None:
        super().__init__(hidden=hidden)
        self.command = command

    def supports(self, operation: Projectable) -> bool:
        entry = model_of(operation)
        typable = bool(entry.name) and not any(c.isspace() or c == "@" for c in entry.name)
        return super().supports(entry) and typable and entry.name not in _RESERVED

    def describe(self, entry: ToolModel) -> SlackSubcommand:
        usage = usage_of(entry.name, entry.input_schema, f"{self.command} ")
        return SlackSubcommand(entry.name, usage, entry.description)


@dataclasses.dataclass(frozen=True, slots=True)
class CliArgument:
    """One schema property as a command-line option (``--name value``)."""

    name: str
    type: str
    required: bool
    help: str = ""
    has_default: bool = False
    default: Any = None
    choices: tuple[Any, ...] | None = None
    items: str | None = None
    nullable: bool = False

    @property
    def flag(self) -> str:
        """``--note-id`` for ``note_id`` (``--note_id`` is accepted too)."""
        return "--" + self.name.replace("_", "-")

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)} | {
            "choices": None if self.choices is None else list(self.choices)
        }


@dataclasses.dataclass(frozen=True, slots=True)
class CliCommand:
    """An operation as ``milpa-chat run NAME --arg value ...``."""

    name: str
    description: str
    arguments: tuple[CliArgument, ...]
    mutating: bool = False
    confirm: bool = False
    verify: bool = False
    scopes: tuple[str, ...] = ()

    surface: ClassVar[str] = "cli"

    def to_dict(self) -> dict[str, Any]:
        return {"surface": self.surface, "name": self.name, "description": self.description,
                "arguments": [a.to_dict() for a in self.arguments], "mutating": self.mutating,
                "confirm": self.confirm, "verify": self.verify, "scopes": list(self.scopes)}  # fmt: skip


def cli_argument(name: str, prop: Mapping[str, Any], required: bool) -> CliArgument:
    """The option of one schema property."""
    kinds = [k for k in type_of(prop).split("|") if k != "null"]
    items = prop.get("items") if isinstance(prop.get("items"), Mapping) else None
    choices = enum_of(prop)
    return CliArgument(
        name=name,
        type=kinds[0] if len(kinds) == 1 else "any",
        required=required,
        help=str(prop.get("description") or prop.get("title") or ""),
        has_default="default" in prop,
        default=prop.get("default"),
        choices=None if choices is None else tuple(c for c in choices if c is not None),
        items=None if items is None else type_of(items),
        nullable="null" in type_of(prop).split("|"),
    )


class CliCommandProjector(CatalogueProjector[CliCommand]):
    """Registry tools as ``milpa-chat`` commands whose options come from the input schema."""

    surface: ClassVar[str] = "cli"

    def describe(self, entry: ToolModel) -> CliCommand:
        schema = entry.input_schema
        props: Mapping[str, Any] = schema.get("properties") or {}
        required = set(schema.get("required", ()))
        arguments = tuple(cli_argument(n, p if isinstance(p, Mapping) else {}, n in required) for n, p in props.items())
        return CliCommand(
            entry.name, entry.description, arguments, entry.mutating, entry.confirm, entry.verify, entry.scopes
        )


@dataclasses.dataclass(frozen=True, slots=True)
class ExplorerItem:
    """A tool as the notebook's explorer lists it: what it is searched by."""

    name: str
    description: str
    tags: tuple[str, ...] = ()

    surface: ClassVar[str] = "jupyter"

    @property
    def search_text(self) -> str:
        return " ".join((self.name, self.description, *self.tags)).lower()

    def to_dict(self) -> dict[str, Any]:
        return {"surface": self.surface, "name": self.name, "description": self.description, "tags": list(self.tags)}


class ExplorerProjector(CatalogueProjector[ExplorerItem]):
    """Registry tools as the ToolExplorer lists them: every tool the notebook's context may call."""

    surface: ClassVar[str] = "jupyter"

    def __init__(self, *, hidden: Iterable[str] = ()) -> None:
        super().__init__(hidden=hidden)

    def describe(self, entry: ToolModel) -> ExplorerItem:
        return ExplorerItem(entry.name, entry.description, entry.tags)
