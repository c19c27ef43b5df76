"""The ceiling of a standing grant: an ``EffectProfile`` no grant may go above, read as it is written.

A ceiling is fully classified (no ``unknown`` axis), at most ``compensatable`` (what a grant lends
can be taken back), at most ``write_as_user`` (an act above it itself gives authority, and no grant
lends authority), carries no descents, and its ``rollback_contract``, when present, is the name of
one operation under any reversibility — never a sentence.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from milpa_chat.command.canonical import Canonical
from milpa_chat.command.effects import EffectProfile
from milpa_chat.command.errors import InvalidEffectProfile
from milpa_chat.command.levels import AXES, Authority, Externality, Mutation, Reversibility, Subject
from milpa_chat.grants.errors import InvalidGrant
from milpa_chat.grants.rules import check_argument_name, check_one_line, check_operation_name, key_in_path

__all__ = ["CEILING_KEYS", "ceiling_to_dict", "check_ceiling", "read_ceiling"]

#: The keys of a ceiling, all required: the five axes, the inverse, and the escalators.
CEILING_KEYS: Final = (*AXES, "rollback_contract", "escalates_on")
_KINDS: Final = {
    "mutation": Mutation,
    "externality": Externality,
    "reversibility": Reversibility,
    "authority": Authority,
    "subject": Subject,
}
_REVERSIBLE: Final = (Reversibility.GUARANTEED, Reversibility.NOT_APPLICABLE, Reversibility.COMPENSATABLE)


def check_ceiling(where: str, ceiling: object) -> EffectProfile:
    """``ceiling`` if a grant may carry it; :class:`InvalidGrant` naming the axis and the fix otherwise."""
    if not isinstance(ceiling, EffectProfile):
        raise InvalidGrant(where, f"takes an EffectProfile, got {type(ceiling).__name__}")
    unknown = [axis for axis, level in zip(AXES, ceiling.axes, strict=True) if level.value == "unknown"]
    if unknown:
        raise InvalidGrant(
            f"{where}.{unknown[0]}",
            "is unknown: a ceiling classifies every axis (a grant cannot bound what it cannot name)",
        )
    if ceiling.reversibility not in _REVERSIBLE:
        raise InvalidGrant(
            f"{where}.reversibility",
            f"{ceiling.reversibility.value!r} is above 'compensatable': a grant lends only what can be taken back "
            f"(guaranteed, not_applicable or compensatable)",
        )
    if ceiling.authority.rank > Authority.WRITE_AS_USER.rank:
        raise InvalidGrant(
            f"{where}.authority",
            f"{ceiling.authority.value!r} is above 'write_as_user': an act above it gives authority itself, and no "
            f"grant lends authority (none, read or write_as_user)",
        )
    if ceiling.descents:
        raise InvalidGrant(f"{where}.descents", "a ceiling carries no descents (its spelling could not carry them)")
    if ceiling.rollback_contract is not None:
        contract = f"{where}.rollback_contract"
        check_operation_name(contract, ceiling.rollback_contract)
        check_one_line(contract, ceiling.rollback_contract)
    for i, name in enumerate(ceiling.escalates_on):
        check_argument_name(f"{where}.escalates_on[{i}]", name)
        if name in ceiling.escalates_on[:i]:
            raise InvalidGrant(f"{where}.escalates_on[{i}]", f"{Canonical.shown(name)} is listed twice; list it once")
    return ceiling


def ceiling_to_dict(ceiling: EffectProfile) -> dict[str, Any]:
    """The ceiling's canonical spelling: the five axes, ``rollback_contract`` and ``escalates_on``."""
    spelled: dict[str, Any] = {axis: level.value for axis, level in zip(AXES, ceiling.axes, strict=True)}
    spelled["rollback_contract"] = ceiling.rollback_contract
    spelled["escalates_on"] = list(ceiling.escalates_on)
    return spelled


def read_ceiling(where: str, data: object) -> EffectProfile:
    """A ceiling read exactly as written, or refused: nothing dropped, normalised or demoted."""
    if not isinstance(data, Mapping):
        raise InvalidGrant(where, f"takes a map of the effect axes, got {Canonical.shown(data)}")
    unknown_keys = [key for key in data if key not in CEILING_KEYS]
    if unknown_keys:
        raise InvalidGrant(
            f"{where}.{key_in_path(unknown_keys[0])}",
            f"is not a key of a ceiling; a ceiling says {', '.join(CEILING_KEYS)}",
        )
    missing = [key for key in CEILING_KEYS if key not in data]
    if missing:
        raise InvalidGrant(
            f"{where}.{missing[0]}", "is missing: a ceiling states every axis, rollback_contract and escalates_on"
        )
    levels: dict[str, Any] = {}
    for axis, kind in _KINDS.items():
        raw = data[axis]
        allowed = [member.value for member in kind]
        if type(raw) is not str or raw not in allowed:
            raise InvalidGrant(f"{where}.{axis}", f"{Canonical.shown(raw)} is not one of {', '.join(allowed)}")
        levels[axis] = kind(raw)
    contract = data["rollback_contract"]
    if contract is not None and type(contract) is not str:
        raise InvalidGrant(
            f"{where}.rollback_contract", f"names an operation or is null, got {Canonical.shown(contract)}"
        )
    escalators = data["escalates_on"]
    if not isinstance(escalators, list) or not all(type(name) is str for name in escalators):
        raise InvalidGrant(
            f"{where}.escalates_on", f"takes a list of argument names, got {Canonical.shown(escalators)}"
        )
    try:
        profile = EffectProfile(
            levels["mutation"], levels["externality"], levels["reversibility"], levels["authority"],
            subject=levels["subject"], rollback_contract=contract, escalates_on=tuple(escalators),
        )  # fmt: skip
    except InvalidEffectProfile as exc:
        raise InvalidGrant(where, str(exc)) from None
    return check_ceiling(where, profile)
