"""Ed25519 (RFC 8032) for descent certificates and audit-trail checkpoints, through the ``cryptography`` package.

Three functions over raw bytes: a 32-byte seed, a 32-byte public key, a 64-byte signature.
``cryptography`` (a dependency) is imported on first use, so importing the kit stays cheap.
"""

from __future__ import annotations

__all__ = ["public_key", "sign", "verify"]


def _seed(secret: bytes) -> bytes:
    """The 32-byte seed; a libsodium 64-byte secret key (seed followed by the public key) works too."""
    raw = bytes(secret)
    return raw[:32] if len(raw) == 64 else raw


def public_key(secret: bytes) -> bytes:
    """The public key of a 32-byte seed."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    key = Ed25519PrivateKey.from_private_bytes(_seed(secret)).public_key()
    return key.public_bytes(Encoding.Raw, PublicFormat.Raw)


def sign(secret: bytes, message: bytes) -> bytes:
    """The 64-byte signature of ``message`` with the 32-byte ``secret``."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(_seed(secret)).sign(bytes(message))


def verify(public: bytes, message: bytes, signature: bytes) -> bool:
    """Whether ``signature`` is a valid signature of ``message`` by ``public``; never raises for bad input."""
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    try:
        Ed25519PublicKey.from_public_bytes(bytes(public)).verify(bytes(signature), bytes(message))
    except (InvalidSignature, ValueError, TypeError):
        return False
    return True
