"""The parsers of ``milpa-chat``: one-line usage errors, and the options every command that keeps state takes."""

from __future__ import annotations

import argparse
from typing import Any, NoReturn

__all__ = ["GLOBAL_OPTIONS", "CliParser", "add_global_options", "split_globals"]

#: The options every command that keeps state takes, before or after the command's name.
GLOBAL_OPTIONS = ("--store", "--as", "--identities", "--scopes")


class CliParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line: what was wrong, and where the help is."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def add_global_options(p: argparse.ArgumentParser, *, suppress: bool = True) -> None:
    """``--store``, ``--as``, ``--identities``, ``--scopes`` (after a command's name they take over the ones
    given before it)."""
    kw: dict[str, Any] = {"default": argparse.SUPPRESS} if suppress else {"default": None}
    p.add_argument(
        "--store",
        metavar="PATH",
        help="the store: a SQLite file, sqlite:///file.db, postgresql://... "
        "(default: $MILPA_STORE, else store.db in the user's data directory)",
        **kw,
    )
    p.add_argument(
        "--as",
        dest="as_",
        metavar="PRINCIPAL",
        help="act as this principal (alice is cli:alice; "
        "default: $MILPA_PRINCIPAL, else the local shell with every scope)",
        **kw,
    )
    p.add_argument(
        "--identities",
        metavar="FILE",
        help="TOML file giving each principal its scopes ([roles], [users], [defaults]; default: $MILPA_IDENTITIES)",
        **kw,
    )
    p.add_argument("--scopes", metavar="A,B", help="scopes of --as, added to those of --identities", **kw)


def split_globals(argv: list[str]) -> tuple[list[str], list[str]]:
    """The global options written before the command's name, and the rest."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in GLOBAL_OPTIONS:
            i += 2
        elif word.startswith(tuple(f"{o}=" for o in GLOBAL_OPTIONS)):
            i += 1
        else:
            break
    return argv[:i], argv[i:]
