"""The ``milpa-chat`` command: :func:`main` parses the command line and runs one command.

The package reads one way: :mod:`~milpa_chat.cli.main` (the parser and the dispatch) names the commands
(``tools``, ``call``, ``run``, ``approvals``, ``grants``, ``audit``, ``mcp``, one module each); they share the
command's context (:mod:`~milpa_chat.cli.session`: the store, the registry on it and who acts, from
:mod:`~milpa_chat.cli.store` and :mod:`~milpa_chat.cli.identity`), what they print
(:mod:`~milpa_chat.cli.output`), and the parsers and errors at the bottom (:mod:`~milpa_chat.cli.parsing`,
:mod:`~milpa_chat.cli.errors`).
"""

from milpa_chat.cli.errors import CliError
from milpa_chat.cli.main import build_parser, main

__all__ = ["CliError", "build_parser", "main"]
