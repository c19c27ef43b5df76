"""Per-call composition: ports of DescentTest, CeilingForCallTest, ProfileCompositionTest, AuthorityIsJudgedTest,
SignedCertificateTest, TrialConfinementTest, SubjectAttestationTest and VerifiedFactsTest.

Older destinations promised ``guaranteed`` for a read (refused by the newest profile); here a rehearsal's
destination is the canonical read, :meth:`EffectProfile.read_only`.
"""

from __future__ import annotations

import base64
import copy
import pickle
from typing import Any

import pytest

from milpa_chat.command import (
    Authority,
    AuthorityRule,
    CallSubject,
    ContextFacts,
    DeclaredAuthorityPolicy,
    Descent,
    DescentCertificate,
    EffectProfile,
    Externality,
    InvalidEffectProfile,
    Mutation,
    Operation,
    Reversibility,
    Subject,
    SubjectAttestation,
    TrialConfinement,
    VerifiedPrincipal,
    _ed25519,
    generate_signing_key,
    public_key_of,
)

M, E, R, A, S = Mutation, Externality, Reversibility, Authority, Subject
DIGEST = "sha256:the-handler-the-verifier-watched"
OPERATION = "capabilities:enable"
ALL_AXES = ["mutation", "externality", "reversibility", "authority", "subject"]
SECRET = generate_signing_key()
PUBLIC = public_key_of(SECRET)


def destination() -> EffectProfile:
    return EffectProfile.read_only()


def certificate(
    *,
    predicate: dict[str, Any] | None = None,
    covers: list[str] | None = None,
    to: EffectProfile | None = None,
    handler: str | None = DIGEST,
    operation: str = OPERATION,
    secret: bytes | None = SECRET,
) -> DescentCertificate:
    unsigned = DescentCertificate(
        verifier="verify-descent+observe-network/2026-08-18",
        operation=operation,
        predicate={"dry_run": True} if predicate is None else predicate,
        covers=ALL_AXES if covers is None else covers,
        to=destination() if to is None else to,
        handler_sha256=handler,
        envelope={"filesystem": "app tree, blind outside it"},
        verdict="CERTIFIED_WITHIN_ENVELOPE",
        verifier_public_key=PUBLIC,
    )
    return unsigned if secret is None else unsigned.signed_with(secret)


KEEP = object()


def install(
    because: str = "the handler prints the command it would run and returns",
    cert: DescentCertificate | object | None = KEEP,
) -> EffectProfile:
    return EffectProfile(
        M.PERSISTENT,
        E.THIRD_PARTY,
        R.COMPENSATABLE,
        A.PRIVILEGED,
        subject=S.EXECUTABLE,
        descents=[Descent("dry_run", True, destination(), because, certificate() if cert is KEEP else cert)],  # type: ignore[arg-type]
    )


def policy(authority: Authority = A.READ, scopes: tuple[str, ...] = ("capabilities:write",)) -> DeclaredAuthorityPolicy:
    return DeclaredAuthorityPolicy("lab", {OPERATION: AuthorityRule(list(scopes), authority)})


def subject(
    *,
    operation: str = OPERATION,
    digest: str | None = DIGEST,
    judged_by: DeclaredAuthorityPolicy | None = None,
    facts: ContextFacts | None = None,
) -> CallSubject:
    return CallSubject(
        operation,
        digest,
        judged_by or policy(),
        facts or ContextFacts(principal="rod", verified=True, scopes=("capabilities:write",)),
    )


# --------------------------------------------------------------------------- descents
def test_the_declared_argument_lowers_the_ceiling_for_that_call() -> None:
    effective = install().for_call({"dry_run": True}, subject())
    assert effective == destination()


def test_without_the_argument_the_ceiling_stays_where_it_was() -> None:
    assert install().for_call({}, subject()).subject is S.EXECUTABLE
    assert install().for_call({"other": True}, subject()).subject is S.EXECUTABLE


@pytest.mark.parametrize("value", [False, "yes", 1, "true", None])
def test_another_value_does_not_trigger_the_descent(value: Any) -> None:
    assert install().for_call({"dry_run": value}, subject()).subject is S.EXECUTABLE


