"""Connections to upstream servers: the response-side protocol and the keep-alive pool."""
from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from typing import TYPE_CHECKING, Callable

import httptools

from credgate_gateway.proxy.config import ConnectRoutes, Limits, Timeouts

if TYPE_CHECKING:
    from credgate_gateway.proxy.exchange import Exchange
    from credgate_gateway.proxy.server import EngineStats

log = logging.getLogger("credgate.gateway.proxy")

OriginKey = tuple[str, str, int]
"""(scheme, host, port) of the upstream as the agent named it."""


class UpstreamError(Exception):
    """Reaching the upstream failed; `code` is the engine's stable error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def upstream_tls_context(extra_ca_bundle: str | None) -> ssl.SSLContext:
    """System roots plus an optional bundle; hostname checked; HTTP/1.1 only."""
    context = ssl.create_default_context()
    if extra_ca_bundle:
        context.load_verify_locations(cafile=extra_ca_bundle)
    context.set_alpn_protocols(["http/1.1"])
    return context


def _set_nodelay(transport: asyncio.BaseTransport) -> None:
    sock = transport.get_extra_info("socket")
    if sock is not None:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except (OSError, AttributeError):
            pass


class UpstreamConnection(asyncio.BufferedProtocol):
    """One HTTP/1.1 connection to an upstream; serves one exchange at a time, then rests in the pool."""

    __slots__ = (
        "pool",
        "key",
        "transport",
        "parser",
        "exchange",
        "closed",
        "reused",
        "idle_since",
        "last_read",
        "write_paused_since",
        "relaying",
        "_reading_paused",
        "_reason",
        "_headers",
        "_interim",
        "_head_only",
        "_now",
    )

    def __init__(self, pool: "UpstreamPool", key: OriginKey) -> None:
        self.pool = pool
        self.key = key
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.exchange: Exchange | None = None
        self.closed = False
        self.reused = False
        self.idle_since = 0.0
        self.last_read = 0.0
        self.write_paused_since: float | None = None
        self.relaying = False
        self._reading_paused = False
        self._reason = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._interim = False
        self._head_only = False
        self._now: Callable[[], float] = pool.loop.time

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        _set_nodelay(transport)
        limits = self.pool.limits
        transport.set_write_buffer_limits(limits.write_high_water, limits.write_low_water)  # type: ignore[attr-defined]
        self.last_read = self._now()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.pool.read_buffer

    def buffer_updated(self, nbytes: int) -> None:
        # The buffer is shared by every connection of the server: nothing may keep a view of it.
        self.data_received(self.pool.read_buffer[:nbytes])

    def data_received(self, data: bytes | memoryview) -> None:
        self.last_read = self._now()
        exchange = self.exchange
        if exchange is None:
            # Bytes on an idle connection: the upstream is out of step, so never reuse it.
            self.close()
            return
        if self.relaying:
            exchange.relay_to_client(bytes(data))
            return
        client = exchange.client
        client.cork()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade as switch:
            exchange.upstream_switched(self, bytes(data[switch.args[0] :]))
        except httptools.HttpParserError:
            if self.exchange is exchange:
                exchange.upstream_broken(self)
        finally:
            client.flush()
        if self._head_only:
            # llhttp cannot be told that a response to HEAD has no body: start afresh for the next one.
            self._head_only = False
            self.parser = httptools.HttpResponseParser(self)

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        exchange = self.exchange
        if exchange is None:
            self.pool.forget(self)
        else:
            self.exchange = None
            exchange.upstream_lost(self)

    def pause_writing(self) -> None:
        self.write_paused_since = self._now()
        exchange = self.exchange
        if exchange is not None:
            exchange.upstream_full()

    def resume_writing(self) -> None:
        self.write_paused_since = None
        exchange = self.exchange
        if exchange is not None:
            exchange.upstream_drained()

    # httptools callbacks

    def on_message_begin(self) -> None:
        self._reason = b""
        self._headers = []

    def on_status(self, reason: bytes) -> None:
        self._reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        if 100 <= status < 200 and status != 101:
            self._interim = True  # 100 Continue, 103 Early Hints: not forwarded
            return
        exchange = self.exchange
        if exchange is None:
            return
        if exchange.method == "HEAD":
            self._head_only = True
            exchange.upstream_head(self, status, self._reason, self._headers)
            if self.exchange is exchange:
                exchange.upstream_done(self, self.parser.should_keep_alive())
            return
        exchange.upstream_head(self, status, self._reason, self._headers)

    def on_body(self, data: bytes) -> None:
        exchange = self.exchange
        if exchange is not None and not self._head_only:
            exchange.upstream_body(data)

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            return
        if self._head_only or self.parser.get_status_code() == 101:
            return  # for a 101, llhttp completes the message and then reports the switch
        exchange = self.exchange
        if exchange is not None:
            exchange.upstream_done(self, self.parser.should_keep_alive())

    # used by the exchange and the pool

    def send(self, data: bytes) -> None:
        if not self.closed:
            self.transport.write(data)  # type: ignore[union-attr]
            if self.write_paused_since is not None:
                self.pool.stats.note_upstream_buffer(self)

    def pause_reading(self) -> None:
        if not self._reading_paused and not self.closed:
            self._reading_paused = True
            self.transport.pause_reading()  # type: ignore[union-attr]

    def resume_reading(self) -> None:
        if self._reading_paused and not self.closed:
            self._reading_paused = False
            self.transport.resume_reading()  # type: ignore[union-attr]

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.exchange = None
            self.transport.close()  # type: ignore[union-attr]

    def abort(self) -> None:
        if not self.closed:
            self.closed = True
            self.exchange = None
            self.transport.abort()  # type: ignore[union-attr]


class UpstreamPool:
    """Idle keep-alive connections keyed by (scheme, host, port); newest reused first, bounded."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        *,
        tls: ssl.SSLContext,
        routes: ConnectRoutes,
        timeouts: Timeouts,
        limits: Limits,
        stats: "EngineStats",
        read_buffer: memoryview,
    ) -> None:
        self.loop = loop
        self.tls = tls
        self.routes = routes
        self.timeouts = timeouts
        self.limits = limits
        self.stats = stats
        self.read_buffer = read_buffer
        self._idle: dict[OriginKey, list[UpstreamConnection]] = {}
        self._idle_count = 0

    def take(self, key: OriginKey) -> UpstreamConnection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            self._idle_count -= 1
            if not connection.closed:
                connection.reused = True
                return connection
        return None

    async def connect(self, key: OriginKey) -> UpstreamConnection:
        scheme, host, port = key
        address, address_port = self.routes.route(host, port)
        tls = self.tls if scheme == "https" else None
        timeout = self.timeouts.upstream_connect
        self.stats.upstream_connects += 1
        try:
            async with asyncio.timeout(timeout):
                _, connection = await self.loop.create_connection(
                    lambda: UpstreamConnection(self, key),
                    address,
                    address_port,
                    ssl=tls,
                    server_hostname=host if tls is not None else None,
                    # Let asyncio.timeout fire first, so that a slow handshake reads as a timeout.
                    ssl_handshake_timeout=timeout + 5 if tls is not None else None,
                )
        except TimeoutError:
            raise UpstreamError("upstream_timeout", "connecting to the upstream timed out") from None
        except ssl.SSLCertVerificationError:
            raise UpstreamError(
                "upstream_tls_error", "the upstream's TLS certificate could not be verified"
            ) from None
        except ssl.SSLError:
            raise UpstreamError("upstream_tls_error", "the TLS handshake with the upstream failed") from None
        except OSError:
            raise UpstreamError("upstream_unreachable", "the upstream could not be reached") from None
        return connection  # type: ignore[return-value]

    def give_back(self, connection: UpstreamConnection) -> None:
        """Keep a connection whose last response was read in full and that nobody asked to close."""
        if connection.closed:
            return
        connection.exchange = None
        connection.resume_reading()  # an idle connection keeps reading to notice the upstream closing it
        if connection.write_paused_since is not None:
            connection.close()
            return
        idle = self._idle.setdefault(connection.key, [])
        if len(idle) >= self.limits.pool_idle_per_origin:
            idle.pop(0).close()
            self._idle_count -= 1
        elif self._idle_count >= self.limits.pool_idle_total:
            self._evict_oldest()
        connection.idle_since = self.loop.time()
        idle.append(connection)
        self._idle_count += 1

    def forget(self, connection: UpstreamConnection) -> None:
        idle = self._idle.get(connection.key)
        if idle and connection in idle:
            idle.remove(connection)
            self._idle_count -= 1

    def sweep(self, now: float) -> None:
        limit = now - self.timeouts.upstream_pool_idle
        for key, idle in list(self._idle.items()):
            while idle and idle[0].idle_since < limit:
                idle.pop(0).close()
                self._idle_count -= 1
            if not idle:
                del self._idle[key]

    def close_all(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection.close()
        self._idle.clear()
        self._idle_count = 0

    @property
    def idle_count(self) -> int:
        return self._idle_count

    def _evict_oldest(self) -> None:
        oldest_key = min(
            (key for key, idle in self._idle.items() if idle),
            key=lambda key: self._idle[key][0].idle_since,
            default=None,
        )
        if oldest_key is not None:
            self._idle[oldest_key].pop(0).close()
            self._idle_count -= 1
