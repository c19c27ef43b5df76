"""``argparse`` from an operation's input schema: ``milpa-chat run NAME --arg value ...`` and ``NAME --help``.

The options come from :class:`~milpa_chat.command.CliCommandProjector` (the catalogue read once, as
every surface reads it): one ``--name`` per property (``note_id`` is ``--note-id``, ``--note_id``
works too), typed by the schema (``integer``, ``number``, ``string``; ``boolean`` as
``--flag`` / ``--no-flag``; ``array`` as several values; ``object`` as JSON), ``required`` options
required, ``enum`` values as choices, defaults and descriptions in the help. An option left out
is left out of the arguments, so the pipeline applies the schema's default.
"""

from __future__ import annotations

import argparse
import difflib
import json
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from milpa_chat.cli.errors import CliError
from milpa_chat.cli.parsing import CliParser, add_global_options
from milpa_chat.runtime.context import ToolContext

if TYPE_CHECKING:
    from milpa_chat.command.projectors import CliArgument, CliCommand
    from milpa_chat.runtime.registry import ToolRegistry

__all__ = ["arguments_from", "command_for", "operation_parser", "split_tools", "type_text"]

_PREFIX = "arg:"


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


_CONVERT: dict[str, Callable[[str], Any]] = {"integer": int, "number": _number, "string": str}


def _converter(kind: str | None, nullable: bool, choices: tuple[Any, ...] | None) -> Callable[[str], Any]:
    base = _CONVERT.get(kind or "", _json)

    def convert(text: str) -> Any:
        if nullable and text.lower() in ("null", "none"):
            return None
        if choices is not None:
            by_text = {str(c): c for c in choices}
            if text in by_text:
                return by_text[text]
            raise argparse.ArgumentTypeError(f"choose from {', '.join(map(str, choices))} (got {text!r})")
        return base(text)

    convert.__name__ = kind or "value"  # argparse names the type in its error messages
    return convert


def type_text(schema: Any) -> str:
    """A property's type in words: ``["array", "null"]`` with string items is ``array of string or null``,
    ``anyOf`` alternatives are joined with ``or``, an ``enum`` is ``one of a, b``; ``any`` without a type."""
    if not isinstance(schema, dict):
        return "any"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " or ".join(dict.fromkeys(type_text(s) for s in schema[key])) or "any"
    kinds = schema.get("type")
    if kinds is None:
        if isinstance(schema.get("enum"), list):
            return "one of " + ", ".join(map(str, schema["enum"]))
        return "object" if "properties" in schema else "any"
    words = []
    for kind in kinds if isinstance(kinds, list) else [kinds]:
        if kind == "array" and isinstance(schema.get("items"), dict) and schema["items"]:
            words.append(f"array of {type_text(schema['items'])}")
        else:
            words.append(str(kind))
    return " or ".join(words)


def _help(arg: CliArgument) -> str:
    facts = [arg.type if arg.items is None else f"{arg.type} of {arg.items}"]
    if arg.nullable:
        facts.append("or null")
    if arg.choices is not None:
        facts.append("one of " + ", ".join(json.dumps(c) if not isinstance(c, str) else c for c in arg.choices))
    facts.append("required" if arg.required else "optional")
    if arg.has_default:
        facts.append(f"default: {json.dumps(arg.default, ensure_ascii=False)}")
    described = f"{arg.help} " if arg.help else ""
    return f"{described}({'; '.join(facts)})".replace("%", "%%")


def _add(group: argparse._ArgumentGroup, arg: CliArgument) -> None:
    flags = list(dict.fromkeys([arg.flag, f"--{arg.name}"]))
    common: dict[str, Any] = {"dest": _PREFIX + arg.name, "required": arg.required, "help": _help(arg),
                              "default": argparse.SUPPRESS}  # fmt: skip
    if arg.type == "boolean" and arg.choices is None:
        group.add_argument(*flags, action=argparse.BooleanOptionalAction, **common)
        return
    choices = arg.choices
    metavar = "{" + ",".join(map(str, choices)) + "}" if choices else arg.name.upper()
    if arg.type == "array":
        convert = _converter(arg.items, False, choices)
        group.add_argument(*flags, nargs="*", type=convert, metavar=metavar, **common)
        return
    group.add_argument(*flags, type=_converter(arg.type, arg.nullable, choices), metavar=metavar, **common)


def operation_parser(command: CliCommand, *, prog: str) -> argparse.ArgumentParser:
    """A parser for ``command``: its schema's options, then ``--tools``, ``--plan`` and ``--yes``."""
    facts = [f for f, on in (("changes things", command.mutating), ("asks to confirm", command.confirm),
                             ("needs an approver", command.verify)) if on]  # fmt: skip
    if command.scopes:
        facts.append(f"scopes: {', '.join(command.scopes)}")

    parser = CliParser(
        prog=prog,
        description=command.description,
        epilog="; ".join(facts) or None,
        allow_abbrev=False,
        conflict_handler="resolve",  # a property named like a call option (--plan) takes its flag
    )
    group = parser.add_argument_group("arguments (from the input schema)")
    options = parser.add_argument_group("call options")
    options.add_argument("--tools", default=argparse.SUPPRESS, help="pkg.mod:obj holding the tools")
    options.add_argument("--plan", dest="_plan", action="store_true", help="dry run: validate and authorize only")
    options.add_argument("--yes", dest="_yes", action="store_true", help="confirm without asking")
    add_global_options(options)  # type: ignore[arg-type]  # an argument group takes add_argument alike
    for arg in command.arguments:
        _add(group, arg)
    return parser


def arguments_from(namespace: argparse.Namespace) -> dict[str, Any]:
    """The tool arguments a parsed command line gave (only those written)."""
    return {k[len(_PREFIX) :]: v for k, v in vars(namespace).items() if k.startswith(_PREFIX)}


def split_tools(argv: Sequence[str], default: str) -> str:
    """The ``--tools`` value of a command line (read before the operation's parser can be built)."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    pre.add_argument("--tools", default=default)
    known, _ = pre.parse_known_args(list(argv))
    return str(known.tools)


def command_for(registry: ToolRegistry, name: str, *, hidden: Iterable[str] | None = None) -> CliCommand:
    """The CLI command of tool ``name`` (any spelling of an operation's name: ``notes:find`` is ``notes_find``).

    ``hidden=None`` keeps the projector's default (``resolve_verification`` is decided with
    ``milpa-chat approvals approve``); a tool that did not opt into the ``cli`` surface is not offered.
    """
    from milpa_chat.command.catalogue import read_catalogue
    from milpa_chat.command.ids import OperationId
    from milpa_chat.command.projectors import CliCommandProjector

    projector = CliCommandProjector() if hidden is None else CliCommandProjector(hidden=hidden)
    entries = [e for e in read_catalogue(registry, ToolContext.cli()) if projector.supports(e)]
    wanted = name if registry.has(name) else OperationId(name).for_tool()
    for entry in entries:
        if entry.name == wanted:
            return projector.describe(entry)
    close = difflib.get_close_matches(name, [e.name for e in entries], n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else "; milpa-chat tools lists them"
    raise CliError(f"no tool {name!r} to run from the command line{hint}")