def test_a_descent_without_a_reason_does_not_lower() -> None:
    assert install(because="   ").for_call({"dry_run": True}, subject()).subject is S.EXECUTABLE


def test_a_descent_that_raises_anything_is_ignored() -> None:
    gentle = EffectProfile(
        M.NONE,
        E.NONE,
        R.NOT_APPLICABLE,
        A.READ,
        subject=S.NONE,
        descents=[
            Descent(
                "escalate",
                True,
                EffectProfile(M.PERSISTENT, E.THIRD_PARTY, R.IRREVERSIBLE, A.PRIVILEGED, subject=S.EXECUTABLE),
                "claims to lower while raising",
            )
        ],
    )
    assert gentle.for_call({"escalate": True}) == gentle


@pytest.mark.parametrize(
    "cert",
    [
        None,  # no certificate
        certificate(predicate={"dry_run": "yes"}),  # another predicate
        certificate(handler="sha256:something-else"),  # another handler: stale
        certificate(covers=["mutation", "subject"]),  # does not cover every lowered axis
        certificate(to=EffectProfile(M.EPHEMERAL, E.NONE, R.COMPENSATABLE, A.READ, subject=S.DATA)),  # elsewhere
        certificate(handler=None),  # names no handler to compare
        certificate(secret=None),  # unsigned
        certificate(secret=generate_signing_key()),  # signed by another key
        certificate(operation="other:operation"),  # issued for another operation
    ],
    ids=["none", "predicate", "stale", "coverage", "destination", "no-handler", "unsigned", "foreign-key", "op"],
)
def test_a_certificate_that_does_not_hold_lowers_nothing(cert: DescentCertificate | None) -> None:
    effective = install(cert=cert).for_call({"dry_run": True}, subject())
    assert effective.subject is S.EXECUTABLE and effective.mutation is M.PERSISTENT


def test_without_a_handler_digest_to_compare_nothing_descends() -> None:
    assert install().for_call({"dry_run": True}, subject(digest=None)).subject is S.EXECUTABLE


def test_without_a_call_subject_nothing_descends() -> None:
    assert install().for_call({"dry_run": True}) == install()


def test_a_legitimate_certificate_does_not_travel_to_another_operation() -> None:
    assert install().for_call({"dry_run": True}, subject(operation="other:operation")).subject is S.EXECUTABLE


def test_editing_one_field_of_a_signed_payload_buys_nothing() -> None:
    legit = certificate(covers=["mutation"])
    widened = DescentCertificate(
        legit.verifier,
        legit.operation,
        legit.predicate,
        ALL_AXES,
        legit.to,
        legit.handler_sha256,
        legit.envelope,
        legit.verdict,
        legit.signature,
        legit.verifier_public_key,
    )
    assert legit.signed_by_its_verifier() and not widened.signed_by_its_verifier()
    assert install(cert=widened).for_call({"dry_run": True}, subject()).subject is S.EXECUTABLE


@pytest.mark.parametrize(
    ("signature", "key"),
    [
        ("not valid base64 !!!", PUBLIC),
        (base64.b64encode(b"short").decode(), PUBLIC),
        (base64.b64encode(b"x" * 64).decode(), base64.b64encode(b"short key").decode()),
        (base64.b64encode(b"x" * 64).decode(), PUBLIC),  # well formed, wrong
        (None, PUBLIC),
    ],
)
def test_a_malformed_or_wrong_signature_is_a_no_never_an_error(signature: str | None, key: str) -> None:
    legit = certificate()
    broken = DescentCertificate(
        legit.verifier,
        legit.operation,
        legit.predicate,
        legit.covers,
        legit.to,
        legit.handler_sha256,
        legit.envelope,
        legit.verdict,
        signature,
        key,
    )
    assert broken.signed_by_its_verifier() is False


