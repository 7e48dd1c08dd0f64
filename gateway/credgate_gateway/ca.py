"""The gateway CA: one ECDSA P-256 root, created once and shared, that signs a leaf per intercepted host.

The root lives behind `CAStore`: files in the data dir (self-hosted) or an item in the store, its key
encrypted by the key ring (several gateway tasks share one CA). Leaves share one process-local key and
are cached as ready `ssl.SSLContext`s, least recently used evicted.
"""
from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import os
import ssl
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Protocol

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from credgate.errors import ConditionFailed
from credgate.ports import ItemStore, KeyRing
from credgate.store import schema
from credgate.store.ops import Absent, Put

CA_COMMON_NAME = "credgate gateway CA"
CA_VALIDITY = dt.timedelta(days=3650)
LEAF_VALIDITY = dt.timedelta(days=365)
BACKDATE = dt.timedelta(days=1)
"""Not-before lies this far in the past, for agents whose clocks run a little behind."""
LEAF_RENEW_BEFORE = dt.timedelta(days=30)


@dataclass(frozen=True)
class CAMaterial:
    cert_pem: bytes
    key_pem: bytes


class CAStore(Protocol):
    def load(self) -> CAMaterial | None: ...

    def create(self, material: CAMaterial) -> CAMaterial:
        """Keep `material` unless a CA exists already; return the one kept (the first writer wins)."""
        ...


def generate_ca(now: dt.datetime | None = None) -> CAMaterial:
    now = now or dt.datetime.now(dt.timezone.utc)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_COMMON_NAME)])
    subject_key_id = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + CA_VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(subject_key_id, critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(subject_key_id), critical=False
        )
        .sign(key, hashes.SHA256())
    )
    return CAMaterial(
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ),
    )


class GatewayCA:
    def __init__(self, material: CAMaterial, *, cache_size: int = 1024) -> None:
        self._cert = x509.load_pem_x509_certificate(material.cert_pem)
        key = serialization.load_pem_private_key(material.key_pem, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey) or key.public_key() != self._cert.public_key():
            raise ValueError("the gateway CA key does not match its certificate")
        self._key = key
        self.cert_pem = material.cert_pem
        self._subject_key_id = self._cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        self._leaf_key = ec.generate_private_key(ec.SECP256R1())
        self._leaf_key_pem = self._leaf_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        self._contexts: OrderedDict[str, tuple[ssl.SSLContext, float]] = OrderedDict()
        self._cache_size = cache_size
        self._lock = threading.Lock()

    @classmethod
    def load_or_create(cls, store: CAStore, **options: int) -> "GatewayCA":
        material = store.load()
        if material is None:
            material = store.create(generate_ca())
        return cls(material, **options)

    @property
    def certificate(self) -> x509.Certificate:
        return self._cert

    def server_context(self, host: str) -> ssl.SSLContext:
        """A TLS server context presenting a leaf for `host` (a DNS name or an IP address)."""
        now = time.time()
        with self._lock:
            cached = self._contexts.get(host)
            if cached is not None and cached[1] > now:
                self._contexts.move_to_end(host)
                return cached[0]
        cert_pem, renew_at = self.issue(host)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.set_alpn_protocols(["http/1.1"])
        _load_cert_chain(context, cert_pem + self._leaf_key_pem)
        with self._lock:
            self._contexts[host] = (context, renew_at)
            self._contexts.move_to_end(host)
            while len(self._contexts) > self._cache_size:
                self._contexts.popitem(last=False)
        return context

    def issue(self, host: str, now: dt.datetime | None = None) -> tuple[bytes, float]:
        """A leaf certificate (PEM) for `host` and the epoch second after which to issue a fresh one."""
        now = now or dt.datetime.now(dt.timezone.utc)
        try:
            alt_name: x509.GeneralName = x509.IPAddress(ipaddress.ip_address(host))
        except ValueError:
            alt_name = x509.DNSName(host)
        # A CN holds at most 64 characters; the SAN is what clients check anyway.
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)] if len(host) <= 64 else [])
        public_key = self._leaf_key.public_key()
        not_after = now + LEAF_VALIDITY
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self._cert.subject)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - BACKDATE)
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName([alt_name]), critical=len(subject) == 0)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(self._subject_key_id),
                critical=False,
            )
            .sign(self._key, hashes.SHA256())
        )
        return cert.public_bytes(serialization.Encoding.PEM), (not_after - LEAF_RENEW_BEFORE).timestamp()


