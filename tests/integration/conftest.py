"""Fixtures over the real adapters: SQLite files in tmp_path, and AWS through moto in-process."""
from __future__ import annotations

import itertools
import threading
import time
from typing import Any, Callable

import pytest

from credgate.keyring.kms import KmsKeyRing
from credgate.keyring.local import LocalKeyRing
from credgate.ports import ItemStore, KeyRing
from credgate.store.dynamodb import DynamoItemStore
from credgate.store.sqlite import SqliteItemStore

from tests.conftest import MockedAws


class StoreClock:
    """The time the stores judge `expiresAt` by: frozen at a whole second of the test's start until advanced."""

    def __init__(self) -> None:
        self.now = float(int(time.time()))

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class OneRequestAtATime:
    """A client wrapper: DynamoDB applies each request atomically, moto in several unlocked steps (updates get lost)."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._client, name)
        if not callable(attribute):
            return attribute

        def one_at_a_time(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                return attribute(*args, **kwargs)

        return one_at_a_time


@pytest.fixture
def store_clock() -> StoreClock:
    """Override in a module to share the services' clock with the stores."""
    return StoreClock()


@pytest.fixture
def dynamodb_client(mocked_aws: MockedAws) -> Any:
    """moto's in-process DynamoDB (one moto world per test process; see tests/conftest.py)."""
    return mocked_aws.session.client("dynamodb")


@pytest.fixture
def sqlite_store(tmp_path, store_clock: StoreClock) -> SqliteItemStore:
    return SqliteItemStore(tmp_path / "credgate.db", now=store_clock)


@pytest.fixture
def dynamo_store(dynamodb_client: Any, mocked_aws: MockedAws, store_clock: StoreClock) -> DynamoItemStore:
    return DynamoItemStore(OneRequestAtATime(dynamodb_client), mocked_aws.new_table(), now=store_clock)


_STORE_FIXTURES = {"sqlite": "sqlite_store", "dynamodb": "dynamo_store"}


@pytest.fixture(params=list(_STORE_FIXTURES))
def item_store(request: pytest.FixtureRequest) -> ItemStore:
    """Every ItemStore adapter in turn; test ids read [sqlite] and [dynamodb]."""
    return request.getfixturevalue(_STORE_FIXTURES[request.param])


@pytest.fixture
def kms_client(mocked_aws: MockedAws) -> Any:
    return mocked_aws.session.client("kms")


def _create_kms_key(client: Any) -> str:
    return client.create_key(KeySpec="SYMMETRIC_DEFAULT", KeyUsage="ENCRYPT_DECRYPT")["KeyMetadata"]["KeyId"]


@pytest.fixture
def kms_key_id(kms_client: Any) -> str:
    return _create_kms_key(kms_client)


@pytest.fixture
def kms_keyring(kms_client: Any, kms_key_id: str) -> KmsKeyRing:
    return KmsKeyRing(kms_client, kms_key_id)


@pytest.fixture
def master_key_path(tmp_path):
    return tmp_path / "master.key"


@pytest.fixture
def local_keyring(master_key_path) -> LocalKeyRing:
    return LocalKeyRing.from_file(master_key_path)


@pytest.fixture(params=["local", "kms"])
def new_keyring(request: pytest.FixtureRequest, tmp_path) -> Callable[[], KeyRing]:
    """Makes key rings of one kind (ids [local] and [kms]), each call under a key of its own."""
    if request.param == "local":
        paths = (tmp_path / f"master-{n}.key" for n in itertools.count())
        return lambda: LocalKeyRing.from_file(next(paths))
    client = request.getfixturevalue("kms_client")
    return lambda: KmsKeyRing(client, _create_kms_key(client))


@pytest.fixture
def keyring(new_keyring: Callable[[], KeyRing]) -> KeyRing:
    """Every KeyRing adapter in turn; test ids read [local] and [kms]."""
    return new_keyring()
