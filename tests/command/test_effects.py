"""``EffectProfile``: ports of EffectProfileTest, SubjectTest, EffectProfileEnvelopeTest, EffectProfileMeetTest,
NothingToUndoIsNotAPromiseTest, ARollbackNamesAnOperationTest and AJoinDoesNotDependOnItsOrderTest.

Fixtures that the newest profile refuses (a read claiming ``guaranteed``, a prose
rollback contract) are adapted to what the newest rules accept, as the newest rules ask.
"""

from __future__ import annotations

import pytest

from milpa_chat.command import (
    Authority,
    EffectProfile,
    Externality,
    InvalidEffectProfile,
    Mutation,
    Operation,
    Reversibility,
    RollbackContracts,
    Subject,
)
from milpa_chat.command.levels import AXES

M, E, R, A, S = Mutation, Externality, Reversibility, Authority, Subject


def handler(values: dict[str, object]) -> dict[str, object]:
    return {}


def profile(reversibility: Reversibility) -> EffectProfile:
    return EffectProfile(M.PERSISTENT, E.NONE, reversibility, A.WRITE_AS_USER, subject=S.DATA)


def guaranteed_by(contract: str) -> EffectProfile:
    return EffectProfile(
        M.PERSISTENT, E.NONE, R.GUARANTEED, A.WRITE_AS_USER, subject=S.CONFIGURATION, rollback_contract=contract
    )


# ------------------------------------------------------------------ the five axes
def test_not_knowing_is_ranked_above_knowing_something_bad() -> None:
    assert M.UNKNOWN.weight > M.PERSISTENT.weight
    assert E.UNKNOWN.weight > E.PUBLIC.weight
    assert A.UNKNOWN.weight > A.PRIVILEGED.weight
    assert R.UNKNOWN.weight == R.IRREVERSIBLE.weight
    assert S.NONE.weight < S.DATA.weight < S.CONFIGURATION.weight < S.EXECUTABLE.weight < S.UNKNOWN.weight


def test_the_weights_the_seed_relies_on() -> None:
    assert R.COMPENSATABLE.weight == 1
    assert A.WRITE_AS_USER.weight == 2
    assert R.NOT_APPLICABLE.weight == R.GUARANTEED.weight == 0


def test_levels_are_their_backing_strings() -> None:
    # the strings, as the docstring allows at run time (the declared types name the members)
    as_strings = EffectProfile("persistent", "third_party", "irreversible", "write_as_user", subject="data")  # type: ignore[arg-type]
    assert as_strings == EffectProfile(M.PERSISTENT, E.THIRD_PARTY, R.IRREVERSIBLE, A.WRITE_AS_USER, subject=S.DATA)
    with pytest.raises(InvalidEffectProfile, match="'god' is not a level of authority"):
        EffectProfile(authority="god")  # type: ignore[arg-type]
    with pytest.raises(InvalidEffectProfile, match="is not a level of externality"):
        EffectProfile(externality=M.NONE)  # type: ignore[arg-type]  # a level of another axis


# ------------------------------------------------------------------ named profiles
def test_an_unclassified_operation_carries_every_dimension_at_its_maximum() -> None:
    ceiling = Operation("x", "x", handler).effect_ceiling()
    assert ceiling.axes == (M.UNKNOWN, E.UNKNOWN, R.UNKNOWN, A.UNKNOWN, S.UNKNOWN)
    assert not ceiling.is_fully_classified()


def test_the_read_only_profile_is_fully_classified_at_the_floor_with_nothing_to_undo() -> None:
    read = EffectProfile.read_only()
    assert read.axes == (M.NONE, E.NONE, R.NOT_APPLICABLE, A.READ, S.NONE)
    assert read.is_fully_classified()
    assert read.rollback_contract is None
    assert read.reversibility.weight == 0


def test_four_out_of_five_is_not_classified() -> None:
    assert not EffectProfile(M.PERSISTENT, E.NONE, R.MANUAL_RECOVERY, A.PRIVILEGED).is_fully_classified()


