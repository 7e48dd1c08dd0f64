"""Engine settings: timeouts, buffer limits and curl-style --connect-to routes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Seconds. Every read the engine waits on is bounded by one of these."""

    client_header: float = 30.0
    """From the first byte of a request head to its end."""
    client_idle: float = 120.0
    """A keep-alive connection or an open tunnel waiting for the next request."""
    client_tls_handshake: float = 15.0
    """The agent's TLS handshake after `200 Connection established`."""
    upstream_connect: float = 15.0
    """TCP connect plus TLS handshake to the upstream."""
    upstream_response: float = 600.0
    """From the end of the request to the upstream's response head (LLM calls take minutes)."""
    stream_idle: float = 300.0
    """Between two body reads in either direction, and for a peer that stops draining what we send."""
    upstream_pool_idle: float = 60.0
    """How long an idle upstream connection is kept for reuse."""

    def shortest(self) -> float:
        return min(
            self.client_header,
            self.client_idle,
            self.upstream_response,
            self.stream_idle,
            self.upstream_pool_idle,
        )


@dataclass(frozen=True, slots=True)
class Limits:
    max_head_bytes: int = 64 * 1024
    """Request line plus headers; a longer head is answered 431."""
    write_high_water: int = 256 * 1024
    """Bytes queued for a peer above which the producing side stops being read."""
    write_low_water: int = 64 * 1024
    request_buffer: int = 256 * 1024
    """Request body bytes buffered while the hooks decide (a larger `peek` raises it for that request)."""
    pool_idle_per_origin: int = 64
    pool_idle_total: int = 512


Origin = tuple[str, int]


@dataclass(frozen=True, slots=True)
class ConnectRoutes:
    """curl's --connect-to: the TCP connection for HOST:PORT goes to ADDR:PORT; TLS still verifies HOST.

    An empty HOST or PORT on the left matches any; an empty ADDR or PORT on the right keeps the original.
    The most specific rule wins: host and port, then host only, then port only, then the catch-all.
    """

    rules: Mapping[tuple[str | None, int | None], tuple[str | None, int | None]]

    @classmethod
    def parse(cls, specs: Iterable[str] | None) -> "ConnectRoutes":
        rules: dict[tuple[str | None, int | None], tuple[str | None, int | None]] = {}
        for spec in specs or ():
            host, port, addr, addr_port = _split_connect_to(spec)
            rules.setdefault((host, port), (addr, addr_port))
        return cls(rules)

    def route(self, host: str, port: int) -> Origin:
        if not self.rules:
            return host, port
        for key in ((host, port), (host, None), (None, port), (None, None)):
            target = self.rules.get(key)
            if target is not None:
                return target[0] or host, target[1] or port
        return host, port


def _split_connect_to(spec: str) -> tuple[str | None, int | None, str | None, int | None]:
    fields = []
    rest = spec.strip()
    for _ in range(3):
        if rest.startswith("["):
            end = rest.find("]")
            if end < 0 or rest[end + 1 : end + 2] != ":":
                raise ValueError(f"invalid connect-to {spec!r}: unbalanced IPv6 brackets")
            fields.append(rest[1:end])
            rest = rest[end + 2 :]
        else:
            head, sep, rest = rest.partition(":")
            if not sep:
                raise ValueError(f"invalid connect-to {spec!r}: expected HOST:PORT:ADDR:PORT")
            fields.append(head)
    fields.append(rest)
    host, port, addr, addr_port = fields
    return (
        _normal_host(host) or None,
        _port(port, spec),
        addr or None,
        _port(addr_port, spec),
    )


def _port(text: str, spec: str) -> int | None:
    if not text:
        return None
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"invalid connect-to {spec!r}: bad port")
    return int(text)


def _normal_host(host: str) -> str:
    return host.lower().rstrip(".")
