"""Local key ring: a 256-bit master key in a 0600 file wraps a fresh data key per value."""
from __future__ import annotations

import os
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from credgate.errors import IntegrityError
from credgate.keyring.envelope import NONCE_BYTES, Envelope, associated_data, open_sealed, seal

_KEY_BYTES = 32
_TAG_BYTES = 16
_WRAPPED_KEY_BYTES = NONCE_BYTES + _KEY_BYTES + _TAG_BYTES
_WRAP_LABEL = b"credgate-data-key|"


def load_or_create_master_key(path: str | Path) -> bytes:
    path = Path(path)
    if not path.exists():
        _create_master_key(path)
    key = path.read_bytes()
    if len(key) != _KEY_BYTES:
        raise RuntimeError(f"{path} is not a credgate master key ({len(key)} bytes, expected {_KEY_BYTES})")
    return key


def _create_master_key(path: Path) -> None:
    """Write the whole key under a draft name, then link it in: no crash leaves a short key, racing starts share one."""
    draft = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(os.urandom(_KEY_BYTES))
            handle.flush()
            os.fsync(handle.fileno())
        os.link(draft, path)
    except FileExistsError:
        pass  # another process created it first; use theirs
    finally:
        draft.unlink(missing_ok=True)


class LocalKeyRing:
    def __init__(self, master_key: bytes) -> None:
        self._master = AESGCM(master_key)

    @classmethod
    def from_file(cls, path: str | Path) -> "LocalKeyRing":
        return cls(load_or_create_master_key(path))

    def encrypt(self, plaintext: bytes, context: dict[str, str]) -> str:
        data_key = AESGCM.generate_key(bit_length=256)
        wrap_nonce = os.urandom(NONCE_BYTES)
        wrapped = wrap_nonce + self._master.encrypt(wrap_nonce, data_key, _WRAP_LABEL + associated_data(context))
        return seal(data_key, wrapped, plaintext, context)

    def decrypt(self, ciphertext: str, context: dict[str, str]) -> bytes:
        envelope = Envelope.decode(ciphertext)
        if len(envelope.wrapped_key) != _WRAPPED_KEY_BYTES:
            raise IntegrityError("malformed data key")
        wrap_nonce, wrapped = envelope.wrapped_key[:NONCE_BYTES], envelope.wrapped_key[NONCE_BYTES:]
        try:
            data_key = self._master.decrypt(wrap_nonce, wrapped, _WRAP_LABEL + associated_data(context))
        except InvalidTag as error:
            raise IntegrityError("data key failed authentication") from error
        return open_sealed(data_key, envelope, context)
