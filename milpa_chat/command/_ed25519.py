"""Ed25519 (RFC 8032) for descent certificates: the runtime's helper (audit checkpoints use it too)."""

from __future__ import annotations

from milpa_chat.runtime._ed25519 import public_key, sign, verify

__all__ = ["public_key", "sign", "verify"]