def test_a_mutating_operation_may_refine_what_kind_of_mutation_it_performs() -> None:
    refined = EffectProfile(M.PERSISTENT, E.NONE, R.MANUAL_RECOVERY, A.WRITE_AS_USER, subject=S.DATA)
    op = Operation("plugins_lock", "x", handler, mutating=True, effects=refined)
    assert op.effect_ceiling().is_fully_classified()
    assert op.effect_ceiling().mutation is M.PERSISTENT


# ------------------------------------------------------------------ invariants, in order
def test_an_operation_that_changes_nothing_cannot_claim_a_subject() -> None:
    with pytest.raises(InvalidEffectProfile, match="changes nothing cannot declare a subject"):
        EffectProfile(M.NONE, E.NONE, R.NOT_APPLICABLE, A.READ, subject=S.EXECUTABLE)


def test_an_operation_that_changes_nothing_cannot_promise_to_undo_it() -> None:
    with pytest.raises(InvalidEffectProfile, match="cannot promise to undo it"):
        EffectProfile(M.NONE, E.NONE, R.GUARANTEED, A.READ, subject=S.NONE, rollback_contract="nothing-to-roll-back")


def test_an_operation_that_changes_something_cannot_say_undoing_does_not_apply() -> None:
    with pytest.raises(InvalidEffectProfile, match="cannot say undoing does not apply"):
        EffectProfile(M.PERSISTENT, E.NONE, R.NOT_APPLICABLE, A.WRITE_AS_USER, subject=S.DATA)
    with pytest.raises(InvalidEffectProfile, match="cannot say undoing does not apply"):
        EffectProfile(reversibility=R.NOT_APPLICABLE)  # unknown mutation is not "none"


@pytest.mark.parametrize("contract", [None, "", "   ", "\t\n"])
def test_a_guarantee_requires_a_rollback_contract(contract: str | None) -> None:
    with pytest.raises(InvalidEffectProfile, match="requires a rollback contract"):
        EffectProfile(M.PERSISTENT, E.NONE, R.GUARANTEED, A.WRITE_AS_USER, subject=S.DATA, rollback_contract=contract)


@pytest.mark.parametrize(
    "prose",
    [
        "delete var/capability-index.json",
        "remove the line from var/greetings.txt",
        "dies with the process",
        "reads only: there is nothing to roll back",
    ],
)
def test_prose_is_refused_as_a_rollback_contract(prose: str) -> None:
    with pytest.raises(InvalidEffectProfile, match="describes an inverse instead of naming one"):
        guaranteed_by(prose)


@pytest.mark.parametrize(
    "name",
    [
        "plugins.disable",
        "plugins:disable",
        "plugins_disable",
        "plugins.disable-unsafe",
        "undo",
        "RBK-19",
        " Plugins:Disable ",
    ],
)
def test_a_name_is_accepted_and_resolves_to_one_identity_whatever_the_spelling(name: str) -> None:
    promised = guaranteed_by(name)
    assert promised.rollback_contract == name
    found = promised.rollback_operation()
    assert found is not None and found.same_as(name)
    assert ":" not in found.canonical and "_" not in found.canonical


def test_a_well_formed_name_that_names_nothing_is_not_caught_by_shape_alone() -> None:
    assert guaranteed_by("nothing-to-roll-back").rollback_contract == "nothing-to-roll-back"


def test_a_profile_that_promises_nothing_has_no_rollback_operation() -> None:
    assert EffectProfile.read_only().rollback_operation() is None
    assert EffectProfile.unclassified().rollback_operation() is None
    note = EffectProfile(
        M.PERSISTENT,
        E.NONE,
        R.MANUAL_RECOVERY,
        A.WRITE_AS_USER,
        subject=S.DATA,
        rollback_contract="somebody edits the file back",
    )
    assert note.rollback_operation() is None


