"""The ports the core depends on. Adapters live in store/, keyring/ and mail/."""
from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol, Sequence

from credgate.store.ops import Key, WriteOp

Item = dict[str, Any]


class ItemStore(Protocol):
    """A single-table item store: every item has string `pk` and `sk`.

    Attribute values are str, int, bool, None, lists and dicts of those (no floats).
    An item may carry `expiresAt` (epoch seconds): once past, readers treat it as absent.
    Reads are strongly consistent.
    """

    def get(self, key: Key) -> Item | None: ...

    def get_many(self, keys: Sequence[Key]) -> list[Item]:
        """The live items among `keys`, each once, in the order asked; missing ones are left out."""
        ...

    def query(self, pk: str, prefix: str = "") -> list[Item]:
        """Items of one partition whose sort key starts with `prefix`, in sort-key order."""
        ...

    def write(self, *ops: WriteOp) -> None:
        """Apply all operations atomically, or none; a failed condition raises ConditionFailed(index).

        Each item may appear in at most one operation (ValueError otherwise), as DynamoDB requires.
        """
        ...

    def increment(self, key: Key, field: str, amount: int, *, expires_at: int | None = None) -> int:
        """Atomically add `amount` to an integer field and return the new value.

        A missing or expired item starts afresh at 0, with `expires_at` as its expiry; a live one keeps its own.
        """
        ...


class KeyRing(Protocol):
    """Envelope encryption bound to an encryption context (who owns the value)."""

    def encrypt(self, plaintext: bytes, context: dict[str, str]) -> str: ...

    def decrypt(self, ciphertext: str, context: dict[str, str]) -> bytes: ...


class Mailer(Protocol):
    def send(self, to: str, subject: str, text: str, links: list[str]) -> None: ...


class Clock(Protocol):
    def now(self) -> datetime: ...