def test_a_nested_envelope_is_canonicalised_as_well() -> None:
    def with_envelope(envelope: dict[str, Any]) -> DescentCertificate:
        return DescentCertificate(
            "v",
            "probe:enable",
            {"dry_run": True},
            ["mutation"],
            destination(),
            DIGEST,
            envelope,
            "CERTIFIED_WITHIN_ENVELOPE",
        )

    one = with_envelope({"filesystem": {"scope": "app tree", "blind": "outside it"}, "network": "differential"})
    other = with_envelope({"network": "differential", "filesystem": {"blind": "outside it", "scope": "app tree"}})
    assert one.canonical_payload() == other.canonical_payload()
    assert one.canonical_payload().startswith('{"certificate_subject":{"handler_digest":"sha256:')


def test_the_certificate_signature_is_ed25519_over_the_canonical_payload() -> None:
    cert = certificate()
    assert cert.signature is not None
    assert _ed25519.verify(
        base64.b64decode(PUBLIC), cert.canonical_payload().encode(), base64.b64decode(cert.signature)
    )


def test_ed25519_matches_rfc_8032_test_vectors() -> None:
    secret = bytes.fromhex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
    public = bytes.fromhex("3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c")
    signature = bytes.fromhex(
        "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
        "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"
    )
    assert _ed25519.public_key(secret) == public
    assert _ed25519.sign(secret, b"\x72") == signature
    assert _ed25519.verify(public, b"\x72", signature)
    assert not _ed25519.verify(public, b"\x73", signature)
    assert _ed25519.public_key(secret + public) == public, "a libsodium 64-byte secret key works too"


# ---------------------------------------------------------------------- authority
def test_a_judged_authority_descends() -> None:
    effective = install().for_call({"dry_run": True}, subject())
    assert effective.authority is A.READ and effective.mutation is M.NONE


def only_authority(cert: DescentCertificate | None = None) -> EffectProfile:
    to = EffectProfile(M.PERSISTENT, E.THIRD_PARTY, R.COMPENSATABLE, A.READ, subject=S.EXECUTABLE)
    return EffectProfile(
        M.PERSISTENT,
        E.THIRD_PARTY,
        R.COMPENSATABLE,
        A.PRIVILEGED,
        subject=S.EXECUTABLE,
        descents=[Descent("dry_run", True, to, "the policy judges who may rehearse", cert)],
    )


def test_a_descent_lowering_only_authority_needs_no_certificate_but_a_judgment() -> None:
    assert only_authority().for_call({"dry_run": True}, subject()).authority is A.READ
    assert only_authority().for_call({"dry_run": True}, CallSubject(OPERATION, DIGEST)).authority is A.PRIVILEGED


def test_a_certificate_covering_authority_does_not_judge_it() -> None:
    assert install().for_call({"dry_run": True}, CallSubject(OPERATION, DIGEST)).authority is A.PRIVILEGED


@pytest.mark.parametrize(
    "facts",
    [
        ContextFacts(principal="rod", verified=False, scopes=("capabilities:write",)),
        ContextFacts(principal="rod", verified=True, scopes=("other:thing",)),
    ],
    ids=["unverified", "missing-scope"],
)
def test_facts_that_do_not_justify_leave_the_ceiling_up(facts: ContextFacts) -> None:
    assert install().for_call({"dry_run": True}, subject(facts=facts)).authority is A.PRIVILEGED


def test_an_operation_without_a_rule_gets_no_judgment() -> None:
    facts = ContextFacts(principal="rod", verified=True, scopes=("capabilities:write",))
    assert policy().judge(facts, CallSubject("other:operation", DIGEST)) is None


def test_a_judgment_above_the_destination_does_not_justify_it() -> None:
    assert install().for_call({"dry_run": True}, subject(judged_by=policy(A.WRITE_AS_USER))).authority is A.PRIVILEGED


def test_editing_a_rule_changes_the_policy_digest_reordering_does_not() -> None:
    assert policy().digest() != policy(scopes=("capabilities:write", "new:scope")).digest()
    one = DeclaredAuthorityPolicy("lab", {"a": AuthorityRule(["x", "y"], A.READ), "b": AuthorityRule([], A.NONE)})
    # levels spelled as strings, as a policy file says them (read at run time; the declared type is the level)
    two = DeclaredAuthorityPolicy(
        "lab",
        {"b": AuthorityRule([], "none"), "a": AuthorityRule(["y", "x"], "read")},  # type: ignore[arg-type]
    )
    assert one.digest() == two.digest()


