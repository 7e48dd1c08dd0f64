"""The ItemStore contract: every case runs on SQLite and on DynamoDB (moto); a few adapter-only cases follow."""
from __future__ import annotations

import json
import random
import sqlite3
import threading
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from credgate.errors import ConditionFailed, DependencyUnavailable
from credgate.store.dynamodb import DynamoItemStore
from credgate.store.ops import Absent, Check, Delete, Equals, Exists, Key, Put, Update
from credgate.store.sqlite import SqliteItemStore

PK = "project#p1"


def typed(value: Any) -> str:
    """A comparison form that tells True from 1 and ignores map key order."""
    return json.dumps(value, sort_keys=True)


def item(sk: str, pk: str = PK, **attributes: Any) -> dict[str, Any]:
    return {"pk": pk, "sk": sk, **attributes}


def sort_keys(items: list[dict[str, Any]]) -> list[str]:
    return [found["sk"] for found in items]


def run_in_threads(count: int, work) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def worker(number: int) -> None:
        try:
            start.wait()
            work(number)
        except BaseException as error:  # surfaced below: a thread's failure must fail the test
            errors.append(error)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


# --- reading back what was written ---

NESTED = item(
    "agent#a1",
    name="Überagent 🔑",
    empty="",
    nothing=None,
    enabled=True,
    disabled=False,
    zero=0,
    big=2**63 + 1,
    negative=-(10**37),
    largest=10**38 - 1,
    tags=["a", "", None, True, 7, ["nested", {"deep": [False]}]],
    settings={"policyMode": "deny", "limits": {"perMinute": 60, "hosts": ["*.example.com"]}, "empty": {}, "none": []},
)


def test_put_then_get_returns_nested_values_unchanged(item_store):
    item_store.write(Put(NESTED))

    assert typed(item_store.get(Key(PK, "agent#a1"))) == typed(NESTED)


def test_get_of_a_missing_item_is_none(item_store):
    item_store.write(Put(item("agent#a1")))

    assert item_store.get(Key(PK, "agent#a2")) is None
    assert item_store.get(Key("project#p2", "agent#a1")) is None


def test_put_without_condition_replaces_the_whole_item(item_store):
    item_store.write(Put(item("agent#a1", name="old", secretMode="all")))
    item_store.write(Put(item("agent#a1", name="new")))

    assert item_store.get(Key(PK, "agent#a1")) == item("agent#a1", name="new")


_scalars = st.none() | st.booleans() | st.integers(-(10**38) + 1, 10**38 - 1) | st.text(max_size=20)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=_values)
def test_any_value_of_the_item_model_round_trips(item_store, value):
    stored = item("value", value=value)
    item_store.write(Put(stored))

    assert typed(item_store.get(Key(PK, "value"))) == typed(stored)


# --- query ---


def test_query_returns_only_the_prefix_in_sort_key_order(item_store):
    sort_keys_written = [
        "secret#b",
        "secret#a%b",
        "secret#a_b",
        "secret#aXb",
        "secret#a",
        "secret#é",
        "secret#",
        "secret",
        "secrets#x",
        "rule#1",
    ]
    for sk in sort_keys_written:
        item_store.write(Put(item(sk)))
    item_store.write(Put(item("secret#a%c", pk="project#p2")))

    secrets = sorted(sk for sk in sort_keys_written if sk.startswith("secret#"))
    assert sort_keys(item_store.query(PK, "secret#")) == secrets
    # '%' and '_' are literal characters, not LIKE wildcards.
    assert sort_keys(item_store.query(PK, "secret#a%")) == ["secret#a%b"]
    assert sort_keys(item_store.query(PK, "secret#a_")) == ["secret#a_b"]
    assert sort_keys(item_store.query(PK)) == sorted(sort_keys_written)
    assert item_store.query("project#none") == []


def test_query_reads_every_page_of_a_partition_larger_than_a_megabyte(item_store):
    blob = "x" * 100_000
    for n in range(12):
        item_store.write(Put(item(f"blob#{n:02}", blob=blob)))
    item_store.write(Put(item("other#1", blob=blob)))

    found = item_store.query(PK, "blob#")

    assert sort_keys(found) == [f"blob#{n:02}" for n in range(12)]
    assert all(each["blob"] == blob for each in found)


def test_dynamodb_answers_a_large_partition_in_more_than_one_page(dynamo_store, dynamodb_client):
    """Guards the test above: it only proves pagination while one page cannot hold the partition."""
    for n in range(12):
        dynamo_store.write(Put(item(f"blob#{n:02}", blob="x" * 100_000)))

    page = dynamodb_client.query(
        TableName=dynamo_store._table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": PK}},
        ConsistentRead=True,
    )

    assert "LastEvaluatedKey" in page
    assert len(page["Items"]) < 12


