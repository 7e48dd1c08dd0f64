"""Credential formats: generation, classification by prefix, hashing. Pure functions."""
from __future__ import annotations

import enum
import hashlib
import os
import secrets
import time

_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"


class KeyKind(str, enum.Enum):
    PROJECT = "project"
    ORGANIZATION = "organization"
    PARTNER = "partner"
    AGENT = "agent"


# Longest prefix first: "oc_org_" and "oc_partner_" also start with "oc_".
_PREFIXES: tuple[tuple[str, KeyKind], ...] = (
    ("oc_partner_", KeyKind.PARTNER),
    ("oc_org_", KeyKind.ORGANIZATION),
    ("aoc_", KeyKind.AGENT),
    ("oc_", KeyKind.PROJECT),
)
_PREFIX_OF = {kind: prefix for prefix, kind in _PREFIXES}
_BODY_BYTES = 32


def new_key(kind: KeyKind) -> str:
    return _PREFIX_OF[kind] + secrets.token_hex(_BODY_BYTES)


def classify(key: str) -> KeyKind | None:
    """The kind of a well-formed key, or None for anything else."""
    for prefix, kind in _PREFIXES:
        if key.startswith(prefix):
            body = key[len(prefix) :]
            if len(body) == 2 * _BODY_BYTES and all(c in "0123456789abcdef" for c in body):
                return kind
            return None
    return None


def key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def new_id(prefix: str) -> str:
    """A sortable id: 48-bit millisecond time then 80 random bits, Crockford base32."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return f"{prefix}_{''.join(reversed(chars))}"


def new_token() -> str:
    """An opaque single-use token (email links, sessions, claims)."""
    return secrets.token_urlsafe(32)