def test_the_claim_carries_its_provenance() -> None:
    facts = ContextFacts(principal="rod", verified=True, scopes=("capabilities:write",))
    claim = policy().judge(facts, CallSubject(OPERATION, DIGEST))
    assert claim is not None
    assert (claim.authority, claim.policy_id, claim.policy_digest, claim.facts_fingerprint) == (
        A.READ,
        "lab",
        policy().digest(),
        facts.fingerprint(),
    )


def test_a_mixed_descent_needs_both_producers() -> None:
    assert install().for_call({"dry_run": True}, CallSubject(OPERATION, DIGEST)).authority is A.PRIVILEGED
    assert install().for_call({"dry_run": True}, subject()).subject is S.NONE


def test_facts_fingerprints_ignore_scope_order_and_escape_slashes() -> None:
    a = ContextFacts("rod/ops", True, "cli", ("b", "a"))
    assert a.fingerprint() == ContextFacts("rod/ops", True, "cli", ("a", "b")).fingerprint()
    assert a.fingerprint() != ContextFacts("rod/ops", False, "cli", ("a", "b")).fingerprint()
    import hashlib

    spelled = '{"channel":"cli","principal":"rod\\/ops","scopes":["a","b"],"verified":true}'
    assert a.fingerprint() == "sha256:" + hashlib.sha256(spelled.encode()).hexdigest()


# --------------------------------------------------------------------- receipts
def test_authority_reduction_is_attributed_to_the_policy() -> None:
    composition = only_authority().compose_for_call({"dry_run": True}, subject())
    assert composition.effective.authority is A.READ
    [reduction] = composition.reductions
    assert (reduction.axis, reduction.from_, reduction.to, reduction.producer) == (
        "authority",
        "privileged",
        "read",
        "policy",
    )
    assert reduction.provenance.startswith("lab@sha256:") and " over sha256:" in reduction.provenance


def test_an_observed_reduction_is_attributed_to_the_certificate_and_authority_never_is() -> None:
    composition = install().compose_for_call({"dry_run": True}, subject())
    by_axis = {r.axis: r for r in composition.reductions}
    assert set(by_axis) == set(ALL_AXES)
    assert by_axis["mutation"].producer == "observer"
    assert "verify-descent" in by_axis["mutation"].provenance
    assert by_axis["authority"].producer == "policy", "authority is the policy's, whatever a certificate covers"


def test_an_axis_without_a_producer_is_not_reduced() -> None:
    to = EffectProfile(M.EPHEMERAL, E.THIRD_PARTY, R.COMPENSATABLE, A.READ, subject=S.EXECUTABLE)
    cert = certificate(covers=["mutation"], to=to)
    ceiling = EffectProfile(
        M.PERSISTENT,
        E.THIRD_PARTY,
        R.COMPENSATABLE,
        A.PRIVILEGED,
        subject=S.EXECUTABLE,
        descents=[Descent("dry_run", True, to, "rehearsal", cert)],
    )
    composition = ceiling.compose_for_call({"dry_run": True}, subject())
    assert [r.axis for r in composition.reductions] == ["mutation", "authority"]


def test_for_call_is_the_effective_profile_of_the_composition() -> None:
    assert only_authority().compose_for_call({"dry_run": True}, subject()).effective == only_authority().for_call(
        {"dry_run": True}, subject()
    )


def test_without_a_descent_nothing_is_reduced() -> None:
    composition = only_authority().compose_for_call({}, subject())
    assert composition.reductions == () and composition.effective.authority is A.PRIVILEGED


def test_changing_the_policy_changes_the_receipt_without_any_stored_claim() -> None:
    assert len(only_authority().compose_for_call({"dry_run": True}, subject()).reductions) == 1
    refused = only_authority().compose_for_call({"dry_run": True}, subject(judged_by=DeclaredAuthorityPolicy("empty")))
    assert refused.reductions == () and refused.effective.authority is A.PRIVILEGED


