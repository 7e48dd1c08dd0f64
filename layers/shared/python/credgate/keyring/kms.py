"""KMS key ring: GenerateDataKey per value, the data key wrapped by KMS under the encryption context."""
from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from credgate.errors import DependencyUnavailable, IntegrityError
from credgate.keyring.envelope import Envelope, open_sealed, seal

# KMS refuses these when the ciphertext or its context is not the one it issued.
_INTEGRITY_CODES = {"InvalidCiphertextException", "IncorrectKeyException"}


class KmsKeyRing:
    def __init__(self, client: Any, key_id: str) -> None:
        self._client = client
        self._key_id = key_id

    def _call(self, method: str, **params: Any) -> dict[str, Any]:
        try:
            return getattr(self._client, method)(**params)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in _INTEGRITY_CODES:
                raise IntegrityError("KMS refused the data key") from None
            raise DependencyUnavailable() from error
        except BotoCoreError as error:
            raise DependencyUnavailable() from error

    def encrypt(self, plaintext: bytes, context: dict[str, str]) -> str:
        response = self._call("generate_data_key", KeyId=self._key_id, KeySpec="AES_256", EncryptionContext=context)
        return seal(response["Plaintext"], response["CiphertextBlob"], plaintext, context)

    def decrypt(self, ciphertext: str, context: dict[str, str]) -> bytes:
        envelope = Envelope.decode(ciphertext)
        response = self._call(
            "decrypt", CiphertextBlob=envelope.wrapped_key, EncryptionContext=context, KeyId=self._key_id
        )
        return open_sealed(response["Plaintext"], envelope, context)
