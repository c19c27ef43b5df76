"""The effect lattice laws, as hypothesis properties over every profile that can be declared.

A profile's place in the lattice is its five levels (``profile.axes``); escalators and rollback
contracts ride along (their composition rules are tested by example in test_effects.py).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from milpa_chat.command import Authority, EffectProfile, Externality, Mutation, Reversibility, Subject
from milpa_chat.command.levels import AXES

NAMES = ["undo.a", "undo.b", "Undo:A", "plugins.disable"]
NOTES = [None, "somebody edits the file back", "undo.a"]


@st.composite
def profiles(draw: st.DrawFn) -> EffectProfile:
    """Any profile the constructor accepts (every constructor invariant respected)."""
    mutation = draw(st.sampled_from(list(Mutation)))
    reversibility: Reversibility
    if mutation is Mutation.NONE:
        subject = draw(st.sampled_from([Subject.NONE, Subject.UNKNOWN]))
        reversibility = draw(st.sampled_from([r for r in Reversibility if r is not Reversibility.GUARANTEED]))
    else:
        subject = draw(st.sampled_from(list(Subject)))
        reversibility = draw(st.sampled_from([r for r in Reversibility if r is not Reversibility.NOT_APPLICABLE]))
    guaranteed = reversibility is Reversibility.GUARANTEED
    contract = draw(st.sampled_from(NAMES)) if guaranteed else draw(st.sampled_from(NOTES))
    return EffectProfile(
        mutation,
        draw(st.sampled_from(list(Externality))),
        reversibility,
        draw(st.sampled_from(list(Authority))),
        escalates_on=draw(st.lists(st.sampled_from(["path", "mode", "to"]), max_size=2, unique=True)),
        subject=subject,
        rollback_contract=contract,
    )


def same_except_escalator_order(a: EffectProfile, b: EffectProfile) -> bool:
    da, db = a.to_dict(), b.to_dict()
    return set(da.pop("escalates_on")) == set(db.pop("escalates_on")) and da == db


# ------------------------------------------------------------------------- join / meet
@given(profiles(), profiles())
def test_join_and_meet_are_commutative(a: EffectProfile, b: EffectProfile) -> None:
    assert same_except_escalator_order(a | b, b | a), "a join does not depend on its order, contract included"
    assert (a & b).axes == (b & a).axes


@settings(max_examples=300)
@given(profiles(), profiles(), profiles())
def test_join_and_meet_are_associative(a: EffectProfile, b: EffectProfile, c: EffectProfile) -> None:
    assert ((a | b) | c).axes == (a | (b | c)).axes
    assert ((a & b) & c).axes == (a & (b & c)).axes


@given(profiles())
def test_join_and_meet_are_idempotent(a: EffectProfile) -> None:
    assert (a | a).axes == a.axes
    assert (a & a).axes == a.axes


@given(profiles(), profiles())
def test_join_and_meet_absorb_each_other(a: EffectProfile, b: EffectProfile) -> None:
    assert (a | (a & b)).axes == a.axes
    assert (a & (a | b)).axes == a.axes


@given(profiles(), profiles())
def test_join_is_an_upper_bound_and_meet_a_lower_bound(a: EffectProfile, b: EffectProfile) -> None:
    assert a.is_no_wider_than(a | b) and b.is_no_wider_than(a | b)
    assert (a & b).is_no_wider_than(a) and (a & b).is_no_wider_than(b)


@given(profiles(), profiles())
def test_meet_never_raises_an_axis_and_join_never_lowers_one(a: EffectProfile, b: EffectProfile) -> None:
    met, joined = a & b, a | b
    for axis in AXES:
        assert getattr(met, axis).weight <= min(getattr(a, axis).weight, getattr(b, axis).weight)
        assert getattr(joined, axis).weight >= max(getattr(a, axis).weight, getattr(b, axis).weight)


@given(profiles(), profiles())
def test_composition_only_produces_declarable_profiles(a: EffectProfile, b: EffectProfile) -> None:
    for composed in (a | b, a & b):
        rebuilt = EffectProfile.from_dict(composed.to_dict())  # goes through every invariant again
        assert rebuilt.axes == composed.axes


@given(profiles(), profiles())
def test_full_classification_of_a_join_never_depends_on_order(a: EffectProfile, b: EffectProfile) -> None:
    assert (a | b).is_fully_classified() == (b | a).is_fully_classified()
    assert (a | b).is_fully_classified() == (a.is_fully_classified() and b.is_fully_classified())


# ------------------------------------------------------------------- the partial order
@given(profiles())
def test_no_wider_than_is_reflexive(a: EffectProfile) -> None:
    assert a.is_no_wider_than(a)


@given(profiles(), profiles())
def test_no_wider_than_is_antisymmetric(a: EffectProfile, b: EffectProfile) -> None:
    if a.is_no_wider_than(b) and b.is_no_wider_than(a):
        assert a.axes == b.axes


@given(profiles(), profiles(), profiles())
def test_no_wider_than_is_transitive(a: EffectProfile, b: EffectProfile, c: EffectProfile) -> None:
    if a.is_no_wider_than(b) and b.is_no_wider_than(c):
        assert a.is_no_wider_than(c)


def different_guarantees(a: EffectProfile, b: EffectProfile) -> bool:
    """Two acts each undone by a different operation: their join is undone by neither (``compensatable``)."""
    ids = {p.rollback_operation() for p in (a, b) if p.reversibility is Reversibility.GUARANTEED}
    return len(ids) == 2


@given(profiles(), profiles())
def test_the_order_is_the_lattice_order(a: EffectProfile, b: EffectProfile) -> None:
    assert a.is_no_wider_than(b) == ((a & b).axes == a.axes)
    if not different_guarantees(a, b):
        assert a.is_no_wider_than(b) == ((a | b).axes == b.axes)


@given(profiles(), profiles())
def test_the_one_exception_joins_upward_never_down(a: EffectProfile, b: EffectProfile) -> None:
    if different_guarantees(a, b):
        assert (a | b).reversibility is Reversibility.COMPENSATABLE
        assert (a | b).rollback_contract is None


@given(profiles())
def test_unclassified_is_the_top_and_nothing_classified_is_wider(a: EffectProfile) -> None:
    assert a.is_no_wider_than(EffectProfile.unclassified())
    assert (a | EffectProfile.unclassified()).axes == EffectProfile.unclassified().axes


@given(profiles())
def test_a_stored_profile_reads_back_as_itself(a: EffectProfile) -> None:
    assert EffectProfile.from_dict(a.to_dict()) == a