def test_explain_names_a_missing_producer_rather_than_inventing_one() -> None:
    ceiling = only_authority()
    [reduction] = ceiling.descents[0].explain(ceiling, CallSubject(OPERATION, DIGEST))
    assert "no judgment" in reduction.provenance
    lowering = EffectProfile(
        M.PERSISTENT,
        E.THIRD_PARTY,
        R.COMPENSATABLE,
        A.PRIVILEGED,
        subject=S.EXECUTABLE,
        descents=[
            Descent(
                "dry_run",
                True,
                EffectProfile(M.EPHEMERAL, E.THIRD_PARTY, R.COMPENSATABLE, A.PRIVILEGED, subject=S.EXECUTABLE),
                "no certificate",
            )
        ],
    )
    [reduction] = lowering.descents[0].explain(lowering, CallSubject("x", DIGEST))
    assert reduction.axis == "mutation" and "no certificate" in reduction.provenance


# ------------------------------------------------------------- an operation's call
def rehearse(values: dict[str, Any]) -> str:
    return "the rehearsal prints and returns"


def really_install(values: dict[str, Any]) -> str:
    return "the rehearsal installs for real"


def watched_operation(handler: Any, watched: Any = None) -> Operation:
    cert = certificate(handler=Operation(OPERATION, "installs", watched or handler).handler_digest())
    effects = EffectProfile(
        M.PERSISTENT,
        E.THIRD_PARTY,
        R.COMPENSATABLE,
        A.PRIVILEGED,
        subject=S.EXECUTABLE,
        descents=[Descent("dry_run", True, destination(), "it prints and returns", cert)],
    )
    return Operation(OPERATION, "installs a capability", handler, effects=effects)


def judged(op: Operation, arguments: dict[str, Any]) -> EffectProfile:
    rule = DeclaredAuthorityPolicy("battery", {OPERATION: AuthorityRule([], A.READ)})
    return op.ceiling_for_call(arguments, rule, ContextFacts(principal="rod", verified=True))


def test_a_certificate_bound_to_this_handler_lowers_the_ceiling() -> None:
    assert judged(watched_operation(rehearse), {"dry_run": True}).subject is S.NONE


def test_the_same_certificate_does_not_travel_to_another_handler() -> None:
    assert judged(watched_operation(really_install, watched=rehearse), {"dry_run": True}).subject is S.EXECUTABLE


def test_the_ceiling_for_a_call_without_the_argument_stays() -> None:
    assert watched_operation(rehearse).ceiling_for_call({}).subject is S.EXECUTABLE


def test_a_handler_that_cannot_be_read_buys_no_descent() -> None:
    builtin = Operation(OPERATION, "installs", len, effects=watched_operation(rehearse).effects)
    assert builtin.handler_digest() is None
    assert judged(builtin, {"dry_run": True}).subject is S.EXECUTABLE


def test_a_certificate_without_a_handler_names_nothing_to_compare() -> None:
    assert certificate(handler=None).watched("sha256:whatever-the-caller-offers") is False


# ------------------------------------------------------------------ confinement
def confinement() -> TrialConfinement:
    return TrialConfinement(
        "trial-7f3a",
        "sha256:abc",
        {"fs": "ro-root+rw-copy", "net": "unshared", "pid": "unshared"},
        "the call runs in a disposable copy under bwrap",
    )


def configuration_ceiling() -> EffectProfile:
    return EffectProfile(M.PERSISTENT, E.SAME_PRINCIPAL, R.MANUAL_RECOVERY, A.WRITE_AS_USER, subject=S.CONFIGURATION)


def test_the_provenance_names_the_workspace_the_call_and_the_bounds() -> None:
    assert (
        confinement().provenance()
        == "trial:trial-7f3a args:sha256:abc bounds:{fs:ro-root+rw-copy,net:unshared,pid:unshared}"
    )