def _load_cert_chain(context: ssl.SSLContext, pem: bytes) -> None:
    """ssl only loads certificates from files: use an anonymous in-memory file where Linux has one."""
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("credgate-leaf", os.MFD_CLOEXEC)
        try:
            os.write(fd, pem)
            context.load_cert_chain(f"/proc/self/fd/{fd}")
            return
        except FileNotFoundError:  # no /proc: fall through to a private temporary file
            pass
        finally:
            os.close(fd)
    with tempfile.TemporaryDirectory(prefix="credgate-leaf-") as directory:
        path = Path(directory) / "leaf.pem"
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as handle:
            handle.write(pem)
        context.load_cert_chain(str(path))


class DirectoryCAStore:
    """`ca.pem` (0644) and `ca-key.pem` (0600) in a directory; concurrent starters agree on one CA."""

    CERT_FILE = "ca.pem"
    KEY_FILE = "ca-key.pem"
    _LOCK_FILE = ".ca.lock"

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    @property
    def cert_path(self) -> Path:
        return self.directory / self.CERT_FILE

    @property
    def key_path(self) -> Path:
        return self.directory / self.KEY_FILE

    def load(self) -> CAMaterial | None:
        # The certificate is written last, so a certificate on disk means its key is there too.
        try:
            cert_pem = self.cert_path.read_bytes()
            key_pem = self.key_path.read_bytes()
        except FileNotFoundError:
            return None
        return CAMaterial(cert_pem, key_pem)

    def create(self, material: CAMaterial) -> CAMaterial:
        self.directory.mkdir(parents=True, exist_ok=True)
        with self._locked():
            existing = self.load()
            if existing is not None:
                return existing
            # A key without a certificate is a crash's leftover; under the lock nobody else is writing.
            _write_atomically(self.key_path, material.key_pem, 0o600)
            _write_atomically(self.cert_path, material.cert_pem, 0o644)
            return material

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        import fcntl

        fd = os.open(self.directory / self._LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock


def _write_atomically(path: Path, data: bytes, mode: int) -> None:
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


class ItemStoreCAStore:
    """The CA as one store item; its key encrypted by the key ring. Create-if-absent, then re-read."""

    KEY = schema.gateway_ca()
    ENCRYPTION_CONTEXT = {"purpose": "gateway-ca"}

    def __init__(self, store: ItemStore, keyring: KeyRing) -> None:
        self._store = store
        self._keyring = keyring

    def load(self) -> CAMaterial | None:
        item = self._store.get(self.KEY)
        if item is None:
            return None
        key_pem = self._keyring.decrypt(item["keyCiphertext"], self.ENCRYPTION_CONTEXT)
        return CAMaterial(item["certPem"].encode("ascii"), key_pem)

    def create(self, material: CAMaterial) -> CAMaterial:
        item = {
            "pk": self.KEY.pk,
            "sk": self.KEY.sk,
            "certPem": material.cert_pem.decode("ascii"),
            "keyCiphertext": self._keyring.encrypt(material.key_pem, self.ENCRYPTION_CONTEXT),
        }
        try:
            self._store.write(Put(item, condition=Absent()))
        except ConditionFailed:
            existing = self.load()
            if existing is None:
                raise RuntimeError("the gateway CA item vanished right after a conflicting create") from None
            return existing
        return material
