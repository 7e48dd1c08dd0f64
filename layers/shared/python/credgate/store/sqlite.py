"""SQLite adapter of ItemStore: the same single-table item model as DynamoDB, in one WAL file."""
from __future__ import annotations

import functools
import itertools
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence, TypeVar

from credgate.errors import ConditionFailed, DependencyUnavailable
from credgate.store.ops import (
    Absent,
    Check,
    Condition,
    Delete,
    Equals,
    Exists,
    Key,
    Put,
    Update,
    WriteOp,
    require_distinct_items,
)

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    pk TEXT NOT NULL,
    sk TEXT NOT NULL,
    data TEXT NOT NULL,
    expires_at INTEGER,
    PRIMARY KEY (pk, sk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS items_by_expiry ON items (expires_at) WHERE expires_at IS NOT NULL;
"""
# Expired items are invisible already; removing them keeps the file from growing (rate-limit windows,
# sessions, sign-in links), as DynamoDB's TTL does for the table.
PURGE_EVERY_WRITES = 1000


def _same_value(stored: Any, expected: Any) -> bool:
    """Equality as DynamoDB sees it: typed (True is not 1) and key order of maps ignored."""
    return json.dumps(stored, sort_keys=True) == json.dumps(expected, sort_keys=True)


def _unavailable_on_database_error(method: Callable[..., T]) -> Callable[..., T]:
    """A locked, full or unreadable database is an outage the caller may retry, as on DynamoDB."""

    @functools.wraps(method)
    def guarded(*args: Any, **kwargs: Any) -> T:
        try:
            return method(*args, **kwargs)
        except sqlite3.OperationalError as error:
            raise DependencyUnavailable() from error

    return guarded


class SqliteItemStore:
    def __init__(self, path: str | Path, *, now: Callable[[], float] = time.time) -> None:
        self._path = str(path)
        self._now = now
        self._local = threading.local()
        self._writes = itertools.count(1)
        self._connection().executescript(_SCHEMA)

    def _written(self) -> None:
        if next(self._writes) % PURGE_EVERY_WRITES == 0:
            self.purge_expired()

    @_unavailable_on_database_error
    def purge_expired(self) -> int:
        """Delete items whose expiresAt has passed; returns how many."""
        cursor = self._connection().execute(
            "DELETE FROM items WHERE expires_at IS NOT NULL AND expires_at < ?", (int(self._now()),)
        )
        return cursor.rowcount

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self._path, timeout=30, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            self._local.conn = conn
        return conn

    def _live(self, row: tuple[str, int | None] | None) -> dict[str, Any] | None:
        if row is None:
            return None
        data, expires_at = row
        if expires_at is not None and expires_at < self._now():
            return None
        return json.loads(data)

    @_unavailable_on_database_error
    def get(self, key: Key) -> dict[str, Any] | None:
        row = self._connection().execute(
            "SELECT data, expires_at FROM items WHERE pk = ? AND sk = ?", (key.pk, key.sk)
        ).fetchone()
        return self._live(row)

    @_unavailable_on_database_error
    def get_many(self, keys: Sequence[Key]) -> list[dict[str, Any]]:
        found = (self.get(key) for key in dict.fromkeys(keys))
        return [item for item in found if item is not None]

    @_unavailable_on_database_error
    def query(self, pk: str, prefix: str = "") -> list[dict[str, Any]]:
        # A range on sk instead of LIKE keeps '%' and '_' in ids literal.
        rows = self._connection().execute(
            "SELECT data, expires_at FROM items WHERE pk = ? AND sk >= ? AND sk < ? ORDER BY sk",
            (pk, prefix, prefix + "\U0010ffff"),
        ).fetchall()
        return [item for item in map(self._live, rows) if item is not None]

    @_unavailable_on_database_error
    def write(self, *ops: WriteOp) -> None:
        require_distinct_items(ops)
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            for index, op in enumerate(ops):
                self._apply(conn, index, op)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        self._written()

    @_unavailable_on_database_error
    def increment(self, key: Key, field: str, amount: int, *, expires_at: int | None = None) -> int:
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            item = self._current(conn, key)
            if item is None:
                item = {"pk": key.pk, "sk": key.sk}
                if expires_at is not None:
                    item["expiresAt"] = expires_at
            item[field] = int(item.get(field, 0)) + amount
            self._store(conn, item)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        self._written()
        return item[field]

    def _current(self, conn: sqlite3.Connection, key: Key) -> dict[str, Any] | None:
        row = conn.execute("SELECT data, expires_at FROM items WHERE pk = ? AND sk = ?", (key.pk, key.sk)).fetchone()
        return self._live(row)

    def _check(self, current: dict[str, Any] | None, condition: Condition, index: int) -> None:
        if condition is None:
            return
        if isinstance(condition, Absent):
            ok = current is None
        elif isinstance(condition, Exists):
            ok = current is not None
        elif isinstance(condition, Equals):
            ok = (
                current is not None
                and condition.name in current
                and _same_value(current[condition.name], condition.value)
            )
        else:  # pragma: no cover - the op types are closed
            raise TypeError(f"unknown condition {condition!r}")
        if not ok:
            raise ConditionFailed(index)

    def _apply(self, conn: sqlite3.Connection, index: int, op: WriteOp) -> None:
        if isinstance(op, Put):
            self._check(self._current(conn, op.key), op.condition, index)
            self._store(conn, op.item)
        elif isinstance(op, Update):
            current = self._current(conn, op.key)
            self._check(current, op.condition or Exists(), index)
            if current is None:
                raise ConditionFailed(index)
            current.update(op.set)
            for name in op.remove:
                current.pop(name, None)
            self._store(conn, current)
        elif isinstance(op, Delete):
            self._check(self._current(conn, op.key), op.condition, index)
            conn.execute("DELETE FROM items WHERE pk = ? AND sk = ?", (op.key.pk, op.key.sk))
        elif isinstance(op, Check):
            self._check(self._current(conn, op.key), op.condition, index)
        else:  # pragma: no cover
            raise TypeError(f"unknown operation {op!r}")

    @staticmethod
    def _store(conn: sqlite3.Connection, item: dict[str, Any]) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO items (pk, sk, data, expires_at) VALUES (?, ?, ?, ?)",
            (item["pk"], item["sk"], json.dumps(item, separators=(",", ":")), item.get("expiresAt")),
        )
