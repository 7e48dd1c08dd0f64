"""DynamoDB adapter of ItemStore: one table keyed by (pk, sk), TTL on `expiresAt`."""
from __future__ import annotations

import math
import time
from decimal import Decimal
from typing import Any, Callable, Sequence

from boto3.dynamodb.types import TypeDeserializer, TypeSerializer
from botocore.exceptions import BotoCoreError, ClientError

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

_serializer = TypeSerializer()
_deserializer = TypeDeserializer()
_BATCH_GET_LIMIT = 100
_INCREMENT_ATTEMPTS = 5


def _plain(value: Any) -> Any:
    """DynamoDB numbers come back as Decimal; the item model only holds integers."""
    if isinstance(value, Decimal):
        return int(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _to_item(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: _plain(_deserializer.deserialize(v)) for k, v in raw.items()}


def _to_raw(item: dict[str, Any]) -> dict[str, Any]:
    return {k: _serializer.serialize(v) for k, v in item.items()}


class _Expression:
    """Collects placeholder names and values while an expression is built."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, Any] = {}

    def name(self, attribute: str) -> str:
        placeholder = f"#n{len(self.names)}"
        self.names[placeholder] = attribute
        return placeholder

    def value(self, value: Any) -> str:
        placeholder = f":v{len(self.values)}"
        self.values[placeholder] = _serializer.serialize(value)
        return placeholder

    def params(self, **expressions: str | None) -> dict[str, Any]:
        params: dict[str, Any] = {k: v for k, v in expressions.items() if v}
        if self.names:
            params["ExpressionAttributeNames"] = self.names
        if self.values:
            params["ExpressionAttributeValues"] = self.values
        return params


class DynamoItemStore:
    def __init__(self, client: Any, table_name: str, *, now: Callable[[], float] = time.time) -> None:
        self._client = client
        self._table = table_name
        self._now = now

    def _alive(self, item: dict[str, Any]) -> bool:
        expires_at = item.get("expiresAt")
        return not isinstance(expires_at, int) or expires_at >= self._now()

    def _call(self, method: str, **params: Any) -> dict[str, Any]:
        try:
            return getattr(self._client, method)(**params)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code == "ConditionalCheckFailedException":
                raise ConditionFailed(0) from None
            if code == "TransactionCanceledException":
                reasons = error.response.get("CancellationReasons", [])
                for index, reason in enumerate(reasons):
                    if reason.get("Code") == "ConditionalCheckFailed":
                        raise ConditionFailed(index) from None
            raise DependencyUnavailable() from error
        except BotoCoreError as error:
            raise DependencyUnavailable() from error

    def get(self, key: Key) -> dict[str, Any] | None:
        response = self._call(
            "get_item", TableName=self._table, Key=_to_raw({"pk": key.pk, "sk": key.sk}), ConsistentRead=True
        )
        raw = response.get("Item")
        if raw is None:
            return None
        item = _to_item(raw)
        return item if self._alive(item) else None

    def get_many(self, keys: Sequence[Key]) -> list[dict[str, Any]]:
        unique = list(dict.fromkeys(keys))
        found: dict[Key, dict[str, Any]] = {}
        for start in range(0, len(unique), _BATCH_GET_LIMIT):
            pending: dict[str, Any] = {
                self._table: {
                    "Keys": [_to_raw({"pk": k.pk, "sk": k.sk}) for k in unique[start : start + _BATCH_GET_LIMIT]],
                    "ConsistentRead": True,
                }
            }
            while pending:
                response = self._call("batch_get_item", RequestItems=pending)
                for raw in response.get("Responses", {}).get(self._table, []):
                    item = _to_item(raw)
                    found[Key(item["pk"], item["sk"])] = item
                pending = response.get("UnprocessedKeys") or {}
        # BatchGetItem answers in any order; callers get the order they asked in, as from SQLite.
        return [found[key] for key in unique if key in found and self._alive(found[key])]

    def query(self, pk: str, prefix: str = "") -> list[dict[str, Any]]:
        expression = _Expression()
        condition = f"{expression.name('pk')} = {expression.value(pk)}"
        if prefix:
            condition += f" AND begins_with({expression.name('sk')}, {expression.value(prefix)})"
        params = {"TableName": self._table, "ConsistentRead": True, **expression.params(KeyConditionExpression=condition)}
        items: list[dict[str, Any]] = []
        while True:
            response = self._call("query", **params)
            items.extend(_to_item(raw) for raw in response.get("Items", []))
            last = response.get("LastEvaluatedKey")
            if not last:
                break
            params["ExclusiveStartKey"] = last
        return [item for item in items if self._alive(item)]

    def _expired(self, expression: _Expression) -> str:
        expires = expression.name("expiresAt")
        # expiresAt is an integer, so `< ceil(now)` is exactly the readers' `< now`.
        now = expression.value(math.ceil(self._now()))
        return f"(attribute_type({expires}, {expression.value('N')}) AND {expires} < {now})"

    def _condition(self, expression: _Expression, condition: Condition) -> str | None:
        if condition is None:
            return None
        pk = expression.name("pk")
        if isinstance(condition, Absent):
            return f"(attribute_not_exists({pk}) OR {self._expired(expression)})"
        alive = f"attribute_exists({pk}) AND NOT {self._expired(expression)}"
        if isinstance(condition, Exists):
            return f"({alive})"
        if isinstance(condition, Equals):
            name = expression.name(condition.name)
            type_code = next(iter(_serializer.serialize(condition.value)))
            # The explicit type keeps True from equalling 1 and a missing attribute from equalling None under moto too.
            match = f"attribute_type({name}, {expression.value(type_code)})"
            if condition.value is not None:
                match += f" AND {name} = {expression.value(condition.value)}"
            return f"({alive} AND {match})"
        raise TypeError(f"unknown condition {condition!r}")

    def _operation(self, op: WriteOp) -> tuple[str, dict[str, Any]]:
        """The transaction item kind and its parameters for one operation."""
        expression = _Expression()
        if isinstance(op, Put):
            params = {"Item": _to_raw(op.item), **expression.params(ConditionExpression=self._condition(expression, op.condition))}
            return "Put", {"TableName": self._table, **params}
        key = _to_raw({"pk": op.key.pk, "sk": op.key.sk})
        if isinstance(op, Update):
            condition = self._condition(expression, Exists())
            if op.condition is not None:
                condition = f"{condition} AND {self._condition(expression, op.condition)}"
            sets = [f"{expression.name(k)} = {expression.value(v)}" for k, v in op.set.items()]
            removes = [expression.name(k) for k in op.remove]
            update = " ".join(
                part
                for part in (
                    f"SET {', '.join(sets)}" if sets else "",
                    f"REMOVE {', '.join(removes)}" if removes else "",
                )
                if part
            )
            if not update:
                return "ConditionCheck", {"TableName": self._table, "Key": key, **expression.params(ConditionExpression=condition)}
            return "Update", {
                "TableName": self._table,
                "Key": key,
                **expression.params(UpdateExpression=update, ConditionExpression=condition),
            }
        if isinstance(op, Delete):
            return "Delete", {"TableName": self._table, "Key": key, **expression.params(ConditionExpression=self._condition(expression, op.condition))}
        if isinstance(op, Check):
            return "ConditionCheck", {"TableName": self._table, "Key": key, **expression.params(ConditionExpression=self._condition(expression, op.condition))}
        raise TypeError(f"unknown operation {op!r}")

    def write(self, *ops: WriteOp) -> None:
        if not ops:
            return
        require_distinct_items(ops)
        operations = [self._operation(op) for op in ops]
        if len(operations) > 1:
            self._call("transact_write_items", TransactItems=[{kind: params} for kind, params in operations])
            return
        kind, params = operations[0]
        if kind == "ConditionCheck":
            # A lone check has no single-item API; run it as a one-item transaction.
            self._call("transact_write_items", TransactItems=[{kind: params}])
            return
        method = {"Put": "put_item", "Update": "update_item", "Delete": "delete_item"}[kind]
        self._call(method, **params)

    def increment(self, key: Key, field: str, amount: int, *, expires_at: int | None = None) -> int:
        # An expired counter that TTL has not deleted yet must restart, not keep counting.
        for _ in range(_INCREMENT_ATTEMPTS):
            try:
                return self._add(key, field, amount, expires_at)
            except ConditionFailed:
                pass
            fresh = {"pk": key.pk, "sk": key.sk, field: amount}
            if expires_at is not None:
                fresh["expiresAt"] = expires_at
            expression = _Expression()
            try:
                self._call(
                    "put_item",
                    TableName=self._table,
                    Item=_to_raw(fresh),
                    **expression.params(ConditionExpression=self._expired(expression)),
                )
                return amount
            except ConditionFailed:
                continue  # another writer restarted or TTL removed it in between
        raise DependencyUnavailable()

    def _add(self, key: Key, field: str, amount: int, expires_at: int | None) -> int:
        expression = _Expression()
        update = f"ADD {expression.name(field)} {expression.value(amount)}"
        if expires_at is not None:
            expires = expression.name("expiresAt")
            update += f" SET {expires} = if_not_exists({expires}, {expression.value(expires_at)})"
        condition = f"NOT {self._expired(expression)}"
        response = self._call(
            "update_item",
            TableName=self._table,
            Key=_to_raw({"pk": key.pk, "sk": key.sk}),
            # Not UPDATED_NEW: moto leaves out an attribute whose value did not change (ADD 0).
            ReturnValues="ALL_NEW",
            **expression.params(UpdateExpression=update, ConditionExpression=condition),
        )
        return int(_deserializer.deserialize(response["Attributes"][field]))


def create_table(client: Any, table_name: str) -> None:
    """Create the table as the CDK stack defines it (used by tests and local tooling)."""
    client.create_table(
        TableName=table_name,
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )
