"""``RollbackContracts``: the half of the rollback guard one profile cannot see.

An :class:`~milpa_chat.command.EffectProfile` refuses prose as a rollback contract, but a well-formed
name such as ``nothing-to-roll-back`` names an operation only if the table offers one. This audit reads
a whole command table and reports every ``guaranteed`` promise whose inverse is not on it.
"""

from __future__ import annotations

from collections.abc import Iterable

from milpa_chat.command.atom import Operation
from milpa_chat.command.levels import Reversibility

__all__ = ["RollbackContracts"]


class RollbackContracts:
    """Audits the rollback promises of a command table."""

    @staticmethod
    def findings(operations: Iterable[Operation]) -> list[str]:
        """One sentence per broken promise, in table order; ``[]`` when every guarantee can be kept.

        Only declared ``guaranteed`` profiles are held to their contract (a note on anything else is a
        note). Inverses are resolved by identity against the whole table, whatever order it lists them in.
        """
        table = list(operations)
        offered = {op.id for op in table}
        found: list[str] = []
        for op in table:
            effects = op.effects
            if effects is None or effects.reversibility is not Reversibility.GUARANTEED:
                continue
            inverse = effects.rollback_operation()
            if inverse is None:
                continue
            if inverse == op.id:
                found.append(
                    f"Operation '{op.name}' names itself as its rollback ('{effects.rollback_contract}'): "
                    f"an operation that undoes itself by running again is not a guarantee; name its inverse"
                )
            elif inverse not in offered:
                found.append(
                    f"Operation '{op.name}' promises to be undone by '{effects.rollback_contract}', which this "
                    f"table does not offer: a rollback nobody can run is not a guarantee; add that operation, "
                    f"or declare reversibility 'compensatable' or 'manual_recovery'"
                )
        return found
