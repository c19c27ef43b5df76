"""The signer signs with slack_sdk's ``SignatureVerifier`` and checks with it, as bolt does: a fresh signature
holds, a stale one or one by another secret does not."""

from __future__ import annotations

from slack_sdk.signature import SignatureVerifier

from milpa_chat.testing.slack import SlackPayloads, SlackRequestSigner


def test_signatures_are_the_ones_slack_sdk_makes_and_checks() -> None:
    signer = SlackRequestSigner("secret")
    signed = signer.sign(SlackPayloads().command("/deploy", "prod"))
    assert signed.signature == SignatureVerifier("secret").generate_signature(
        timestamp=str(signed.timestamp), body=signed.body
    )
    assert signer.is_valid(signed.body, signed.headers)
    assert SignatureVerifier("secret").is_valid_request(signed.body, signed.headers)  # what bolt runs
    stale = signer.sign(signed.request, stale=True)
    forged = signer.sign(signed.request, bad_signature=True)
    assert not signer.is_valid(stale.body, stale.headers) and not signer.is_valid(forged.body, forged.headers)
    assert not signer.is_valid(signed.body + "&x=1", signed.headers)  # the body changed after signing
