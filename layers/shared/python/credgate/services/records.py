"""Shared record helpers: fetching tenant-scoped items and turning stored items into API models."""
from __future__ import annotations

from typing import Any

from credgate.errors import NotFound
from credgate.ports import ItemStore
from credgate.store.ops import Key

Item = dict[str, Any]


def require(store: ItemStore, key: Key, message: str) -> Item:
    item = store.get(key)
    if item is None:
        raise NotFound(message)
    return item


def key_item(key: Key, **attributes: Any) -> Item:
    return {"pk": key.pk, "sk": key.sk, **attributes}
