"""The KeyRing contract: every case runs on the local key file and on KMS (moto); adapter-only cases follow."""
from __future__ import annotations

import base64
import os
import stat
import threading
import traceback
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from credgate.errors import DependencyUnavailable, IntegrityError
from credgate.keyring.envelope import Envelope
from credgate.keyring.kms import KmsKeyRing
from credgate.keyring.local import LocalKeyRing

CONTEXT = {"organizationId": "org_1", "secretId": "sec_1"}
SECRET = "sk-ant-api03-Zq8vS3cr3tV4lu3-never-shown".encode()
# moto names the key in the first 36 bytes of its blob and answers AccessDenied when they change;
# KMS itself answers InvalidCiphertextException there (IntegrityError).
MOTO_KEY_NAME = range(3, 3 + 36)


def body_of(ciphertext: str) -> bytearray:
    encoded = ciphertext.removeprefix("cgv1:")
    return bytearray(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))


def ciphertext_of(body: bytes) -> str:
    return "cgv1:" + base64.urlsafe_b64encode(bytes(body)).decode().rstrip("=")


def full_text(error: BaseException) -> str:
    """Everything a log line could show: the message, the chained causes and their tracebacks."""
    return "".join(traceback.format_exception(error))


def client_error(code: str, operation: str) -> ClientError:
    return ClientError({"Error": {"Code": code, "Message": f"simulated {code}"}}, operation)


@pytest.mark.parametrize(
    "plaintext",
    [b"", "pässwörd 🔑 秘密".encode(), ("é" * 10_000).encode(), bytes(range(256))],
    ids=["empty", "unicode", "10000-characters", "every-byte"],
)
def test_decrypt_returns_what_was_encrypted(keyring, plaintext):
    assert keyring.decrypt(keyring.encrypt(plaintext, CONTEXT), CONTEXT) == plaintext


def test_ciphertext_is_versioned_text_that_does_not_carry_the_value(keyring):
    ciphertext = keyring.encrypt(SECRET, CONTEXT)

    assert ciphertext.startswith("cgv1:")
    assert ciphertext.isascii()
    assert body_of(ciphertext)[0] == 1
    assert SECRET not in body_of(ciphertext)
    assert SECRET.decode() not in ciphertext


def test_two_encryptions_of_one_value_differ_in_nonce_and_key(keyring):
    first, second = (Envelope.decode(keyring.encrypt(SECRET, CONTEXT)) for _ in range(2))

    assert first.nonce != second.nonce
    assert first.wrapped_key != second.wrapped_key
    assert first.ciphertext != second.ciphertext


def test_context_order_does_not_matter(keyring):
    ciphertext = keyring.encrypt(SECRET, {"a": "1", "b": "2"})

    assert keyring.decrypt(ciphertext, {"b": "2", "a": "1"}) == SECRET


@pytest.mark.parametrize(
    "other_context",
    [
        {"organizationId": "org_1", "secretId": "sec_2"},
        {"organizationId": "org_2", "secretId": "sec_1"},
        {"organizationId": "org_1"},
        {**CONTEXT, "projectId": "prj_1"},
        {},
    ],
    ids=["other-secret", "other-org", "missing-entry", "extra-entry", "empty"],
)
def test_a_wrong_encryption_context_is_refused(keyring, other_context):
    ciphertext = keyring.encrypt(SECRET, CONTEXT)

    with pytest.raises(IntegrityError):
        keyring.decrypt(ciphertext, other_context)


def test_changing_any_byte_of_the_body_is_detected(keyring):
    ciphertext = keyring.encrypt(SECRET, CONTEXT)
    body = body_of(ciphertext)
    is_kms = isinstance(keyring, KmsKeyRing)

    for position in range(len(body)):
        tampered = bytearray(body)
        tampered[position] ^= 0x01
        refusals = (IntegrityError, DependencyUnavailable) if is_kms and position in MOTO_KEY_NAME else IntegrityError
        with pytest.raises(refusals):
            keyring.decrypt(ciphertext_of(tampered), CONTEXT)


@pytest.mark.parametrize("declared", [0, 1, 7, 11, 12, 59, 61, 200, 0xFFFF])
def test_a_forged_data_key_length_is_detected(keyring, declared):
    body = body_of(keyring.encrypt(SECRET, CONTEXT))
    body[1:3] = declared.to_bytes(2, "big")

    with pytest.raises(IntegrityError):
        keyring.decrypt(ciphertext_of(body), CONTEXT)


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: text[:-1],
        lambda text: text[:20],
        lambda text: "cgv1:",
        lambda text: "cgv2:" + text[5:],
        lambda text: text[5:],
        lambda text: "cgv1:" + "é" * 40,
        lambda text: "cgv1:" + "A" * 3,
        lambda text: "",
    ],
    ids=[
        "last-char-cut", "truncated", "empty-body", "unknown-version-prefix", "no-prefix", "non-ascii", "too-short", "empty"
    ],
)
def test_malformed_ciphertext_is_refused(keyring, damage):
    ciphertext = keyring.encrypt(SECRET, CONTEXT)

    with pytest.raises(IntegrityError):
        keyring.decrypt(damage(ciphertext), CONTEXT)


def test_a_ring_under_another_key_cannot_open_the_ciphertext(new_keyring):
    ring, other = new_keyring(), new_keyring()
    ciphertext = ring.encrypt(SECRET, CONTEXT)

    # KMS answers IncorrectKeyException (IntegrityError); moto answers AccessDenied (DependencyUnavailable).
    with pytest.raises((IntegrityError, DependencyUnavailable)) as refusal:
        other.decrypt(ciphertext, CONTEXT)
    if isinstance(ring, LocalKeyRing):
        assert refusal.type is IntegrityError
    assert ring.decrypt(ciphertext, CONTEXT) == SECRET