# --- get_many ---


def test_get_many_returns_each_found_item_once_in_the_order_asked(item_store):
    for sk in ("agent#a", "agent#b", "agent#c"):
        item_store.write(Put(item(sk)))

    asked = ["agent#c", "agent#missing", "agent#a", "agent#c"]

    found = item_store.get_many([Key(PK, sk) for sk in asked] + [Key("project#p2", "agent#a")])

    assert sort_keys(found) == ["agent#c", "agent#a"]
    assert item_store.get_many([]) == []


def test_get_many_reads_more_keys_than_one_batch_holds(item_store):
    written = [f"agent#{n:03}" for n in range(130)]
    item_store.write(*(Put(item(sk)) for sk in written[:65]))
    item_store.write(*(Put(item(sk)) for sk in written[65:]))
    asked = written + [f"agent#missing{n}" for n in range(5)]
    random.Random(7).shuffle(asked)

    found = item_store.get_many([Key(PK, sk) for sk in asked])

    assert sort_keys(found) == [sk for sk in asked if sk in written]


# --- conditional writes ---


def test_put_if_absent_fails_when_the_item_exists_and_keeps_it(item_store):
    item_store.write(Put(item("identifier#default", agentId="a1")))

    with pytest.raises(ConditionFailed) as failure:
        item_store.write(Put(item("identifier#default", agentId="a2"), Absent()))

    assert failure.value.index == 0
    assert item_store.get(Key(PK, "identifier#default"))["agentId"] == "a1"


def test_put_if_absent_succeeds_when_the_item_is_missing(item_store):
    item_store.write(Put(item("identifier#default", agentId="a1"), Absent()))

    assert item_store.get(Key(PK, "identifier#default"))["agentId"] == "a1"


def test_update_sets_and_removes_attributes_and_keeps_the_rest(item_store):
    item_store.write(Put(item("agent#a1", name="old", secretMode="all", tokenHash="h1")))

    item_store.write(Update(Key(PK, "agent#a1"), set={"name": "new", "secretIds": ["s1"]}, remove=("tokenHash",)))

    assert item_store.get(Key(PK, "agent#a1")) == item("agent#a1", name="new", secretMode="all", secretIds=["s1"])


def test_update_of_a_missing_item_fails_and_creates_nothing(item_store):
    with pytest.raises(ConditionFailed) as failure:
        item_store.write(Update(Key(PK, "agent#a1"), set={"name": "new"}))

    assert failure.value.index == 0
    assert item_store.get(Key(PK, "agent#a1")) is None


def test_update_with_absent_condition_never_creates_the_item(item_store):
    with pytest.raises(ConditionFailed):
        item_store.write(Update(Key(PK, "agent#a1"), set={"name": "new"}, condition=Absent()))

    assert item_store.get(Key(PK, "agent#a1")) is None


def test_update_with_equals_applies_only_when_the_value_matches(item_store):
    item_store.write(Put(item("org#o1", status="unclaimed")))

    item_store.write(Update(Key(PK, "org#o1"), set={"status": "claimed"}, condition=Equals("status", "unclaimed")))
    with pytest.raises(ConditionFailed):
        item_store.write(Update(Key(PK, "org#o1"), set={"status": "detached"}, condition=Equals("status", "unclaimed")))

    assert item_store.get(Key(PK, "org#o1"))["status"] == "claimed"


def test_equals_compares_typed_values_and_never_matches_a_missing_attribute(item_store):
    item_store.write(Put(item("agent#a1", isDefault=True, count=1)))

    for condition in (Equals("isDefault", 1), Equals("count", True), Equals("missing", None), Equals("count", "1")):
        with pytest.raises(ConditionFailed):
            item_store.write(Check(Key(PK, "agent#a1"), condition))
    item_store.write(Check(Key(PK, "agent#a1"), Equals("isDefault", True)))


def test_equals_matches_maps_and_lists_by_value(item_store):
    item_store.write(Put(item("rule#r1", limit={"window": "minute", "count": 5}, hosts=["a", "b"])))

    item_store.write(Check(Key(PK, "rule#r1"), Equals("limit", {"count": 5, "window": "minute"})))
    item_store.write(Check(Key(PK, "rule#r1"), Equals("hosts", ["a", "b"])))
    with pytest.raises(ConditionFailed):
        item_store.write(Check(Key(PK, "rule#r1"), Equals("hosts", ["b", "a"])))