def test_a_compensating_contract_that_names_an_operation_is_handed_back() -> None:
    comp = EffectProfile(
        M.PERSISTENT,
        E.NONE,
        R.COMPENSATABLE,
        A.WRITE_AS_USER,
        subject=S.EXECUTABLE,
        rollback_contract="plugins.disable",
    )
    found = comp.rollback_operation()
    assert found is not None and found.same_as("plugins:disable")
    assert comp.reversibility.weight == 1


def test_escalators_must_be_a_list_of_names() -> None:
    with pytest.raises(InvalidEffectProfile, match="takes a list of argument names"):
        EffectProfile(escalates_on="path")


# ------------------------------------------------------------------------------ join
def test_joining_takes_the_worst_of_each_dimension_and_never_averages() -> None:
    local = EffectProfile(M.PERSISTENT, E.NONE, R.GUARANTEED, A.READ, subject=S.DATA, rollback_contract="RBK-1")
    reaching = EffectProfile(M.EPHEMERAL, E.PUBLIC, R.IRREVERSIBLE, A.WRITE_AS_USER, subject=S.DATA)
    joined = local.join(reaching)
    assert joined.axes == (M.PERSISTENT, E.PUBLIC, R.IRREVERSIBLE, A.WRITE_AS_USER, S.DATA)
    assert joined.rollback_contract is None, "a rollback contract does not survive an irreversible join"
    assert local | reaching == joined


def test_joining_can_only_raise_the_ceiling() -> None:
    high = EffectProfile(M.PERSISTENT, E.PUBLIC, R.IRREVERSIBLE, A.PRIVILEGED)
    low = EffectProfile.read_only()
    for joined in (high.join(low), low.join(high)):
        assert joined.axes[:4] == (M.PERSISTENT, E.PUBLIC, R.IRREVERSIBLE, A.PRIVILEGED)


def test_joining_takes_the_higher_subject() -> None:
    data, code = (
        profile(R.MANUAL_RECOVERY),
        EffectProfile(M.PERSISTENT, E.NONE, R.MANUAL_RECOVERY, A.WRITE_AS_USER, subject=S.EXECUTABLE),
    )
    assert data.join(code).subject is S.EXECUTABLE and code.join(data).subject is S.EXECUTABLE


def test_join_is_commutative_on_every_axis_including_reversibility() -> None:
    irreversible, unknown = profile(R.IRREVERSIBLE), EffectProfile.unclassified()
    assert unknown.join(irreversible).to_dict() == irreversible.join(unknown).to_dict()
    assert irreversible.join(unknown).reversibility is R.UNKNOWN, "the known label must not hide the unknown one"


def test_a_partially_classified_profile_stays_unclassified_whichever_side_folds_first() -> None:
    irreversible, partial = profile(R.IRREVERSIBLE), profile(R.UNKNOWN)
    assert not irreversible.join(partial).is_fully_classified()
    assert not partial.join(irreversible).is_fully_classified()
    assert partial.join(irreversible).to_dict() == irreversible.join(partial).to_dict()


def test_two_known_levels_join_the_same_in_either_order() -> None:
    manual, irreversible = profile(R.MANUAL_RECOVERY), profile(R.IRREVERSIBLE)
    assert irreversible.join(manual).to_dict() == manual.join(irreversible).to_dict()
    assert manual.join(irreversible).reversibility is R.IRREVERSIBLE


def test_two_guaranteed_acts_with_different_rollbacks_join_as_compensatable_in_either_order() -> None:
    a = EffectProfile(M.PERSISTENT, E.NONE, R.GUARANTEED, A.WRITE_AS_USER, subject=S.DATA, rollback_contract="undo.a")
    b = EffectProfile(M.PERSISTENT, E.NONE, R.GUARANTEED, A.WRITE_AS_USER, subject=S.DATA, rollback_contract="undo.b")
    assert a.join(b).reversibility is R.COMPENSATABLE
    assert a.join(b).rollback_contract is None, "no one operation undoes both"
    assert b.join(a).to_dict() == a.join(b).to_dict()


