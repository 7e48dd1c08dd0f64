"""Where the gateway CA is kept: files in the data dir, or one encrypted store item shared by many tasks."""
from __future__ import annotations

import multiprocessing
import stat
import threading
from pathlib import Path

import pytest

from credgate.errors import IntegrityError
from credgate.keyring.local import LocalKeyRing
from credgate.store.ops import Key
from credgate.store.sqlite import SqliteItemStore
from credgate_gateway.ca import CAMaterial, DirectoryCAStore, GatewayCA, ItemStoreCAStore, generate_ca


def _start_in_process(directory: str, barrier, results) -> None:
    barrier.wait()
    ca = GatewayCA.load_or_create(DirectoryCAStore(directory))
    results.put(ca.cert_pem)


def test_directory_store_writes_cert_world_readable_and_key_private(tmp_path: Path):
    store = DirectoryCAStore(tmp_path / "data")
    ca = GatewayCA.load_or_create(store)
    assert store.cert_path.read_bytes() == ca.cert_pem
    assert stat.S_IMODE(store.cert_path.stat().st_mode) == 0o644
    assert stat.S_IMODE(store.key_path.stat().st_mode) == 0o600
    assert not [path for path in store.directory.iterdir() if path.name.startswith(".ca") and "pem" in path.name]


def test_directory_store_keeps_the_ca_across_restarts(tmp_path: Path):
    first = GatewayCA.load_or_create(DirectoryCAStore(tmp_path))
    key_before = (tmp_path / "ca-key.pem").read_bytes()
    second = GatewayCA.load_or_create(DirectoryCAStore(tmp_path))
    assert second.cert_pem == first.cert_pem
    assert (tmp_path / "ca-key.pem").read_bytes() == key_before


def test_processes_starting_together_end_up_with_one_ca(tmp_path: Path):
    context = multiprocessing.get_context("spawn")
    count = 4
    barrier = context.Barrier(count)
    results = context.Queue()
    processes = [
        context.Process(target=_start_in_process, args=(str(tmp_path / "shared"), barrier, results))
        for _ in range(count)
    ]
    for process in processes:
        process.start()
    certs = {results.get(timeout=60) for _ in processes}
    for process in processes:
        process.join(timeout=60)
        assert process.exitcode == 0
    assert len(certs) == 1
    assert certs == {DirectoryCAStore(tmp_path / "shared").cert_path.read_bytes()}


def test_a_key_left_without_its_certificate_is_replaced(tmp_path: Path):
    store = DirectoryCAStore(tmp_path)
    (tmp_path / "ca-key.pem").write_bytes(generate_ca().key_pem)  # a crash between the two writes
    ca = GatewayCA.load_or_create(store)
    assert store.load() == CAMaterial(ca.cert_pem, store.key_path.read_bytes())
    GatewayCA(store.load())  # key and certificate match


def test_create_keeps_the_first_ca(tmp_path: Path):
    store = DirectoryCAStore(tmp_path)
    first, second = generate_ca(), generate_ca()
    assert store.create(first) == first
    assert store.create(second) == first


@pytest.fixture
def item_store(tmp_path: Path) -> SqliteItemStore:
    return SqliteItemStore(tmp_path / "db.sqlite")


@pytest.fixture
def keyring(tmp_path: Path) -> LocalKeyRing:
    return LocalKeyRing.from_file(tmp_path / "master.key")


def test_store_item_holds_the_certificate_and_only_an_encrypted_key(item_store, keyring):
    ca = GatewayCA.load_or_create(ItemStoreCAStore(item_store, keyring))
    item = item_store.get(Key("GATEWAY", "CA"))
    assert item["certPem"] == ca.cert_pem.decode()
    assert set(item) >= {"pk", "sk", "certPem", "keyCiphertext"}
    assert "PRIVATE KEY" not in str(item)
    key_pem = keyring.decrypt(item["keyCiphertext"], {"purpose": "gateway-ca"})
    GatewayCA(CAMaterial(ca.cert_pem, key_pem))


def test_store_adapter_reuses_the_existing_ca(item_store, keyring):
    first = GatewayCA.load_or_create(ItemStoreCAStore(item_store, keyring))
    second = GatewayCA.load_or_create(ItemStoreCAStore(item_store, keyring))
    assert second.cert_pem == first.cert_pem


def test_losing_the_create_race_rereads_the_winner(item_store, keyring):
    store = ItemStoreCAStore(item_store, keyring)
    winner, loser = generate_ca(), generate_ca()
    assert store.create(winner) == winner
    assert store.create(loser) == winner


def test_tasks_starting_together_share_one_ca(item_store, keyring):
    barrier = threading.Barrier(4)
    certs: list[bytes] = []

    def start() -> None:
        barrier.wait()
        certs.append(GatewayCA.load_or_create(ItemStoreCAStore(item_store, keyring)).cert_pem)

    threads = [threading.Thread(target=start) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(certs) == 4 and len(set(certs)) == 1


def test_another_key_ring_cannot_open_the_ca_key(item_store, keyring, tmp_path: Path):
    GatewayCA.load_or_create(ItemStoreCAStore(item_store, keyring))
    stranger = LocalKeyRing.from_file(tmp_path / "other.key")
    with pytest.raises(IntegrityError):
        ItemStoreCAStore(item_store, stranger).load()