def test_delete_with_condition_removes_only_when_it_holds(item_store):
    item_store.write(Put(item("approval#x1", state="pending")))

    with pytest.raises(ConditionFailed) as failure:
        item_store.write(Delete(Key(PK, "approval#x1"), Equals("state", "decided")))
    assert failure.value.index == 0
    assert item_store.get(Key(PK, "approval#x1")) is not None

    item_store.write(Delete(Key(PK, "approval#x1"), Equals("state", "pending")))
    assert item_store.get(Key(PK, "approval#x1")) is None


def test_delete_of_a_missing_item_without_condition_is_quiet_and_with_exists_fails(item_store):
    item_store.write(Delete(Key(PK, "agent#none")))

    with pytest.raises(ConditionFailed):
        item_store.write(Delete(Key(PK, "agent#none"), Exists()))


def test_check_gates_the_other_operations_without_changing_its_item(item_store):
    item_store.write(Put(item("org#o1", status="unclaimed")))

    item_store.write(Check(Key(PK, "org#o1"), Equals("status", "unclaimed")), Put(item("secret#s1")))
    with pytest.raises(ConditionFailed) as failure:
        item_store.write(Put(item("secret#s2")), Check(Key(PK, "org#missing"), Exists()))

    assert failure.value.index == 1
    assert item_store.get(Key(PK, "org#o1")) == item("org#o1", status="unclaimed")
    assert item_store.get(Key(PK, "secret#s1")) is not None
    assert item_store.get(Key(PK, "secret#s2")) is None


def test_a_write_whose_third_condition_fails_writes_nothing(item_store):
    """The unique-identifier and one-default-agent invariants rest on this all-or-nothing write."""
    item_store.write(
        Put(item("agent#a0", isDefault=True)),
        Put(item("agent#a9", name="to delete")),
        Put(item("identifier#taken", agentId="a0")),
    )
    before = item_store.query(PK)

    with pytest.raises(ConditionFailed) as failure:
        item_store.write(
            Put(item("agent#a1", identifier="taken"), Absent()),
            Update(Key(PK, "agent#a0"), set={"isDefault": False}, condition=Equals("isDefault", True)),
            Put(item("identifier#taken", agentId="a1"), Absent()),
            Delete(Key(PK, "agent#a9")),
        )

    assert failure.value.index == 2
    assert item_store.query(PK) == before


def test_a_write_touching_one_item_twice_is_refused_before_anything_is_written(item_store):
    with pytest.raises(ValueError):
        item_store.write(Put(item("agent#a1")), Put(item("agent#a2")), Update(Key(PK, "agent#a1"), set={"name": "x"}))

    assert item_store.query(PK) == []


# --- expiry ---


def test_expired_items_are_invisible_to_every_read(item_store, store_clock):
    now = int(store_clock())
    item_store.write(Put(item("session#old", expiresAt=now - 1)), Put(item("session#live", expiresAt=now + 60)))

    assert item_store.get(Key(PK, "session#old")) is None
    assert sort_keys(item_store.query(PK, "session#")) == ["session#live"]
    assert sort_keys(item_store.get_many([Key(PK, "session#old"), Key(PK, "session#live")])) == ["session#live"]


def test_an_item_lives_through_its_expiry_second_and_vanishes_after_it(item_store, store_clock):
    now = int(store_clock())
    item_store.write(Put(item("session#s1", expiresAt=now)))
    assert item_store.get(Key(PK, "session#s1")) is not None

    store_clock.advance(0.5)

    assert item_store.get(Key(PK, "session#s1")) is None
    item_store.write(Put(item("session#s1", expiresAt=now + 60), Absent()))
    assert item_store.get(Key(PK, "session#s1"))["expiresAt"] == now + 60


def test_an_expired_item_counts_as_absent_for_conditions(item_store, store_clock):
    now = int(store_clock())
    item_store.write(Put(item("claim#t1", expiresAt=now + 60, used=False)))
    store_clock.advance(61)

    for op in (
        Check(Key(PK, "claim#t1"), Exists()),
        Check(Key(PK, "claim#t1"), Equals("used", False)),
        Update(Key(PK, "claim#t1"), set={"used": True}),
        Delete(Key(PK, "claim#t1"), Exists()),
    ):
        with pytest.raises(ConditionFailed):
            item_store.write(op)

    item_store.write(Put(item("claim#t1", used=False), Absent()))
    assert item_store.get(Key(PK, "claim#t1")) == item("claim#t1", used=False)