def test_the_same_rollback_on_both_sides_stays_guaranteed_in_any_spelling() -> None:
    a = guaranteed_by("undo.same")
    assert a.join(guaranteed_by("undo.same")).rollback_contract == "undo.same"
    assert a.join(EffectProfile.read_only()).rollback_contract == "undo.same", "a single guaranteed side keeps its own"
    spelled = a.join(guaranteed_by("Undo:Same"))
    assert (spelled.reversibility, spelled.rollback_contract) == (R.GUARANTEED, "undo.same")
    assert guaranteed_by("Undo:Same").join(a).to_dict() == spelled.to_dict()


def test_composing_axes_never_produces_a_profile_nobody_could_declare() -> None:
    read = EffectProfile.read_only()
    install = EffectProfile(
        M.PERSISTENT,
        E.THIRD_PARTY,
        R.GUARANTEED,
        A.PRIVILEGED,
        subject=S.EXECUTABLE,
        rollback_contract="plugins.disable",
    )
    met = read.meet(install)
    assert met.mutation is M.NONE and met.reversibility is R.NOT_APPLICABLE
    assert met.is_no_wider_than(read) and met.is_no_wider_than(install)
    joined = read.join(install)
    assert joined.mutation is M.PERSISTENT
    assert joined.reversibility is R.GUARANTEED, "the side that mutates is the one whose answer means anything"
    assert joined.rollback_contract == "plugins.disable"
    assert read.is_no_wider_than(joined) and install.is_no_wider_than(joined)


def test_join_unions_the_escalators_and_carries_no_descents() -> None:
    a = EffectProfile(M.PERSISTENT, escalates_on=["path", "mode"])
    b = EffectProfile(M.EPHEMERAL, escalates_on=["mode", "visibility"])
    assert a.join(b).escalates_on == ("path", "mode", "visibility")
    assert a.meet(b).escalates_on == ("path", "mode", "visibility")


# ------------------------------------------------------------------------------ meet
def test_meet_takes_the_lower_of_each_axis_and_is_commutative() -> None:
    high = EffectProfile(M.PERSISTENT, E.PUBLIC, R.IRREVERSIBLE, A.PRIVILEGED, subject=S.EXECUTABLE)
    low = EffectProfile(M.EPHEMERAL, E.SAME_PRINCIPAL, R.COMPENSATABLE, A.READ, subject=S.DATA)
    met = high.meet(low)
    assert met.axes == (M.EPHEMERAL, E.SAME_PRINCIPAL, R.COMPENSATABLE, A.READ, S.DATA)
    assert met == low.meet(high) == high & low


def test_meet_never_raises_any_axis() -> None:
    grid = [
        EffectProfile(M.PERSISTENT, E.THIRD_PARTY, R.IRREVERSIBLE, A.PRIVILEGED, subject=S.CONFIGURATION),
        EffectProfile(M.EPHEMERAL, E.NONE, R.GUARANTEED, A.READ, subject=S.DATA, rollback_contract="undo"),
        EffectProfile(M.UNKNOWN, E.PUBLIC, R.UNKNOWN, A.UNKNOWN, subject=S.UNKNOWN),
        EffectProfile(M.NONE, E.NONE, R.NOT_APPLICABLE, A.NONE, subject=S.NONE),
    ]
    for a in grid:
        for b in grid:
            met = a.meet(b)
            for axis in AXES:
                assert getattr(met, axis).weight <= min(getattr(a, axis).weight, getattr(b, axis).weight), axis
            assert met.is_no_wider_than(a) and met.is_no_wider_than(b)


