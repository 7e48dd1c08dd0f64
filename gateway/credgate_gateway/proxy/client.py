"""The agent-facing side: one protocol per accepted connection, plain or inside an intercepted tunnel."""
from __future__ import annotations

import asyncio
import collections
import logging
import time
from typing import TYPE_CHECKING, Any

import httptools

from credgate_gateway.proxy import wire
from credgate_gateway.proxy.exchange import (
    CONNECTING,
    DONE,
    PAUSE_BUFFER_FULL,
    PAUSE_QUEUED,
    PAUSE_SETUP,
    PAUSE_UPGRADE,
    PAUSE_UPSTREAM_FULL,
    RESPONDING,
    Exchange,
    RequestBody,
    log_failure,
)
from credgate_gateway.proxy.hooks import BodyUnavailable, Forward, ProxyRequest, RequestRecord, Respond
from credgate_gateway.proxy.upstream import UpstreamError, _set_nodelay

if TYPE_CHECKING:
    from credgate_gateway.proxy.server import ProxyServer

log = logging.getLogger("credgate.gateway.proxy")

PLAIN = 0  # the proxy port itself: absolute-form requests, CONNECT, /healthz
SETUP = 1  # CONNECT received: authenticating, answering, TLS handshake
TUNNEL = 2  # inside an intercepted TLS tunnel: origin-form requests for one host
SWITCHED = 3  # relaying raw bytes after 101 Switching Protocols
CLOSED = 4

_AUTH_MESSAGE = (
    "Proxy authentication required: send the agent token as the proxy password "
    "(HTTPS_PROXY=http://x:<agent token>@<gateway>)."
)


class _Stop(Exception):
    """Raised from a parser callback to stop parsing a connection that is closing."""