def test_an_explicit_null_expiry_never_expires(item_store):
    item_store.write(Put(item("agent#a1", expiresAt=None)))

    assert item_store.get(Key(PK, "agent#a1")) == item("agent#a1", expiresAt=None)
    item_store.write(Check(Key(PK, "agent#a1"), Exists()))
    with pytest.raises(ConditionFailed):
        item_store.write(Put(item("agent#a1"), Absent()))


# --- increment ---


def test_increment_creates_the_counter_at_zero_and_returns_running_totals(item_store):
    key = Key(PK, "usage#2025-01")

    totals = [item_store.increment(key, "requests", amount) for amount in (1, 2, 5, -3)]

    assert totals == [1, 3, 8, 5]
    assert item_store.get(key) == item("usage#2025-01", requests=5)


def test_increment_by_zero_reads_the_counter_and_creates_it_at_zero(item_store):
    key = Key(PK, "usage#2025-01")

    assert item_store.increment(key, "requests", 0) == 0
    item_store.increment(key, "requests", 4)
    assert item_store.increment(key, "requests", 0) == 4


def test_increment_keeps_the_other_attributes_of_an_item(item_store):
    item_store.write(Put(item("budget#s1", limitUsd=100, spentMicros=10)))

    assert item_store.increment(Key(PK, "budget#s1"), "spentMicros", 25) == 35
    assert item_store.get(Key(PK, "budget#s1")) == item("budget#s1", limitUsd=100, spentMicros=35)


def test_increment_sets_the_expiry_on_creation_only(item_store, store_clock):
    now = int(store_clock())
    key = Key(PK, "ratelimit#r1#a1")

    item_store.increment(key, "count", 1, expires_at=now + 60)
    item_store.increment(key, "count", 1, expires_at=now + 120)

    assert item_store.get(key) == item("ratelimit#r1#a1", count=2, expiresAt=now + 60)


def test_increment_of_an_expired_counter_starts_afresh(item_store, store_clock):
    now = int(store_clock())
    key = Key(PK, "ratelimit#r1#a1")
    item_store.increment(key, "count", 7, expires_at=now + 60)
    store_clock.advance(61)

    assert item_store.increment(key, "count", 1, expires_at=now + 120) == 1
    assert item_store.get(key) == item("ratelimit#r1#a1", count=1, expiresAt=now + 120)


def test_concurrent_increments_are_never_lost(item_store):
    key = Key(PK, "usage#concurrent")
    totals: list[int] = []

    def add_fifty(_: int) -> None:
        for _ in range(50):
            totals.append(item_store.increment(key, "count", 1))

    run_in_threads(4, add_fifty)

    assert item_store.get(key)["count"] == 200
    assert sorted(totals) == list(range(1, 201))


# --- SQLite: threads and processes ---


def test_sqlite_store_serves_several_threads_at_once(sqlite_store):
    def write_and_read(worker: int) -> None:
        for n in range(25):
            sk = f"agent#{worker}-{n:02}"
            sqlite_store.write(Put(item(sk, worker=worker)), Put(item(f"identifier#{worker}-{n:02}"), Absent()))
            assert sqlite_store.get(Key(PK, sk)) == item(sk, worker=worker)

    run_in_threads(4, write_and_read)

    assert len(sqlite_store.query(PK, "agent#")) == 100
    assert len(sqlite_store.query(PK, "identifier#")) == 100


def test_two_sqlite_stores_on_one_file_see_each_others_writes_and_conditions(tmp_path, store_clock):
    path = tmp_path / "shared.db"
    api, cli = SqliteItemStore(path, now=store_clock), SqliteItemStore(path, now=store_clock)

    api.write(Put(item("identifier#default", agentId="a1"), Absent()))

    assert cli.get(Key(PK, "identifier#default")) == item("identifier#default", agentId="a1")
    with pytest.raises(ConditionFailed):
        cli.write(Put(item("identifier#default", agentId="a2"), Absent()))

    def add_fifty(worker: int) -> None:
        store = (api, cli)[worker % 2]
        for _ in range(50):
            store.increment(Key(PK, "usage#shared"), "count", 1)

    run_in_threads(4, add_fifty)

    assert api.get(Key(PK, "usage#shared"))["count"] == 200
    assert SqliteItemStore(path, now=store_clock).get(Key(PK, "usage#shared"))["count"] == 200


def test_sqlite_store_keeps_its_file_in_wal_mode(tmp_path):
    path = tmp_path / "credgate.db"
    SqliteItemStore(path).write(Put(item("agent#a1")))

    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