def test_meet_keeps_the_rollback_contract_when_reversibility_becomes_guaranteed() -> None:
    promised = guaranteed_by("rows.restore")
    irreversible = EffectProfile(M.PERSISTENT, E.NONE, R.IRREVERSIBLE, A.WRITE_AS_USER, subject=S.CONFIGURATION)
    met = promised.meet(irreversible)
    assert met.reversibility is R.GUARANTEED
    assert met.rollback_contract == "rows.restore"
    assert irreversible.meet(promised).rollback_contract == "rows.restore", "either order"


def test_a_no_mutation_meet_has_no_subject() -> None:
    reads = EffectProfile(M.NONE, E.NONE, R.NOT_APPLICABLE, A.READ, subject=S.UNKNOWN)
    writes = EffectProfile(M.PERSISTENT, E.NONE, R.MANUAL_RECOVERY, A.WRITE_AS_USER, subject=S.DATA)
    met = reads.meet(writes)
    assert met.mutation is M.NONE
    assert met.subject is S.NONE, "no mutation, so no subject: clamped to keep the profile declarable"


def test_a_meet_breaks_weight_ties_toward_the_lower_label_so_order_does_not_matter() -> None:
    irreversible, unknown = profile(R.IRREVERSIBLE), profile(R.UNKNOWN)
    assert irreversible.meet(unknown).reversibility is R.IRREVERSIBLE
    assert unknown.meet(irreversible).reversibility is R.IRREVERSIBLE


# ------------------------------------------------------------------- the comparator
def ceiling() -> EffectProfile:
    return EffectProfile(M.PERSISTENT, E.SAME_PRINCIPAL, R.MANUAL_RECOVERY, A.WRITE_AS_USER, subject=S.CONFIGURATION)


def test_a_profile_is_no_wider_than_itself() -> None:
    assert ceiling().is_no_wider_than(ceiling())


def test_lower_on_one_axis_is_no_wider() -> None:
    tighter = EffectProfile(M.PERSISTENT, E.SAME_PRINCIPAL, R.COMPENSATABLE, A.WRITE_AS_USER, subject=S.CONFIGURATION)
    assert tighter.is_no_wider_than(ceiling())
    assert not ceiling().is_no_wider_than(tighter)


def test_higher_on_any_axis_is_wider_even_if_lower_elsewhere() -> None:
    mixed = EffectProfile(M.EPHEMERAL, E.SAME_PRINCIPAL, R.MANUAL_RECOVERY, A.PRIVILEGED, subject=S.CONFIGURATION)
    assert not mixed.is_no_wider_than(ceiling())


def test_unknown_weighs_as_the_top_of_its_axis() -> None:
    assert ceiling().is_no_wider_than(EffectProfile.unclassified())
    assert not EffectProfile.unclassified().is_no_wider_than(ceiling())


def test_unknown_is_not_below_irreversible() -> None:
    assert not profile(R.UNKNOWN).is_no_wider_than(profile(R.IRREVERSIBLE)), "the cheap way to look recoverable"
    assert profile(R.IRREVERSIBLE).is_no_wider_than(profile(R.UNKNOWN))
    assert not profile(R.UNKNOWN).join(profile(R.IRREVERSIBLE)).is_fully_classified()


# ------------------------------------------------------------------- from_partial
def test_a_meet_is_always_no_wider_than_both_operands() -> None:
    human = EffectProfile.from_partial({"reversibility": "compensatable", "authority": "read"})
    tightened = ceiling().meet(human)
    assert tightened.is_no_wider_than(ceiling()) and tightened.is_no_wider_than(human)


def test_from_partial_names_the_given_axes_and_leaves_the_rest_unknown() -> None:
    partial = EffectProfile.from_partial({"reversibility": "compensatable", "authority": "read"})
    assert partial.axes == (M.UNKNOWN, E.UNKNOWN, R.COMPENSATABLE, A.READ, S.UNKNOWN)


def test_omitted_axes_do_not_tighten_under_meet() -> None:
    tightened = ceiling().meet(EffectProfile.from_partial({"reversibility": "compensatable"}))
    assert tightened.axes == (M.PERSISTENT, E.SAME_PRINCIPAL, R.COMPENSATABLE, A.WRITE_AS_USER, S.CONFIGURATION)


