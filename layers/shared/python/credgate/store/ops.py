"""Write operations and conditions understood by every ItemStore adapter."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union


@dataclass(frozen=True)
class Key:
    pk: str
    sk: str


@dataclass(frozen=True)
class Absent:
    """The item must not exist (or must have expired)."""


@dataclass(frozen=True)
class Exists:
    """The item must exist (and not have expired)."""


@dataclass(frozen=True)
class Equals:
    """The item must exist and `name` must equal `value`."""

    name: str
    value: Any


Condition = Union[Absent, Exists, Equals, None]


@dataclass(frozen=True)
class Put:
    item: dict[str, Any]
    condition: Condition = None

    @property
    def key(self) -> Key:
        return Key(self.item["pk"], self.item["sk"])


@dataclass(frozen=True)
class Update:
    """Set (and remove) attributes of an existing item; the item must exist."""

    key: Key
    set: dict[str, Any] = field(default_factory=dict)
    remove: tuple[str, ...] = ()
    condition: Condition = None


@dataclass(frozen=True)
class Delete:
    key: Key
    condition: Condition = None


@dataclass(frozen=True)
class Check:
    key: Key
    condition: Condition


WriteOp = Union[Put, Update, Delete, Check]


def require_distinct_items(ops: tuple[WriteOp, ...]) -> None:
    """DynamoDB refuses a transaction that touches one item twice, so every adapter refuses it up front."""
    keys = [op.key for op in ops]
    if len(set(keys)) != len(keys):
        raise ValueError("a write may touch each item only once")
