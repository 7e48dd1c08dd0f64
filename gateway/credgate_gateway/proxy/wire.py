"""HTTP/1.1 wire details as plain functions: proxy tokens, authorities, header filtering, heads, errors."""
from __future__ import annotations

import base64
import binascii
import ipaddress
import json
import re
from http import HTTPStatus
from typing import Iterable, NamedTuple

DEFAULT_PORTS = {"http": 80, "https": 443}

HOP_BY_HOP = frozenset(
    {
        b"connection",
        b"keep-alive",
        b"proxy-connection",
        b"te",
        b"trailer",
        b"transfer-encoding",
        b"upgrade",
        b"proxy-authenticate",
        b"proxy-authorization",
    }
)
# Also engine-owned on requests: routing (Host) and framing (Content-Length, Expect).
_REQUEST_OWNED = HOP_BY_HOP | {b"host", b"content-length", b"expect"}
_REQUEST_OWNED_NAMES = frozenset(name.decode() for name in _REQUEST_OWNED)
_RESPONSE_SPECIAL = HOP_BY_HOP | {b"content-length"}
_CONNECTION_KEYWORDS = frozenset({b"close", b"keep-alive", b"upgrade"})

_HOSTNAME = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,62})(?:\.[a-z0-9_](?:[a-z0-9_-]{0,62}))*")


def proxy_token(value: bytes | str | None) -> str | None:
    """The agent token in a `Proxy-Authorization: Basic base64(user:password)` value.

    The password, or the user when the password is empty; None when absent or malformed.
    """
    if not value:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    scheme, _, credentials = value.strip().partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    user, _, password = decoded.partition(":")
    return password or user or None


def normal_host(host: str) -> str | None:
    """Lowercase, without a trailing dot or IPv6 brackets; None when it is not a host name or IP."""
    host = host.lower()
    if host.startswith("[") and host.endswith("]"):
        try:
            return str(ipaddress.IPv6Address(host[1:-1]))
        except ValueError:
            return None
    if host.endswith("."):
        host = host[:-1]
    if 0 < len(host) <= 253 and _HOSTNAME.fullmatch(host):
        return host
    try:
        return str(ipaddress.IPv4Address(host))
    except ValueError:
        return None


def split_authority(authority: str, default_port: int | None) -> tuple[str, int]:
    """`host[:port]` (IPv6 in brackets) as (normal host, port); ValueError when invalid."""
    if authority.startswith("["):
        end = authority.find("]")
        if end < 0:
            raise ValueError("unbalanced IPv6 brackets")
        raw_host, rest = authority[: end + 1], authority[end + 1 :]
        if rest and not rest.startswith(":"):
            raise ValueError("bad authority")
        port_text = rest[1:]
    else:
        raw_host, sep, port_text = authority.rpartition(":")
        if not sep:
            raw_host, port_text = authority, ""
    if port_text:
        if not port_text.isdigit() or not 0 < int(port_text) < 65536:
            raise ValueError("bad port")
        port = int(port_text)
    elif default_port is None:
        raise ValueError("missing port")
    else:
        port = default_port
    host = normal_host(raw_host)
    if host is None:
        raise ValueError("bad host")
    return host, port


def split_absolute_url(url: str) -> tuple[str, str, int, str]:
    """`scheme://authority/target` as (scheme, host, port, origin-form target); ValueError when invalid."""
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in DEFAULT_PORTS:
        raise ValueError("unsupported scheme")
    cut = len(rest)
    for delimiter in "/?#":
        position = rest.find(delimiter)
        if 0 <= position < cut:
            cut = position
    authority, target = rest[:cut], rest[cut:]
    if "@" in authority:
        raise ValueError("credentials in URL")
    host, port = split_authority(authority, DEFAULT_PORTS[scheme])
    target = target.partition("#")[0]
    if not target.startswith("/"):
        target = "/" + target
    return scheme, host, port, target