def test_a_confined_call_composes_mutation_as_ephemeral_and_nothing_else() -> None:
    composition = configuration_ceiling().compose_for_call({}, CallSubject("probe", confinement=confinement()))
    assert composition.effective.axes == (
        M.EPHEMERAL,
        E.SAME_PRINCIPAL,
        R.MANUAL_RECOVERY,
        A.WRITE_AS_USER,
        S.CONFIGURATION,
    )
    [reduction] = composition.reductions
    assert (reduction.axis, reduction.from_, reduction.to, reduction.producer) == (
        "mutation",
        "persistent",
        "ephemeral",
        "trial-workspace",
    )
    assert "trial:trial-7f3a" in reduction.provenance
    assert composition.confined_by_trial()


def test_without_confinement_the_composition_is_untouched() -> None:
    composition = configuration_ceiling().compose_for_call({}, CallSubject("probe"))
    assert composition.effective == configuration_ceiling() and composition.reductions == ()
    assert not composition.confined_by_trial()


def test_a_third_party_operation_stays_third_party_when_confined() -> None:
    composer = EffectProfile(M.PERSISTENT, E.THIRD_PARTY, R.MANUAL_RECOVERY, A.PRIVILEGED, subject=S.EXECUTABLE)
    effective = composer.for_call({}, CallSubject(OPERATION, confinement=confinement()))
    assert effective.mutation is M.EPHEMERAL
    assert effective.externality is E.THIRD_PARTY, "what crosses the network is not undone by discarding a folder"
    assert effective.authority is A.PRIVILEGED


def test_confinement_never_raises_mutation() -> None:
    ephemeral = EffectProfile(M.EPHEMERAL, E.NONE, R.COMPENSATABLE, A.READ, subject=S.DATA)
    for ceiling in (ephemeral, EffectProfile.read_only()):
        composition = ceiling.compose_for_call({}, CallSubject("tmp", confinement=confinement()))
        assert composition.effective == ceiling and composition.reductions == ()
        assert not composition.confined_by_trial()


def test_confinement_composes_on_top_of_a_declared_descent() -> None:
    composition = install().compose_for_call(
        {"dry_run": True},
        CallSubject(
            OPERATION,
            DIGEST,
            policy(),
            ContextFacts(principal="rod", verified=True, scopes=("capabilities:write",)),
            confinement(),
        ),
    )
    assert composition.effective == destination(), "the descent held; nothing was left for the trial to lower"
    confined = configuration_ceiling().compose_for_call(
        {"mode": "owned"}, CallSubject("probe", confinement=confinement())
    )
    assert confined.effective.mutation is M.EPHEMERAL and confined.effective.authority is A.WRITE_AS_USER


@pytest.mark.parametrize("blank", ["workspace_id", "arguments_digest", "because"])
def test_a_confinement_without_its_names_is_refused(blank: str) -> None:
    values: dict[str, Any] = {
        "workspace_id": "t",
        "arguments_digest": "sha256:abc",
        "bounds": {},
        "because": "x",
        blank: " ",
    }
    with pytest.raises(InvalidEffectProfile, match="a trial confinement names its workspace"):
        TrialConfinement(**values)


# ------------------------------------------------------------------ attestation
def attestation(level: Subject = S.CONFIGURATION) -> SubjectAttestation:
    return SubjectAttestation(level, "trial-workspace", "diff:sha256:abc")


def executable_ceiling() -> EffectProfile:
    return EffectProfile(M.PERSISTENT, E.NONE, R.MANUAL_RECOVERY, A.WRITE_AS_USER, subject=S.EXECUTABLE)


def test_an_attestation_names_its_producer_and_provenance_or_it_is_not_one() -> None:
    with pytest.raises(InvalidEffectProfile):
        SubjectAttestation(S.CONFIGURATION, "", "diff:sha256:abc")
    with pytest.raises(InvalidEffectProfile):
        SubjectAttestation(S.CONFIGURATION, "trial", " ")