def test_refusals_never_show_the_plaintext(keyring):
    ciphertext = keyring.encrypt(SECRET, CONTEXT)
    body = body_of(ciphertext)
    body[-1] ^= 0x01

    for attempt in (
        lambda: keyring.decrypt(ciphertext, {"secretId": "other"}),
        lambda: keyring.decrypt(ciphertext_of(body), CONTEXT),
    ):
        with pytest.raises(IntegrityError) as refusal:
            attempt()
        assert SECRET.decode() not in full_text(refusal.value)


# --- local key file ---


def test_the_master_key_file_is_created_owner_only_whatever_the_umask(master_key_path):
    previous = os.umask(0)
    try:
        LocalKeyRing.from_file(master_key_path)
    finally:
        os.umask(previous)

    assert stat.S_IMODE(master_key_path.stat().st_mode) == 0o600
    assert len(master_key_path.read_bytes()) == 32
    assert [path.name for path in master_key_path.parent.iterdir()] == [master_key_path.name]


def test_a_restart_reuses_the_master_key_file(master_key_path):
    before = LocalKeyRing.from_file(master_key_path)
    key = master_key_path.read_bytes()
    ciphertext = before.encrypt(SECRET, CONTEXT)

    after = LocalKeyRing.from_file(master_key_path)

    assert master_key_path.read_bytes() == key
    assert after.decrypt(ciphertext, CONTEXT) == SECRET


def test_rings_starting_together_on_a_fresh_directory_share_one_key(master_key_path):
    rings: list[LocalKeyRing] = []
    start = threading.Barrier(8)

    def open_ring() -> None:
        start.wait()
        rings.append(LocalKeyRing.from_file(master_key_path))

    threads = [threading.Thread(target=open_ring) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    ciphertext = rings[0].encrypt(SECRET, CONTEXT)
    assert len(rings) == 8
    assert all(ring.decrypt(ciphertext, CONTEXT) == SECRET for ring in rings)
    assert [path.name for path in master_key_path.parent.iterdir()] == [master_key_path.name]


@pytest.mark.parametrize("size", [0, 16, 31, 33, 64])
def test_a_master_key_file_of_the_wrong_size_is_rejected_and_kept(master_key_path, size):
    content = os.urandom(size)
    master_key_path.write_bytes(content)

    with pytest.raises(RuntimeError, match="not a credgate master key"):
        LocalKeyRing.from_file(master_key_path)
    assert master_key_path.read_bytes() == content


# --- KMS ---


def test_kms_binds_the_wrapped_data_key_to_the_context(kms_keyring, kms_client):
    wrapped_key = Envelope.decode(kms_keyring.encrypt(SECRET, CONTEXT)).wrapped_key

    assert len(kms_client.decrypt(CiphertextBlob=wrapped_key, EncryptionContext=CONTEXT)["Plaintext"]) == 32
    with pytest.raises(ClientError, match="InvalidCiphertextException"):
        kms_client.decrypt(CiphertextBlob=wrapped_key, EncryptionContext={"secretId": "other"})


def test_a_new_kms_ring_over_the_same_key_opens_earlier_ciphertexts(kms_keyring, kms_client, kms_key_id):
    ciphertext = kms_keyring.encrypt(SECRET, CONTEXT)

    assert KmsKeyRing(kms_client, kms_key_id).decrypt(ciphertext, CONTEXT) == SECRET


def test_a_kms_key_that_does_not_exist_raises_dependency_unavailable(kms_client):
    ring = KmsKeyRing(kms_client, "11111111-2222-3333-4444-555555555555")

    with pytest.raises(DependencyUnavailable):
        ring.encrypt(SECRET, CONTEXT)


# moto does not refuse a disabled key, so the refusal KMS would send is simulated like the others.
@pytest.mark.parametrize(
    "code",
    ["ThrottlingException", "ServiceUnavailableException", "KMSInternalException", "DependencyTimeoutException",
     "DisabledException", "KMSInvalidStateException", "AccessDeniedException"],
)
@pytest.mark.parametrize("method", ["generate_data_key", "decrypt"])
def test_kms_failures_surface_as_dependency_unavailable_without_the_plaintext(
    kms_keyring, kms_client, monkeypatch, code, method
):
    ciphertext = kms_keyring.encrypt(SECRET, CONTEXT)

    def fail(**_: Any) -> None:
        raise client_error(code, method)

    monkeypatch.setattr(kms_client, method, fail)

    with pytest.raises(DependencyUnavailable) as failure:
        if method == "generate_data_key":
            kms_keyring.encrypt(SECRET, CONTEXT)
        else:
            kms_keyring.decrypt(ciphertext, CONTEXT)
    assert failure.value.status == 500
    assert SECRET.decode() not in full_text(failure.value)


def test_an_unreachable_kms_raises_dependency_unavailable(kms_keyring, kms_client, monkeypatch):
    def unreachable(**_: Any) -> None:
        raise EndpointConnectionError(endpoint_url="https://kms.us-east-1.amazonaws.com")

    monkeypatch.setattr(kms_client, "generate_data_key", unreachable)

    with pytest.raises(DependencyUnavailable):
        kms_keyring.encrypt(SECRET, CONTEXT)

