"""The versioned envelope format shared by every key ring.

    cgv1:<base64url( 0x01 | len(wrapped key) u16 | wrapped key | nonce(12) | AES-256-GCM ciphertext+tag )>

The encryption context is the GCM associated data, so a ciphertext moved to
another owner fails to decrypt even where the key wrapper ignores the context.
"""
from __future__ import annotations

import base64
import json
import os
import struct
from dataclasses import dataclass

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from credgate.errors import IntegrityError

PREFIX = "cgv1:"
VERSION = 1
NONCE_BYTES = 12


def associated_data(context: dict[str, str]) -> bytes:
    return json.dumps(context, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Envelope:
    wrapped_key: bytes
    nonce: bytes
    ciphertext: bytes

    def encode(self) -> str:
        body = struct.pack(">BH", VERSION, len(self.wrapped_key)) + self.wrapped_key + self.nonce + self.ciphertext
        return PREFIX + base64.urlsafe_b64encode(body).decode().rstrip("=")

    @classmethod
    def decode(cls, text: str) -> "Envelope":
        if not text.startswith(PREFIX):
            raise IntegrityError("unknown ciphertext format")
        encoded = text[len(PREFIX) :]
        try:
            body = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
            version, key_length = struct.unpack_from(">BH", body)
        except (ValueError, struct.error) as error:
            raise IntegrityError("malformed ciphertext") from error
        if version != VERSION:
            raise IntegrityError(f"unsupported ciphertext version {version}")
        if key_length == 0:
            raise IntegrityError("missing data key")
        offset = 3 + key_length
        if len(body) < offset + NONCE_BYTES + 16:
            raise IntegrityError("truncated ciphertext")
        return cls(body[3:offset], body[offset : offset + NONCE_BYTES], body[offset + NONCE_BYTES :])


def seal(data_key: bytes, wrapped_key: bytes, plaintext: bytes, context: dict[str, str]) -> str:
    nonce = os.urandom(NONCE_BYTES)
    ciphertext = AESGCM(data_key).encrypt(nonce, plaintext, associated_data(context))
    return Envelope(wrapped_key, nonce, ciphertext).encode()


def open_sealed(data_key: bytes, envelope: Envelope, context: dict[str, str]) -> bytes:
    try:
        return AESGCM(data_key).decrypt(envelope.nonce, envelope.ciphertext, associated_data(context))
    except InvalidTag as error:
        raise IntegrityError("ciphertext failed authentication") from error
