"""The gateway CA and its leaves: what strict verifiers (OpenSSL 3, Python) require of them."""
from __future__ import annotations

import datetime as dt
import ipaddress
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from credgate_gateway.ca import CA_COMMON_NAME, GatewayCA, generate_ca


@pytest.fixture(scope="module")
def ca() -> GatewayCA:
    return GatewayCA(generate_ca(), cache_size=3)


def leaf(ca: GatewayCA, host: str) -> x509.Certificate:
    pem, _ = ca.issue(host)
    return x509.load_pem_x509_certificate(pem)


def test_ca_is_a_p256_root_limited_to_signing_leaves(ca):
    cert = ca.certificate
    assert cert.subject.rfc4514_string() == f"CN={CA_COMMON_NAME}"
    assert cert.issuer == cert.subject
    assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
    assert cert.public_key().curve.name == "secp256r1"
    constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert constraints.critical and constraints.value.ca and constraints.value.path_length == 0
    usage = cert.extensions.get_extension_for_class(x509.KeyUsage)
    assert usage.critical and usage.value.key_cert_sign and usage.value.crl_sign
    assert not usage.value.digital_signature
    cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert dt.timedelta(days=3640) < lifetime < dt.timedelta(days=3660)


def test_leaf_for_a_host_name(ca):
    cert = leaf(ca, "api.anthropic.com")
    now = dt.datetime.now(dt.timezone.utc)
    assert cert.issuer == ca.certificate.subject
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "api.anthropic.com"
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["api.anthropic.com"]
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(eku) == [ExtendedKeyUsageOID.SERVER_AUTH]
    assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert cert.not_valid_before_utc < now - dt.timedelta(minutes=30)
    assert cert.not_valid_after_utc - cert.not_valid_before_utc <= dt.timedelta(days=397)
    aki = cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    ski = ca.certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    assert aki.key_identifier == ski.digest
    cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier)
    assert cert.public_key().curve.name == "secp256r1"


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_leaf_for_an_ip_uses_an_ip_san(ca, host):
    san = leaf(ca, host).extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address(host)]
    assert san.get_values_for_type(x509.DNSName) == []


def test_leaf_for_a_host_longer_than_a_common_name_still_works(ca):
    host = ".".join(["a" * 60, "b" * 60, "example"])
    cert = leaf(ca, host)
    assert len(cert.subject) == 0
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert san.critical and san.value.get_values_for_type(x509.DNSName) == [host]


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl CLI not installed")
@pytest.mark.parametrize("host", ["api.openai.com", "127.0.0.1"])
def test_openssl_verifies_leaves_strictly(ca, tmp_path: Path, host):
    (tmp_path / "ca.pem").write_bytes(ca.cert_pem)
    (tmp_path / "leaf.pem").write_bytes(ca.issue(host)[0])
    check = "-verify_ip" if host[0].isdigit() else "-verify_hostname"
    result = subprocess.run(
        ["openssl", "verify", "-x509_strict", "-purpose", "sslserver", check, host,
         "-CAfile", str(tmp_path / "ca.pem"), str(tmp_path / "leaf.pem")],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def handshake(server: ssl.SSLContext, client: ssl.SSLContext, host: str) -> ssl.SSLObject:
    """A full TLS handshake over memory BIOs; returns the client side."""
    client_in, client_out, server_in, server_out = (ssl.MemoryBIO() for _ in range(4))
    client_side = client.wrap_bio(client_in, client_out, server_hostname=host)
    server_side = server.wrap_bio(server_in, server_out, server_side=True)
    for _ in range(10):
        for side in (client_side, server_side):
            try:
                side.do_handshake()
            except ssl.SSLWantReadError:
                pass
        server_in.write(client_out.read())
        client_in.write(server_out.read())
        try:
            client_side.do_handshake()
            server_side.do_handshake()
            return client_side
        except ssl.SSLWantReadError:
            continue
    raise AssertionError("handshake did not finish")


@pytest.mark.parametrize("host", ["api.example.test", "10.1.2.3"])
def test_python_accepts_leaves_under_strict_x509_checks(ca, host):
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    client.verify_flags |= ssl.VERIFY_X509_STRICT
    client.set_alpn_protocols(["h2", "http/1.1"])
    connection = handshake(ca.server_context(host), client, host)
    assert connection.selected_alpn_protocol() == "http/1.1"


def test_a_leaf_for_one_host_does_not_pass_for_another(ca):
    client = ssl.create_default_context(cadata=ca.cert_pem.decode())
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(ca.server_context("api.example.test"), client, "evil.example.test")


def test_server_contexts_are_cached_per_host_and_evicted_least_recently_used():
    ca = GatewayCA(generate_ca(), cache_size=2)
    first = ca.server_context("a.test")
    assert ca.server_context("a.test") is first
    ca.server_context("b.test")
    ca.server_context("a.test")  # a is now the most recent
    ca.server_context("c.test")  # evicts b
    assert ca.server_context("a.test") is first
    b_again = ca.server_context("b.test")
    assert b_again is ca.server_context("b.test")


def test_a_key_that_does_not_match_the_certificate_is_refused():
    one, other = generate_ca(), generate_ca()
    with pytest.raises(ValueError):
        GatewayCA(type(one)(one.cert_pem, other.key_pem))
