"""The per-call composition names keep their old address, ``milpa_chat.command.composition``."""

from __future__ import annotations

import milpa_chat.command as command
from milpa_chat.command import certificates, composition, effects, evidence


def test_every_composition_name_is_the_object_of_its_home() -> None:
    homes = {
        **{name: getattr(evidence, name) for name in evidence.__all__},
        "Descent": effects.Descent,
        "ProfileComposition": effects.ProfileComposition,
        "DescentCertificate": certificates.DescentCertificate,
    }
    assert set(composition.__all__) <= set(homes)
    for name in composition.__all__:
        assert getattr(composition, name) is homes[name] is getattr(command, name), name
    assert composition.compose is effects.compose
    assert composition.TRIAL_WORKSPACE == evidence.TRIAL_WORKSPACE == "trial-workspace"


def test_a_profile_built_through_the_old_address_composes_as_before() -> None:
    from milpa_chat.command.composition import CallSubject, Descent, TrialConfinement
    from milpa_chat.command.effects import EffectProfile
    from milpa_chat.command.levels import Authority as A
    from milpa_chat.command.levels import Externality as E
    from milpa_chat.command.levels import Mutation as M
    from milpa_chat.command.levels import Reversibility as R

    plan_only = Descent("dry_run", True, EffectProfile.read_only(), "only prints the plan")
    ceiling = EffectProfile(M.PERSISTENT, E.NONE, R.COMPENSATABLE, A.WRITE_AS_USER, descents=[plan_only])
    # no certificate: the descent lowers nothing; a trial workspace still confines the mutation
    subject = CallSubject("files:write", confinement=TrialConfinement("ws-1", "sha256:ab", {}, "a scratch copy"))
    result = ceiling.compose_for_call({"dry_run": True}, subject)
    assert result.effective.mutation.value == "ephemeral"
    assert result.confined_by_trial()
    assert [r.producer for r in result.reductions] == ["trial-workspace"]