@pytest.mark.parametrize(
    ("axes", "message"),
    [
        ({}, "names at least one axis"),
        ({"amount": 200}, "«amount» is not an effect axis"),
        ({"authority": "god"}, "'god' is not a level of authority"),
        ({"authority": 1}, "is not a level of authority"),
        ({"reversibility": "guaranteed"}, "cannot be claimed by a tightening"),
        ({"reversibility": "not_applicable"}, "tighten «mutation» instead"),
        ({"mutation": "none", "subject": "data"}, "changes nothing cannot declare a subject"),
    ],
)
def test_from_partial_refuses_what_is_not_a_tightening(axes: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidEffectProfile, match=message):
        EffectProfile.from_partial(axes)


# --------------------------------------------------------------------- (de)serialise
def test_it_serialises_with_whether_it_is_actually_classified() -> None:
    unclassified = EffectProfile.unclassified().to_dict()
    assert unclassified["fully_classified"] is False
    assert unclassified["mutation"] == "unknown" and unclassified["subject"] == "unknown"
    assert unclassified["escalates_on"] == []
    classified = EffectProfile(
        M.PERSISTENT, E.THIRD_PARTY, R.IRREVERSIBLE, A.WRITE_AS_USER, escalates_on=["path"], subject=S.EXECUTABLE
    ).to_dict()
    assert list(classified) == [*AXES, "escalates_on", "rollback_contract", "fully_classified"]
    assert classified["fully_classified"] is True
    assert classified["subject"] == "executable"
    assert classified["escalates_on"] == ["path"] and classified["rollback_contract"] is None


def test_from_dict_is_the_inverse_of_to_dict() -> None:
    promised = EffectProfile(
        M.PERSISTENT,
        E.NONE,
        R.GUARANTEED,
        A.WRITE_AS_USER,
        escalates_on=["path"],
        subject=S.DATA,
        rollback_contract="rows.delete",
    )
    for p in (ceiling(), promised, EffectProfile.unclassified(), EffectProfile.read_only()):
        back = EffectProfile.from_dict(p.to_dict())
        assert back == p


def test_from_dict_refuses_a_malformed_envelope() -> None:
    with pytest.raises(InvalidEffectProfile, match="a stored profile needs a valid «externality»"):
        EffectProfile.from_dict({"mutation": "persistent"})


def test_from_dict_is_lenient_about_what_is_not_an_axis() -> None:
    back = EffectProfile.from_dict(
        {
            **ceiling().to_dict(),
            "escalates_on": ["path", 3, None],
            "rollback_contract": 7,
            "fully_classified": "whatever",
        }
    )
    assert back.escalates_on == ("path",) and back.rollback_contract is None
    assert EffectProfile.from_dict({**ceiling().to_dict(), "escalates_on": "path"}).escalates_on == ()


def test_a_profile_archived_before_the_not_applicable_rule_still_reads() -> None:
    archived = EffectProfile.from_dict(
        {
            "mutation": "none",
            "externality": "none",
            "reversibility": "guaranteed",
            "authority": "read",
            "subject": "none",
            "rollback_contract": "nothing-to-roll-back",
        }
    )
    assert archived.reversibility is R.NOT_APPLICABLE
    assert archived.rollback_contract is None
    assert archived == EffectProfile.read_only()


def test_an_archived_promise_backed_by_prose_is_read_as_manual_recovery() -> None:
    archived = EffectProfile.from_dict(
        {
            "mutation": "persistent",
            "externality": "third_party",
            "reversibility": "guaranteed",
            "authority": "read",
            "subject": "data",
            "rollback_contract": "delete var/capability-index.json",
        }
    )
    assert archived.reversibility is R.MANUAL_RECOVERY
    assert archived.rollback_contract == "delete var/capability-index.json", "nothing anyone wrote is lost"
    assert archived.rollback_operation() is None
    assert archived.reversibility.weight > R.GUARANTEED.weight


def test_an_archived_promise_that_names_an_operation_survives_intact() -> None:
    archived = EffectProfile.from_dict(
        {
            "mutation": "persistent",
            "externality": "none",
            "reversibility": "guaranteed",
            "authority": "write_as_user",
            "subject": "configuration",
            "rollback_contract": "plugins.disable",
        }
    )
    assert archived.reversibility is R.GUARANTEED
    found = archived.rollback_operation()
    assert found is not None and found.same_as("plugins:disable")


# --------------------------------------------------------------------- escalators
def test_an_unresolved_escalating_argument_is_named_so_the_ceiling_stays() -> None:
    p = EffectProfile(M.PERSISTENT, E.UNKNOWN, R.UNKNOWN, A.WRITE_AS_USER, escalates_on=["path", "visibility"])
    assert p.unresolved_escalators({}) == ["path", "visibility"]
    assert p.unresolved_escalators({"path": "/tmp/x"}) == ["visibility"]
    assert p.unresolved_escalators({"path": "", "visibility": "private"}) == ["path"]
    assert p.unresolved_escalators({"path": None, "visibility": 0}) == ["path"], "0 and False are values"
    assert p.unresolved_escalators({"path": "/tmp/x", "visibility": "private"}) == []


# ------------------------------------------------------------- rollback contracts
def promising(name: str, inverse: str) -> Operation:
    return Operation(name, "x", handler, input_schema={"type": "object"}, mutating=True, effects=guaranteed_by(inverse))


def reading(name: str) -> Operation:
    return Operation(name, "x", handler, effects=EffectProfile.read_only())


def test_a_promise_answered_by_the_table_is_not_a_finding() -> None:
    assert (
        RollbackContracts.findings(
            [promising("plugins.enable", "plugins.disable"), promising("plugins.disable", "plugins.enable")]
        )
        == []
    )


def test_a_well_formed_name_that_names_nothing_is_a_finding() -> None:
    [finding] = RollbackContracts.findings([promising("capabilities.refresh", "nothing-to-roll-back")])
    for part in ("capabilities.refresh", "nothing-to-roll-back", "does not offer", "is not a guarantee"):
        assert part in finding


def test_the_spelling_of_the_surface_does_not_decide_whether_a_promise_resolves() -> None:
    assert (
        RollbackContracts.findings(
            [promising("plugins:enable", "plugins_disable"), promising("plugins.disable", "plugins.enable")]
        )
        == []
    )


def test_an_inverse_contributed_later_still_resolves() -> None:
    assert (
        RollbackContracts.findings([promising("plugins.enable", "plugins.disable"), reading("plugins.disable")]) == []
    )


def test_an_operation_that_names_itself_as_its_rollback_is_a_finding() -> None:
    [finding] = RollbackContracts.findings([promising("toggle", "Toggle")])
    assert "names itself" in finding and "is not a guarantee" in finding


def test_only_a_guaranteed_profile_is_held_to_its_contract() -> None:
    manual = Operation(
        "capabilities.refresh",
        "x",
        handler,
        mutating=True,
        effects=EffectProfile(
            M.PERSISTENT,
            E.THIRD_PARTY,
            R.MANUAL_RECOVERY,
            A.READ,
            subject=S.DATA,
            rollback_contract="delete var/capability-index.json",
        ),
    )
    compensating = Operation(
        "x.y",
        "x",
        handler,
        effects=EffectProfile(
            M.PERSISTENT, E.NONE, R.COMPENSATABLE, A.READ, subject=S.DATA, rollback_contract="nowhere.to.be.found"
        ),
    )
    assert RollbackContracts.findings([manual, compensating, Operation("u", "x", handler)]) == []


def test_an_empty_table_has_no_broken_promises() -> None:
    assert RollbackContracts.findings([]) == []
