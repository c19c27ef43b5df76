"""``milpa-chat tools [pkg.mod:obj]``: the tools of a registry, with their flags, scopes and arguments."""

from __future__ import annotations

import argparse

from milpa_chat.cli.identity import CliIdentity
from milpa_chat.cli.schema import type_text
from milpa_chat.cli.store import load_registry, open_cli_store

__all__ = ["cmd_tools"]


async def cmd_tools(ns: argparse.Namespace) -> int:
    CliIdentity.from_options(ns.as_, ns.identities, ns.scopes)  # a wrong --identities is said at once
    store = open_cli_store(ns.store)
    try:
        registry = load_registry(ns.tools, store, hint="milpa-chat tools package.module:object")
        for summary in registry.get_tool_summaries():
            defn = registry.get(summary["name"])
            assert defn is not None
            flags = [
                f
                for f, on in (
                    ("effect undeclared: treated as mutating", not defn.effect_declared),
                    ("mutating", defn.mutating and defn.effect_declared),
                    ("confirm", defn.confirm),
                    ("needs approval", defn.verify is not None),
                )
                if on
            ]
            scopes = f" [scopes: {', '.join(defn.scopes)}]" if defn.scopes else ""
            extra = f" ({', '.join(flags)})" if flags else ""
            print(f"{summary['name']}{extra}{scopes}\n    {summary['description']}")
            for pname, pschema in summary["inputSchema"].get("properties", {}).items():
                required = pname in summary["inputSchema"].get("required", [])
                print(
                    f"    - {pname}: {type_text(pschema)}{'' if required else ' (optional)'}"
                    f"{' — ' + pschema['description'] if pschema.get('description') else ''}"
                )
    finally:
        await store.close()
    return 0