# --- DynamoDB: service failures ---


def _client_error(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": f"simulated {code}"}}, operation)


def test_dynamodb_store_over_a_missing_table_raises_dependency_unavailable(dynamodb_client, store_clock):
    store = DynamoItemStore(dynamodb_client, "no-such-table", now=store_clock)

    for read_or_write in (
        lambda: store.get(Key(PK, "a")),
        lambda: store.get_many([Key(PK, "a")]),
        lambda: store.query(PK),
        lambda: store.write(Put(item("a"))),
        lambda: store.write(Put(item("a")), Put(item("b"))),
        lambda: store.increment(Key(PK, "a"), "count", 1),
    ):
        with pytest.raises(DependencyUnavailable):
            read_or_write()


@pytest.mark.parametrize(
    "code", ["ThrottlingException", "ProvisionedThroughputExceededException", "InternalServerError"]
)
@pytest.mark.parametrize(
    "method, call",
    [
        ("get_item", lambda store: store.get(Key(PK, "a"))),
        ("query", lambda store: store.query(PK)),
        ("batch_get_item", lambda store: store.get_many([Key(PK, "a")])),
        ("put_item", lambda store: store.write(Put(item("a")))),
        ("transact_write_items", lambda store: store.write(Put(item("a")), Put(item("b")))),
        ("update_item", lambda store: store.increment(Key(PK, "a"), "count", 1)),
    ],
)
def test_dynamodb_service_errors_surface_as_dependency_unavailable(
    dynamo_store, dynamodb_client, monkeypatch, code, method, call
):
    def fail(**_: Any) -> None:
        raise _client_error(code, method)

    monkeypatch.setattr(dynamodb_client, method, fail)

    with pytest.raises(DependencyUnavailable) as failure:
        call(dynamo_store)
    assert failure.value.status == 500


def test_a_transaction_cancelled_for_a_conflict_is_retryable_not_a_condition_failure(
    dynamo_store, dynamodb_client, monkeypatch
):
    def cancel(**_: Any) -> None:
        error = _client_error("TransactionCanceledException", "TransactWriteItems")
        error.response["CancellationReasons"] = [{"Code": "None"}, {"Code": "TransactionConflict"}]
        raise error

    monkeypatch.setattr(dynamodb_client, "transact_write_items", cancel)

    with pytest.raises(DependencyUnavailable):
        dynamo_store.write(Put(item("a")), Put(item("b")))


def test_an_unreachable_dynamodb_raises_dependency_unavailable(dynamo_store, dynamodb_client, monkeypatch):
    def unreachable(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://dynamodb.us-east-1.amazonaws.com")

    monkeypatch.setattr(dynamodb_client, "get_item", unreachable)

    with pytest.raises(DependencyUnavailable):
        dynamo_store.get(Key(PK, "a"))


def test_a_locked_sqlite_database_is_a_retryable_outage(tmp_path):
    import sqlite3

    from credgate.errors import DependencyUnavailable
    from credgate.store.sqlite import SqliteItemStore

    path = tmp_path / "locked.db"
    store = SqliteItemStore(path)
    store._connection().execute("PRAGMA busy_timeout = 50")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(DependencyUnavailable):
            store.write(Put(item("agent#locked")))
    finally:
        holder.execute("ROLLBACK")
    store.write(Put(item("agent#locked")))
    assert store.get(Key(PK, "agent#locked")) is not None


def test_sqlite_removes_expired_items_from_the_file(tmp_path, monkeypatch):
    """Expired items are invisible at once and, every PURGE_EVERY_WRITES writes, gone from the file."""
    import sqlite3

    from credgate.store import sqlite as sqlite_store

    now = {"t": 1_000_000.0}
    store = sqlite_store.SqliteItemStore(tmp_path / "purge.db", now=lambda: now["t"])
    monkeypatch.setattr(sqlite_store, "PURGE_EVERY_WRITES", 5)
    for n in range(3):
        store.write(Put(item(f"window#{n}", expiresAt=1_000_010)))
    store.write(Put(item("kept#forever")))

    def rows() -> int:
        with sqlite3.connect(tmp_path / "purge.db") as conn:
            return conn.execute("SELECT COUNT(*) FROM items").fetchone()[0]

    assert rows() == 4
    now["t"] = 1_000_020.0
    assert store.query(PK, "window#") == []
    store.write(Put(item("kept#too")))  # the fifth write purges
    assert rows() == 2
    assert [i["sk"] for i in store.query(PK)] == ["kept#forever", "kept#too"]
