"""Local key ring: a 256-bit master key in a 0600 file wraps a fresh data key per value."""
from __future__ import annotations

import os
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from credgate.errors import IntegrityError
from credgate.keyring.envelope import NONCE_BYTES, Envelope, associated_data, open_sealed, seal

_KEY_BYTES = 32
_WRAP_LABEL = b"credgate-data-key|"


def load_or_create_master_key(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        key = path.read_bytes()
        if len(key) != _KEY_BYTES:
            raise RuntimeError(f"{path} is not a credgate master key ({len(key)} bytes, expected {_KEY_BYTES})")
        return key
    key = os.urandom(_KEY_BYTES)
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    return key


class LocalKeyRing:
    def __init__(self, master_key: bytes) -> None:
        self._master = AESGCM(master_key)

    @classmethod
    def from_file(cls, path: Path) -> "LocalKeyRing":
        return cls(load_or_create_master_key(path))

    def encrypt(self, plaintext: bytes, context: dict[str, str]) -> str:
        data_key = AESGCM.generate_key(bit_length=256)
        wrap_nonce = os.urandom(NONCE_BYTES)
        wrapped = wrap_nonce + self._master.encrypt(wrap_nonce, data_key, _WRAP_LABEL + associated_data(context))
        return seal(data_key, wrapped, plaintext, context)

    def decrypt(self, ciphertext: str, context: dict[str, str]) -> bytes:
        envelope = Envelope.decode(ciphertext)
        wrap_nonce, wrapped = envelope.wrapped_key[:NONCE_BYTES], envelope.wrapped_key[NONCE_BYTES:]
        try:
            data_key = self._master.decrypt(wrap_nonce, wrapped, _WRAP_LABEL + associated_data(context))
        except InvalidTag as error:
            raise IntegrityError("data key failed authentication") from error
        return open_sealed(data_key, envelope, context)