def host_header(scheme: str, host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if DEFAULT_PORTS.get(scheme) == port else f"{shown}:{port}"


class RequestHead(NamedTuple):
    headers: list[tuple[str, str]]
    """End-to-end headers for the hooks (no engine-owned, hop-by-hop or Proxy-* ones)."""
    proxy_authorization: bytes | None
    content_length: int | None
    chunked: bool
    expect_continue: bool
    upgrade: str | None
    """The Upgrade header's value when the client asked to switch protocols (Connection: upgrade)."""


def split_request_headers(raw: list[tuple[bytes, bytes]]) -> RequestHead:
    headers: list[tuple[str, str]] = []
    append = headers.append
    proxy_authorization = None
    content_length = None
    chunked = False
    expect_continue = False
    upgrade = None
    connection_tokens: set[bytes] | None = None
    for name, value in raw:
        lname = name.lower()
        if lname in _REQUEST_OWNED or lname[0] == 112 and lname.startswith(b"proxy-"):  # 112: "p"
            if lname == b"proxy-authorization":
                if proxy_authorization is None:
                    proxy_authorization = value
            elif lname == b"content-length":
                content_length = int(value)  # llhttp has validated it
            elif lname == b"transfer-encoding":
                chunked = value.lower().rstrip().endswith(b"chunked")
            elif lname == b"expect":
                expect_continue = value.strip().lower() == b"100-continue"
            elif lname == b"upgrade":
                upgrade = value.decode("latin-1")
            elif lname == b"connection":
                connection_tokens = _tokens(value, connection_tokens)
            continue
        append((name.decode("latin-1"), value.decode("latin-1")))
    if connection_tokens:
        if upgrade is not None and b"upgrade" not in connection_tokens:
            upgrade = None
        listed = connection_tokens - _CONNECTION_KEYWORDS
        if listed:
            headers = [(n, v) for n, v in headers if n.lower().encode("latin-1") not in listed]
    else:
        upgrade = None
    return RequestHead(headers, proxy_authorization, content_length, chunked, expect_continue, upgrade)


class ResponseHead(NamedTuple):
    lines: list[bytes]
    """`Name: value\r\n` for each end-to-end header, in order."""
    content_length: int | None
    chunked: bool
    close: bool
    """The upstream said Connection: close."""
    upgrade: bytes | None
    """The Upgrade header's value (for a 101 answer)."""


def split_response_headers(raw: list[tuple[bytes, bytes]]) -> ResponseHead:
    lines: list[bytes] = []
    content_length = None
    chunked = False
    close = False
    upgrade = None
    connection_tokens: set[bytes] | None = None
    append = lines.append
    for name, value in raw:
        lname = name.lower()
        if lname in _RESPONSE_SPECIAL:
            if lname == b"content-length":
                content_length = int(value)
            else:
                if lname == b"transfer-encoding":
                    chunked = value.lower().rstrip().endswith(b"chunked")
                elif lname == b"connection":
                    connection_tokens = _tokens(value, connection_tokens)
                elif lname == b"upgrade":
                    upgrade = value
                continue
        append(b"%s: %s\r\n" % (name, value))
    if connection_tokens:
        close = b"close" in connection_tokens
        listed = connection_tokens - _CONNECTION_KEYWORDS
        if listed:
            lines = [line for line in lines if line.partition(b":")[0].lower() not in listed]
    return ResponseHead(lines, content_length, chunked, close, upgrade)


def _tokens(value: bytes, into: set[bytes] | None) -> set[bytes]:
    tokens = into if into is not None else set()
    for token in value.split(b","):
        token = token.strip().lower()
        if token:
            tokens.add(token)
    return tokens


class UnsafeHeader(ValueError):
    """A hook produced a method, target or header that would break HTTP framing."""


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_COMMON_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def request_head(
    method: str,
    target: str,
    host: str,
    headers: Iterable[tuple[str, str]],
    framing: str,
    connection: str,
) -> bytes:
    """The upstream request head; `framing` and `connection` are complete header lines or ""."""
    if method not in _COMMON_METHODS and not _TOKEN.fullmatch(method) or not target or " " in target or "\t" in target:
        raise UnsafeHeader("invalid method or target")
    lines = [f"{method} {target} HTTP/1.1\r\nHost: {host}\r\n"]
    # Framing, routing and proxy credentials are the engine's alone, whatever a hook hands back.
    lines += [
        f"{name}: {value}\r\n"
        for name, value in headers
        if (lowered := name.lower()) not in _REQUEST_OWNED_NAMES and not lowered.startswith("proxy-")
    ]
    count = len(lines) + 2  # the first entry holds two lines, and the head ends with a blank one
    lines += (framing, connection, "\r\n")
    count += framing.count("\n") + connection.count("\n")
    text = "".join(lines)
    # One C-speed scan instead of a per-header check: any CR/LF/NUL inside a name or value shows up here.
    if text.count("\n") != count or text.count("\r") != count or "\0" in text:
        raise UnsafeHeader("CR, LF or NUL in a header")
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError as error:
        raise UnsafeHeader("a header is not latin-1") from error


def reason_phrase(status: int) -> bytes:
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b"Status"


def simple_response(
    status: int,
    headers: Iterable[tuple[str, str]],
    body: bytes,
    *,
    close: bool = False,
) -> bytes:
    """A complete response the gateway itself answers with (Content-Length framed)."""
    parts = [f"HTTP/1.1 {status} {reason_phrase(status).decode()}\r\n"]
    count = 1
    for name, value in headers:
        if name.lower() in ("content-length", "transfer-encoding", "connection"):
            continue
        parts += (name, ": ", value, "\r\n")
        count += 1
    parts.append(f"Content-Length: {len(body)}\r\n")
    if close:
        parts.append("Connection: close\r\n")
        count += 1
    parts.append("\r\n")
    count += 2
    text = "".join(parts)
    if text.count("\n") != count or text.count("\r") != count:
        raise UnsafeHeader("CR or LF in a header")
    return text.encode("latin-1") + body


ERROR_STATUS = {
    "bad_request": 400,
    "proxy_auth_required": 407,
    "request_timeout": 408,
    "headers_too_large": 431,
    "internal_error": 500,
    "upstream_unreachable": 502,
    "upstream_tls_error": 502,
    "upstream_protocol_error": 502,
    "shutting_down": 503,
    "upstream_timeout": 504,
}

_NOT_RETRYABLE = {"bad_request", "proxy_auth_required", "headers_too_large"}


def error_response(code: str, message: str, *, close: bool = False) -> bytes:
    """The engine's JSON error: {"error": code, "message": text}. `message` must never hold a header value."""
    status = ERROR_STATUS[code]
    headers = [("Content-Type", "application/json")]
    if status == 407:
        headers.append(("Proxy-Authenticate", 'Basic realm="credgate"'))
    if code in _NOT_RETRYABLE:
        headers.append(("x-should-retry", "false"))
    body = json.dumps({"error": code, "message": message}).encode()
    return simple_response(status, headers, body, close=close)


HEALTH_RESPONSE = simple_response(200, [("Content-Type", "application/json")], b'{"status":"ok"}')
CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
TUNNEL_ESTABLISHED = b"HTTP/1.1 200 Connection established\r\n\r\n"