def test_an_attested_lower_subject_composes_that_one_axis_with_provenance() -> None:
    composition = executable_ceiling().compose_for_call(
        {}, CallSubject("sandbox:promote", subject_attestation=attestation())
    )
    assert composition.effective.axes == (M.PERSISTENT, E.NONE, R.MANUAL_RECOVERY, A.WRITE_AS_USER, S.CONFIGURATION)
    [reduction] = composition.reductions
    assert (reduction.axis, reduction.from_, reduction.to, reduction.producer, reduction.provenance) == (
        "subject",
        "executable",
        "configuration",
        "trial-workspace",
        "diff:sha256:abc",
    )


@pytest.mark.parametrize("level", [S.EXECUTABLE, S.UNKNOWN])
def test_an_attestation_never_raises_the_subject_nor_leaves_a_receipt_at_the_ceiling(level: Subject) -> None:
    composition = executable_ceiling().compose_for_call({}, CallSubject("op", subject_attestation=attestation(level)))
    assert composition.effective.subject is S.EXECUTABLE and composition.reductions == ()


def test_a_read_has_no_subject_to_lower() -> None:
    composition = EffectProfile.read_only().compose_for_call(
        {}, CallSubject("op", subject_attestation=attestation(S.DATA))
    )
    assert composition.effective.subject is S.NONE and composition.reductions == ()
    unknown_read = EffectProfile(M.NONE, E.NONE, R.NOT_APPLICABLE, A.READ, subject=S.UNKNOWN)
    composition = unknown_read.compose_for_call({}, CallSubject("op", subject_attestation=attestation(S.DATA)))
    assert composition.effective == unknown_read, "a read cannot be given a subject by an attestation"


def test_it_composes_on_top_of_confinement_and_both_receipts_survive() -> None:
    call = CallSubject("op", confinement=confinement(), subject_attestation=attestation())
    composition = executable_ceiling().compose_for_call({}, call)
    assert composition.effective.mutation is M.EPHEMERAL and composition.effective.subject is S.CONFIGURATION
    assert [r.axis for r in composition.reductions] == ["mutation", "subject"]
    assert composition.confined_by_trial()


# ------------------------------------------------------------- verified principal
def test_an_admitted_principal_yields_verified_facts() -> None:
    facts = VerifiedPrincipal.admit(
        "key:ABCD1234", "cli-sign", ["probes:run"], "gpg-detached", "local-keyring"
    ).to_facts()
    assert facts.verified and facts.principal == "key:ABCD1234" and facts.scopes == ("probes:run",)


def test_a_terminal_principal_is_unverified() -> None:
    principal = VerifiedPrincipal.from_terminal("rod", "laptop")
    assert principal.principal == "cli:rod@laptop" and principal.channel == "cli"
    assert not principal.to_facts().verified
    assert VerifiedPrincipal.from_terminal(None, "").principal == "cli:desconocido@desconocido"


def test_data_can_never_mint_a_verified_grade() -> None:
    forged = VerifiedPrincipal.from_dict(
        {
            "principal": "key:X",
            "verified": True,
            "channel": "cli-sign",
            "scopes": ["probes:run", 3],
            "method": "gpg-detached",
            "issuer": "kr",
        }
    )
    assert forged is not None and not forged.to_facts().verified
    assert forged.scopes == ("probes:run",)
    assert not VerifiedPrincipal("key:X").verified
    with pytest.raises(AttributeError):
        forged.verified = True


def test_the_grade_does_not_survive_serialisation_copying_or_pickling() -> None:
    admitted = VerifiedPrincipal.admit("key:X", "lab-idp", ["probes:run"], "ed25519-detached", "lab-idp")
    assert admitted.verified and admitted.method == "ed25519-detached"
    restored = VerifiedPrincipal.from_dict(admitted.to_dict())
    assert restored is not None and not restored.verified
    for copied in (copy.copy(admitted), copy.deepcopy(admitted), pickle.loads(pickle.dumps(admitted))):
        assert copied.principal == "key:X" and copied.verified is False


def test_a_payload_without_a_principal_is_refused() -> None:
    assert VerifiedPrincipal.from_dict({"verified": True, "method": "x", "issuer": "y"}) is None
    assert VerifiedPrincipal.from_dict({"principal": ""}) is None