class ClientConnection(asyncio.BufferedProtocol):
    __slots__ = (
        "server",
        "loop",
        "now",
        "transport",
        "peer",
        "mode",
        "parser",
        "tunnel",
        "tunnel_token",
        "current",
        "parsing",
        "queue",
        "idle_since",
        "last_read",
        "write_paused_since",
        "closing",
        "closed",
        "in_head",
        "head_size",
        "head_reads",
        "head_started",
        "_url",
        "_raw",
        "_pause_mask",
        "_corked",
        "_out",
        "_setup",
        "_setup_task",
        "_held",
    )

    def __init__(self, server: "ProxyServer") -> None:
        self.server = server
        self.loop = server.loop
        self.now = server.loop.time
        self.transport: Any = None
        self.peer: tuple[str, int] = ("", 0)
        self.mode = PLAIN
        self.parser = httptools.HttpRequestParser(self)
        self.tunnel: tuple[str, int] | None = None
        self.tunnel_token: str | None = None
        self.current: Exchange | None = None
        self.parsing: Exchange | None = None
        self.queue: collections.deque[Exchange] | None = None
        self.idle_since = 0.0
        self.last_read = 0.0
        self.write_paused_since: float | None = None
        self.closing = False
        self.closed = False
        self.in_head = False
        self.head_size = 0
        self.head_reads = 0
        self.head_started = 0.0
        self._url = b""
        self._raw: list[tuple[bytes, bytes]] = []
        self._pause_mask = 0
        self._corked = False
        self._out: list[bytes] = []
        self._setup: tuple[str, int, str | None] | None = None
        self._setup_task: asyncio.Task[None] | None = None
        self._held: bytes | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        _set_nodelay(transport)
        limits = self.server.limits
        transport.set_write_buffer_limits(limits.write_high_water, limits.write_low_water)  # type: ignore[attr-defined]
        peer = transport.get_extra_info("peername")
        if peer:
            self.peer = (str(peer[0]), int(peer[1]))
        self.idle_since = self.last_read = self.now()
        self.server.connection_opened(self)
        if self.server.draining:
            self.close()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.server.read_buffer

    def buffer_updated(self, nbytes: int) -> None:
        # The buffer is shared by every connection of the server: nothing may keep a view of it.
        self.data_received(self.server.read_buffer[:nbytes])

    def data_received(self, data: bytes | memoryview) -> None:
        self.last_read = self.now()
        if self.mode == SWITCHED:
            current = self.current
            if current is not None:
                current.relay_to_upstream(bytes(data))
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade as switch:
            self._after_upgrade(bytes(data[switch.args[0] :]))
        except httptools.HttpParserCallbackError as error:
            if not self.closed:
                if error.__context__ is not None and not isinstance(error.__context__, _Stop):
                    log_failure("request parsing failed", error.__context__)
                self._malformed()
        except httptools.HttpParserError:
            self._malformed()
        if self.in_head and not self.closed:
            # A head still incomplete after this read: bound what the parser may be holding.
            self.head_reads += len(data)
            if self.head_reads > self.server.limits.max_head_bytes:
                self._reject_now("headers_too_large", "the request head is too large")

    def eof_received(self) -> bool | None:
        # An agent that half-closes after its request still gets the response (TLS cannot half-close).
        if self.mode == PLAIN and self.current is not None:
            self.closing = True
            return True
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._gone()

    def pause_writing(self) -> None:
        self.write_paused_since = self.now()
        self.server.stats.note_client_buffer(self.transport)
        current = self.current
        if current is not None and current.upstream is not None:
            current.upstream.pause_reading()

    def resume_writing(self) -> None:
        self.write_paused_since = None
        current = self.current
        if current is not None and current.upstream is not None:
            current.upstream.resume_reading()

    # httptools callbacks

    def on_message_begin(self) -> None:
        if self.closed:
            raise _Stop
        self.in_head = True
        self.head_size = self.head_reads = 0
        self.head_started = self.last_read
        self._url = b""
        self._raw = []

    def on_url(self, url: bytes) -> None:
        self._url += url
        self.head_size += len(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._raw.append((name, value))
        self.head_size += len(name) + len(value) + 4

    def on_headers_complete(self) -> None:
        if self.closed:
            raise _Stop
        self.in_head = False
        if self.head_size > self.server.limits.max_head_bytes:
            self._reject_now("headers_too_large", "the request head is too large")
            raise _Stop
        parser = self.parser
        method = parser.get_method().decode("ascii")
        url = self._url.decode("latin-1")
        raw = self._raw
        self._raw = []
        if method == "CONNECT":
            self._connect_requested(url, raw)
            return
        head = wire.split_request_headers(raw)
        http11 = parser.get_http_version() == "1.1"
        keep_alive = parser.should_keep_alive()
        mode = self.mode
        canned: tuple[bytes, int, str | None] | None = None
        if mode == TUNNEL:
            scheme = "https"
            host, port = self.tunnel  # type: ignore[misc]
            target = url
            if not url.startswith("/") and url != "*":
                try:
                    _, url_host, url_port, target = wire.split_absolute_url(url)
                except ValueError:
                    url_host, url_port = "", 0
                if (url_host, url_port) != (host, port):
                    canned = self._bad("the request target does not match the tunnel's host")
        elif url.startswith("/") or url == "*":
            scheme, host, port, target = "http", "", 0, url
            if method == "GET" and url.partition("?")[0] == "/healthz":
                canned = (wire.HEALTH_RESPONSE, 200, None)
            else:
                canned = self._bad("send absolute-form requests (http://host/path) or CONNECT to the proxy")
        else:
            try:
                scheme, host, port, target = wire.split_absolute_url(url)
            except ValueError:
                scheme, host, port, target = "http", "", 0, "/"
                canned = self._bad("the request target is not a valid http:// or https:// URL")
        exchange = Exchange(
            self,
            method,
            target,
            scheme,
            host,
            port,
            head,
            keep_alive=keep_alive,
            http11=http11,
            tunneled=mode == TUNNEL,
            buffer_limit=self.server.limits.request_buffer,
        )
        if canned is not None:
            exchange.canned = canned
            exchange.close_after = exchange.close_after or canned[1] >= 400
        self.parsing = exchange
        if self.current is None:
            self.current = exchange
            self._start(exchange)
        else:
            if self.queue is None:
                self.queue = collections.deque()
            self.queue.append(exchange)
            self.pause_reading(PAUSE_QUEUED)

    def on_body(self, body: bytes) -> None:
        exchange = self.parsing
        if exchange is not None:
            exchange.client_body(body)

    def on_message_complete(self) -> None:
        exchange = self.parsing
        if exchange is not None:
            self.parsing = None
            exchange.client_body_end()

    # writing to the agent

    def send(self, data: bytes) -> None:
        if self._corked:
            self._out.append(data)
        elif not self.closed:
            self.transport.write(data)
            if self.write_paused_since is not None:
                self.server.stats.note_client_buffer(self.transport)

    def cork(self) -> None:
        """Collect what one upstream read produces into one write (one TLS record, one syscall)."""
        self._corked = True

    def flush(self) -> None:
        self._corked = False
        out = self._out
        if out:
            data = out[0] if len(out) == 1 else b"".join(out)
            out.clear()
            self.send(data)

    def pause_reading(self, reason: int) -> None:
        if not self._pause_mask and not self.closed:
            self.transport.pause_reading()
        self._pause_mask |= reason

    def resume_reading(self, reason: int) -> None:
        if self._pause_mask & reason:
            self._pause_mask &= ~reason
            if not self._pause_mask and not self.closed:
                self.transport.resume_reading()

    def close(self) -> None:
        """Close after what was written reaches the agent."""
        if self.closed:
            return
        self.flush()
        transport = self.transport
        self._gone()
        transport.close()

    def abort(self, error: str | None = None) -> None:
        """Reset the connection now; `error` labels the request in flight, if any."""
        if self.closed:
            return
        current = self.current
        if error is not None and current is not None and current.error is None:
            current.error = error
        transport = self.transport
        self._out.clear()
        self._gone()
        transport.abort()

    # the request lifecycle

    def _start(self, exchange: Exchange) -> None:
        canned = exchange.canned
        if canned is not None:
            payload, status, error = canned
            exchange.answer(payload, status, error)
            return
        decide_now = self.server.decide_now
        if decide_now is not None:
            # Warm requests are decided and sent from this callback: no Task, no extra loop turn.
            try:
                outcome = decide_now(self._token(exchange), self._proxy_request(exchange))
                if outcome is not None:
                    exchange.identity, decision = outcome
                    head = self._act(exchange, decision)
                    if head is not None:
                        exchange.phase = CONNECTING
                        exchange.task = self.loop.create_task(self._connect(exchange, head))
                    return
            except Exception as error:  # noqa: BLE001 - same outcomes as the awaited path
                self._failed(exchange, error)
                return
        exchange.task = self.loop.create_task(self._serve(exchange))

    def _token(self, exchange: Exchange) -> str | None:
        if self.mode == TUNNEL:
            return self.tunnel_token
        return wire.proxy_token(exchange.proxy_authorization)

    def _proxy_request(self, exchange: Exchange) -> ProxyRequest:
        return ProxyRequest(
            exchange.scheme,
            exchange.host,
            exchange.port,
            exchange.method,
            exchange.target,
            exchange.headers,
            self.peer,
            RequestBody(exchange),
            exchange.tunneled,
        )

    def _act(self, exchange: Exchange, decision: Forward | Respond) -> bytes | None:
        """Carry out a hook's decision; returns the request head still waiting for a new upstream connection."""
        exchange.note = getattr(decision, "note", None)
        if isinstance(decision, Forward):
            head = self._request_head(exchange, decision)
            exchange.observer = decision.observer
            upstream = self.server.pool.take(exchange.key)
            if upstream is None:
                return head
            exchange.attach(upstream, head)
        elif isinstance(decision, Respond):
            exchange.respond(decision.status, decision.headers, decision.body, decision.error)
        else:
            raise TypeError(f"on_request returned {type(decision).__name__}, not Forward or Respond")
        return None

    async def _connect(self, exchange: Exchange, head: bytes) -> None:
        try:
            upstream = await self.server.pool.connect(exchange.key)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001
            self._failed(exchange, error)
            return
        if exchange.phase == DONE:
            self.server.pool.give_back(upstream)
            return
        exchange.attach(upstream, head)

    def _failed(self, exchange: Exchange, error: Exception) -> None:
        if isinstance(error, UpstreamError):
            exchange.fail(error.code, error.message)
        elif isinstance(error, BodyUnavailable):
            exchange.fail("request_timeout", "the request body did not arrive")
        elif isinstance(error, wire.UnsafeHeader):
            log.error("refused to forward a request: %s", error)
            exchange.fail("internal_error", "the gateway could not build the upstream request")
        else:
            log_failure("proxy hook failed", error)
            exchange.fail("internal_error", "the gateway failed to process the request")

    async def _serve(self, exchange: Exchange) -> None:
        hooks = self.server.hooks
        try:
            identity = await hooks.authenticate(self._token(exchange))
            if identity is None:
                exchange.fail("proxy_auth_required", _AUTH_MESSAGE)
                return
            exchange.identity = identity
            decision = await hooks.on_request(identity, self._proxy_request(exchange))
            head = self._act(exchange, decision)
            if head is None:
                return
            exchange.phase = CONNECTING
            upstream = await self.server.pool.connect(exchange.key)
            if exchange.phase == DONE:
                self.server.pool.give_back(upstream)
                return
            exchange.attach(upstream, head)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 - every failure answers the agent in the spec's shape
            self._failed(exchange, error)

    def _request_head(self, exchange: Exchange, decision: Forward) -> bytes:
        if exchange.chunked_in:
            framing = "Transfer-Encoding: chunked\r\n"
        elif exchange.content_length is not None:
            framing = f"Content-Length: {exchange.content_length}\r\n"
        else:
            framing = ""
        connection = f"Connection: Upgrade\r\nUpgrade: {exchange.upgrade}\r\n" if exchange.upgrade else ""
        return wire.request_head(
            decision.method,
            decision.target,
            wire.host_header(exchange.scheme, exchange.host, exchange.port),
            decision.headers,
            framing,
            connection,
        )

    def retry(self, exchange: Exchange) -> None:
        """Send a replayable request again on a fresh connection (the reused one died unanswered)."""
        exchange.phase = CONNECTING
        exchange.task = self.loop.create_task(self._redispatch(exchange))

    async def _redispatch(self, exchange: Exchange) -> None:
        try:
            upstream = await self.server.pool.connect(exchange.key)
        except UpstreamError as error:
            exchange.fail(error.code, error.message)
            return
        if exchange.phase == DONE:
            self.server.pool.give_back(upstream)
            return
        exchange.attach(upstream, exchange.request_head)

    def exchange_finished(self, exchange: Exchange) -> None:
        """The response to `exchange` went out in full: record it and move to the next request."""
        exchange.phase = DONE
        self.record(exchange)
        if exchange is not self.current:
            return
        self.current = None
        self.resume_reading(PAUSE_UPSTREAM_FULL)
        if self.parsing is None or self.parsing is exchange:
            self.resume_reading(PAUSE_BUFFER_FULL)
        if self.closed:
            return
        if exchange.close_after or not exchange.body_done or self.closing:
            self.close()
            return
        queue = self.queue
        if queue:
            following = queue.popleft()
            if not queue:
                self.resume_reading(PAUSE_QUEUED)
            self.current = following
            self._start(following)
            return
        self.idle_since = self.now()
        held = self._held
        if held is not None:
            # An Upgrade request was answered without switching: what followed it is HTTP again.
            self._held = None
            self.resume_reading(PAUSE_UPGRADE)
            if held:
                self.loop.call_soon(self._feed_held, held)

    def _feed_held(self, data: bytes) -> None:
        if not self.closed:
            self.data_received(data)

    def record(self, exchange: Exchange) -> None:
        if exchange.recorded or exchange.canned is not None and exchange.canned[1] == 200:
            return
        exchange.recorded = True
        self._emit(
            exchange.identity,
            RequestRecord(
                exchange.method,
                exchange.scheme,
                exchange.host,
                exchange.port,
                exchange.target.partition("?")[0],
                exchange.status,
                exchange.bytes_in,
                exchange.bytes_out,
                time.monotonic() - exchange.started,
                exchange.error,
                self.peer,
                exchange.tunneled,
                exchange.note,
            ),
        )

    def _emit(self, identity: Any, record: RequestRecord) -> None:
        try:
            self.server.hooks.on_complete(identity, record)
        except Exception as error:
            log_failure("on_complete hook failed", error)

    def start_relay(self, exchange: Exchange) -> None:
        self.mode = SWITCHED
        held = self._held
        self._held = None
        if held:
            exchange.relay_to_upstream(held)
        self.resume_reading(PAUSE_UPGRADE)

    def _after_upgrade(self, rest: bytes) -> None:
        """The parser stopped at CONNECT or at an Upgrade request; `rest` is what followed the head."""
        if self.closed:
            return
        if self.mode == SETUP:
            if rest:
                self._reject_now("bad_request", "data arrived before the tunnel was established")
                return
            self.pause_reading(PAUSE_SETUP)
            self._setup_task = self.loop.create_task(self._open_tunnel(*self._setup))  # type: ignore[misc]
            return
        # The rest belongs to the new protocol if the upstream switches, else to the next HTTP request.
        self.parser = httptools.HttpRequestParser(self)
        self._held = rest
        self.pause_reading(PAUSE_UPGRADE)

    # CONNECT

    def _connect_requested(self, authority: str, raw: list[tuple[bytes, bytes]]) -> None:
        started = time.monotonic()
        if self.mode != PLAIN or self.current is not None:
            self._reject_now("bad_request", "CONNECT is only accepted on an idle proxy connection")
            raise _Stop
        try:
            host, port = wire.split_authority(authority, 443)
        except ValueError:
            self._connect_failed("", 0, started, 400, "bad_request", None)
            self._reject_now("bad_request", "the CONNECT target is not a valid host:port")
            raise _Stop from None
        authorization = next((value for name, value in raw if name.lower() == b"proxy-authorization"), None)
        self.mode = SETUP
        self._setup = (host, port, wire.proxy_token(authorization), started)  # type: ignore[assignment]

    async def _open_tunnel(self, host: str, port: int, token: str | None, started: float) -> None:
        server = self.server
        try:
            identity = await server.hooks.authenticate(token)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            log_failure("proxy authenticate hook failed", error)
            self._connect_failed(host, port, started, 500, "internal_error", None)
            self._reject_now("internal_error", "the gateway failed to authenticate the request")
            return
        if self.closed:
            return
        if identity is None:
            self._connect_failed(host, port, started, 407, "proxy_auth_required", None)
            self._reject_now("proxy_auth_required", _AUTH_MESSAGE)
            return
        self.transport.write(wire.TUNNEL_ESTABLISHED)
        try:
            context = server.certificates.server_context(host)
            transport = await self.loop.start_tls(
                self.transport,
                self,
                context,
                server_side=True,
                ssl_handshake_timeout=server.timeouts.client_tls_handshake,
                ssl_shutdown_timeout=5.0,
            )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if not isinstance(error, (OSError, TimeoutError)):
                log.warning("TLS handshake with an agent failed: %s", type(error).__name__)
            self._connect_failed(host, port, started, 200, "client_tls_error", identity)
            self.abort()
            return
        if self.closed:
            transport.abort()
            return
        self.transport = transport
        transport.set_write_buffer_limits(server.limits.write_high_water, server.limits.write_low_water)
        self._pause_mask = 0
        self._setup = None
        self._setup_task = None
        self.parser = httptools.HttpRequestParser(self)
        self.tunnel = (host, port)
        self.tunnel_token = token
        self.mode = TUNNEL
        self.idle_since = self.last_read = self.now()
        if self.closing:
            self.close()

    def _connect_failed(
        self, host: str, port: int, started: float, status: int, error: str, identity: Any
    ) -> None:
        self._emit(
            identity,
            RequestRecord(
                method="CONNECT",
                scheme="https",
                host=host,
                port=port,
                path="",
                status=status,
                bytes_in=0,
                bytes_out=0,
                duration=time.monotonic() - started,
                error=error,
                client=self.peer,
                tunneled=False,
            ),
        )

    # failures and timeouts

    def _bad(self, message: str) -> tuple[bytes, int, str]:
        return (wire.error_response("bad_request", message, close=True), 400, "bad_request")

    def _reject_now(self, code: str, message: str) -> None:
        """Answer an error outside any exchange (or cutting the current one short) and close."""
        if self.closed:
            return
        current = self.current
        if current is not None and current.phase != DONE:
            if current.phase >= RESPONDING:  # a response is half-written: only a reset is honest
                current.abort(code)
                return
            current.error = current.error or code
            current.client_lost()
        self.send(wire.error_response(code, message, close=True))
        self.close()

    def _malformed(self) -> None:
        self._reject_now("bad_request", "the request is not valid HTTP/1.1")

    def check_timeouts(self, now: float) -> None:
        if self.closed:
            return
        timeouts = self.server.timeouts
        current = self.current
        if current is not None:
            current.check_timeouts(now, timeouts)
            return
        if self.mode == SETUP:
            return
        if self.in_head:
            if now - self.head_started > timeouts.client_header:
                self._reject_now("request_timeout", "the request head did not arrive in time")
        elif now - self.idle_since > timeouts.client_idle:
            self.close()

    def begin_shutdown(self) -> None:
        """Stop taking requests: close now when idle, else after the response in flight."""
        self.closing = True
        if self.mode == SETUP:
            task = self._setup_task
            if task is not None:
                task.cancel()
            self.abort()
        elif self.current is None:
            self.close()

    def _gone(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.mode = CLOSED
        self._corked = False
        task = self._setup_task
        if task is not None and not task.done():
            task.cancel()
        current = self.current
        self.current = None
        if current is not None:
            current.client_lost()
        queue = self.queue
        if queue:
            for exchange in queue:
                exchange.phase = DONE
            queue.clear()
        self.parsing = None
        self.server.connection_closed(self)
