"""One proxied request/response: request body buffering and forwarding, response re-framing, failures."""
from __future__ import annotations

import asyncio
import logging
import time
import traceback
from typing import TYPE_CHECKING, Any

from credgate_gateway.proxy import wire
from credgate_gateway.proxy.hooks import BodyUnavailable, ResponseObserver

if TYPE_CHECKING:
    from credgate_gateway.proxy.client import ClientConnection
    from credgate_gateway.proxy.config import Timeouts
    from credgate_gateway.proxy.upstream import OriginKey, UpstreamConnection

log = logging.getLogger("credgate.gateway.proxy")


def log_failure(what: str, error: BaseException) -> None:
    """Log where a hook or observer failed, without its message (which might quote a credential)."""
    frames = "".join(traceback.format_tb(error.__traceback__))
    log.error("%s: %s\n%s", what, type(error).__name__, frames.rstrip())

# Phases of an exchange, in order.
HOOKS = 0  # authenticate + on_request running
CONNECTING = 1  # waiting for a new upstream connection
SENT = 2  # request head sent upstream, waiting for the response head
RESPONDING = 3  # response head sent to the agent, body streaming
RELAY = 4  # protocol switched (101): raw bytes both ways
DONE = 5

# Reasons the agent's connection is not being read (a bit mask in ClientConnection).
PAUSE_UPSTREAM_FULL = 1  # the upstream is not draining the request body
PAUSE_BUFFER_FULL = 2  # request body buffered up to the limit while the hooks decide
PAUSE_QUEUED = 4  # a pipelined request waits behind the current one
PAUSE_SETUP = 8  # CONNECT being answered
PAUSE_UPGRADE = 16  # bytes after an Upgrade request are held until the upstream answers

_LAST_CHUNK = b"0\r\n\r\n"
_CHUNKED = b"Transfer-Encoding: chunked\r\n"
_CLOSE = b"Connection: close\r\n"
_NO_BODY_STATUS = (204, 304)
_REPLAYABLE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "DELETE", "TRACE"})


class RequestBody:
    """The BodyPeek a hook sees."""

    __slots__ = ("_exchange", "has_body", "length")

    def __init__(self, exchange: "Exchange") -> None:
        self._exchange = exchange
        self.has_body = exchange.has_body
        self.length = exchange.content_length

    async def peek(self, max_bytes: int) -> bytes:
        return await self._exchange.peek(max_bytes)


class Exchange:
    __slots__ = (
        "client",
        "method",
        "target",
        "scheme",
        "host",
        "port",
        "key",
        "tunneled",
        "headers",
        "proxy_authorization",
        "keep_alive",
        "http11",
        "has_body",
        "content_length",
        "chunked_in",
        "expect_continue",
        "continue_sent",
        "upgrade",
        "pending",
        "pending_size",
        "buffer_limit",
        "body_done",
        "body_done_at",
        "forwarding",
        "peek_waiter",
        "peek_target",
        "upstream",
        "request_head",
        "attempts",
        "observer",
        "phase",
        "sent_at",
        "status",
        "chunked_out",
        "until_close",
        "upstream_close",
        "close_after",
        "switch_head",
        "started",
        "bytes_in",
        "bytes_out",
        "error",
        "identity",
        "task",
        "recorded",
        "canned",
        "note",
    )

    def __init__(
        self,
        client: "ClientConnection",
        method: str,
        target: str,
        scheme: str,
        host: str,
        port: int,
        head: wire.RequestHead,
        *,
        keep_alive: bool,
        http11: bool,
        tunneled: bool,
        buffer_limit: int,
    ) -> None:
        self.client = client
        self.method = method
        self.target = target
        self.scheme = scheme
        self.host = host
        self.port = port
        self.key: OriginKey = (scheme, host, port)
        self.tunneled = tunneled
        self.headers = head.headers
        self.proxy_authorization = head.proxy_authorization
        self.keep_alive = keep_alive
        self.http11 = http11
        self.content_length = head.content_length
        self.chunked_in = head.chunked
        self.has_body = head.chunked or bool(head.content_length)
        self.expect_continue = head.expect_continue and self.has_body
        self.continue_sent = False
        self.upgrade = head.upgrade
        self.pending: list[bytes] = []
        self.pending_size = 0
        self.buffer_limit = buffer_limit
        self.body_done = not self.has_body
        self.body_done_at = 0.0
        self.forwarding = False
        self.peek_waiter: asyncio.Future[None] | None = None
        self.peek_target = 0
        self.upstream: UpstreamConnection | None = None
        self.request_head = b""
        self.attempts = 0
        self.observer: ResponseObserver | None = None
        self.phase = HOOKS
        self.sent_at = 0.0
        self.status = 0
        self.chunked_out = False
        self.until_close = False
        self.upstream_close = False
        self.close_after = not keep_alive
        self.switch_head: wire.ResponseHead | None = None
        self.started = time.monotonic()
        self.bytes_in = 0
        self.bytes_out = 0
        self.error: str | None = None
        self.identity: Any = None
        self.task: asyncio.Task[None] | None = None
        self.recorded = False
        self.canned: tuple[bytes, int, str | None] | None = None
        self.note: Any = None

    # request body, from the agent

    def client_body(self, data: bytes) -> None:
        size = len(data)
        self.bytes_in += size
        if self.forwarding:
            upstream = self.upstream
            if upstream is not None:
                upstream.send(b"%x\r\n%b\r\n" % (size, data) if self.chunked_in else data)
            return
        if self.phase == DONE:
            return
        self.pending.append(data)
        self.pending_size += size
        stats = self.client.server.stats
        if self.pending_size > stats.peak_request_buffer:
            stats.peak_request_buffer = self.pending_size
        waiter = self.peek_waiter
        if waiter is not None and self.pending_size >= self.peek_target and not waiter.done():
            waiter.set_result(None)
        if self.pending_size >= self.buffer_limit:
            self.client.pause_reading(PAUSE_BUFFER_FULL)

    def client_body_end(self) -> None:
        self.body_done = True
        self.body_done_at = self.client.now()
        if self.forwarding:
            upstream = self.upstream
            if self.chunked_in and upstream is not None:
                upstream.send(_LAST_CHUNK)
            return
        waiter = self.peek_waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def peek(self, max_bytes: int) -> bytes:
        if self.forwarding or self.phase != HOOKS:
            raise RuntimeError("the request body can only be peeked inside on_request")
        client = self.client
        while self.pending_size < max_bytes and not self.body_done:
            if client.closed:
                raise BodyUnavailable("the client went away")
            self.peek_target = max_bytes
            if max_bytes > self.buffer_limit:
                self.buffer_limit = max_bytes
            self.send_continue()
            client.resume_reading(PAUSE_BUFFER_FULL)
            waiter = client.loop.create_future()
            self.peek_waiter = waiter
            try:
                await waiter
            finally:
                self.peek_waiter = None
        if len(self.pending) > 1:
            self.pending = [b"".join(self.pending)]
        return self.pending[0][:max_bytes] if self.pending else b""

    def send_continue(self) -> None:
        if self.expect_continue and not self.continue_sent and not self.body_done:
            self.continue_sent = True
            self.client.send(wire.CONTINUE)

    # sending upstream

    def attach(self, upstream: "UpstreamConnection", head: bytes) -> None:
        """Start the request on `upstream`: head, any buffered body, then stream the rest."""
        client = self.client
        self.upstream = upstream
        upstream.exchange = self
        self.request_head = head
        self.attempts += 1
        self.phase = SENT
        if client.write_paused_since is not None:
            upstream.pause_reading()
        data = head
        if self.pending:
            if self.chunked_in:
                data += b"".join([b"%x\r\n%b\r\n" % (len(chunk), chunk) for chunk in self.pending])
            else:
                data += b"".join(self.pending)
            self.pending = []
            self.pending_size = 0
        if self.body_done and self.chunked_in:
            data += _LAST_CHUNK
        self.forwarding = True
        self.sent_at = client.now()
        upstream.send(data)
        if not self.body_done:
            self.send_continue()
            client.resume_reading(PAUSE_BUFFER_FULL)

    def replayable(self) -> bool:
        """A request that may go again on a fresh connection when a reused one died before answering."""
        return (
            self.attempts == 1
            and not self.has_body
            and self.status == 0
            and self.method in _REPLAYABLE_METHODS
        )

    def upstream_full(self) -> None:
        self.client.pause_reading(PAUSE_UPSTREAM_FULL)
        self.client.server.stats.note_upstream_buffer(self.upstream)

    def upstream_drained(self) -> None:
        self.client.resume_reading(PAUSE_UPSTREAM_FULL)

    # response, from the upstream

    def upstream_head(self, upstream: "UpstreamConnection", status: int, reason: bytes, raw: list[tuple[bytes, bytes]]) -> None:
        if upstream is not self.upstream:
            return
        head = wire.split_response_headers(raw)
        self.status = status
        if status == 101:
            self.switch_head = head
            return
        client = self.client
        self.phase = RESPONDING
        self.upstream_close = head.close
        close = self.close_after or client.closing or not self.body_done
        framing = b""
        lines = head.lines
        if self.method == "HEAD" or status in _NO_BODY_STATUS:
            pass
        elif head.content_length is not None and not head.chunked:
            pass
        else:
            self.until_close = not head.chunked
            if head.content_length is not None:
                lines = [line for line in lines if not line[:15].lower() == b"content-length:"]
            if self.http11:
                framing = _CHUNKED
                self.chunked_out = True
            else:
                close = True
        self.close_after = close
        client.send(
            b"".join(
                (
                    b"HTTP/1.1 %d %s\r\n" % (status, reason or wire.reason_phrase(status)),
                    *lines,
                    framing,
                    _CLOSE if close else b"",
                    b"\r\n",
                )
            )
        )
        observer = self.observer
        if observer is not None:
            try:
                observer.on_head(status, _header_pairs(lines))
            except Exception as error:
                self._drop_observer("on_head", error)

    def upstream_body(self, data: bytes) -> None:
        size = len(data)
        self.bytes_out += size
        observer = self.observer
        if observer is not None:
            try:
                observer.on_chunk(data)
            except Exception as error:
                self._drop_observer("on_chunk", error)
        if self.chunked_out:
            self.client.send(b"%x\r\n%b\r\n" % (size, data))
        else:
            self.client.send(data)

    def upstream_done(self, upstream: "UpstreamConnection", keep_alive: bool) -> None:
        if upstream is not self.upstream:
            return
        self.upstream = None
        if keep_alive and not self.upstream_close and self.body_done and not upstream.closed:
            self.client.server.pool.give_back(upstream)
        else:
            upstream.close()
        self._response_complete()

    def upstream_lost(self, upstream: "UpstreamConnection") -> None:
        """The upstream connection closed under this exchange."""
        if upstream is not self.upstream:
            return
        self.upstream = None
        phase = self.phase
        if phase == SENT:
            if upstream.reused and self.replayable():
                self.client.retry(self)
            else:
                self.fail("upstream_unreachable", "the upstream closed the connection without responding")
        elif phase == RESPONDING:
            if self.until_close:
                self._response_complete()
            else:
                self.abort("upstream_closed")
        elif phase == RELAY:
            self.client.close()

    def upstream_broken(self, upstream: "UpstreamConnection") -> None:
        """The upstream sent something that is not HTTP/1.1."""
        self.upstream = None
        upstream.abort()
        if self.phase == SENT:
            self.fail("upstream_protocol_error", "the upstream sent an invalid response")
        else:
            self.abort("upstream_protocol_error")

    def upstream_switched(self, upstream: "UpstreamConnection", rest: bytes) -> None:
        """101 Switching Protocols: from here on bytes are relayed untouched both ways."""
        head = self.switch_head
        if upstream is not self.upstream or head is None or self.upgrade is None:
            self.upstream_broken(upstream)
            return
        client = self.client
        self.phase = RELAY
        upstream.relaying = True
        client.send(
            b"".join(
                (
                    b"HTTP/1.1 101 Switching Protocols\r\n",
                    *head.lines,
                    b"Connection: Upgrade\r\nUpgrade: %s\r\n\r\n" % (head.upgrade or self.upgrade.encode("latin-1")),
                )
            )
        )
        if rest:
            self.relay_to_client(rest)
        client.start_relay(self)

    def relay_to_client(self, data: bytes) -> None:
        self.bytes_out += len(data)
        self.client.send(data)

    def relay_to_upstream(self, data: bytes) -> None:
        self.bytes_in += len(data)
        upstream = self.upstream
        if upstream is not None:
            upstream.send(data)

    def _response_complete(self) -> None:
        if self.chunked_out:
            self.client.send(_LAST_CHUNK)
        self._end_observer(True)
        self.client.exchange_finished(self)

    # answers and failures

    def must_close(self) -> bool:
        """Whether the agent's connection ends after this response (unread body, Connection: close...)."""
        return self.close_after or not self.body_done or self.client.closing

    def respond(self, status: int, headers: list[tuple[str, str]], body: bytes, error: str | None) -> None:
        """The gateway answers in place of the upstream."""
        payload = wire.simple_response(status, headers, body, close=self.must_close())
        self.answer(payload, status, error)

    def answer(self, payload: bytes, status: int, error: str | None) -> None:
        if self.phase == DONE:
            return
        self.status = status
        self.error = error
        self.close_after = self.must_close()
        self.bytes_out += len(payload) - (payload.find(b"\r\n\r\n") + 4)  # the body after the head
        self.client.send(payload)
        self.client.exchange_finished(self)

    def fail(self, code: str, message: str) -> None:
        """Answer a JSON error if no response head went out yet, else cut the response short."""
        if self.phase == DONE:
            return
        upstream = self.upstream
        if upstream is not None:
            self.upstream = None
            upstream.abort()
        if self.phase >= RESPONDING:
            self.abort(code)
            return
        self.answer(wire.error_response(code, message, close=self.must_close()), wire.ERROR_STATUS[code], code)

    def abort(self, code: str | None) -> None:
        """Tear down both sides; the agent sees a truncated response."""
        if self.phase == DONE:
            return
        if code is not None and self.error is None:
            self.error = code
        upstream = self.upstream
        if upstream is not None:
            self.upstream = None
            upstream.abort()
        self._end_observer(False)
        self.phase = DONE
        self.client.record(self)
        self.client.abort()

    def client_lost(self) -> None:
        if self.phase == DONE:
            return
        task = self.task
        if task is not None and not task.done():
            task.cancel()
        waiter = self.peek_waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(BodyUnavailable("the client went away"))
        upstream = self.upstream
        if upstream is not None:
            self.upstream = None
            if self.phase == RELAY:
                upstream.close()
            else:
                upstream.abort()
        if self.phase != RELAY and self.error is None:
            self.error = "client_closed"
        self._end_observer(False)
        self.phase = DONE
        self.client.record(self)

    def check_timeouts(self, now: float, timeouts: "Timeouts") -> None:
        phase = self.phase
        client = self.client
        if phase == HOOKS:
            waiter = self.peek_waiter
            if waiter is not None and not waiter.done() and now - client.last_read > timeouts.stream_idle:
                waiter.set_exception(BodyUnavailable("the request body stalled"))
            return
        upstream = self.upstream
        if phase == SENT and upstream is not None:
            if not self.body_done:
                if upstream.write_paused_since is not None:
                    if now - upstream.write_paused_since > timeouts.stream_idle:
                        self.fail("upstream_timeout", "the upstream stopped reading the request body")
                elif now - client.last_read > timeouts.stream_idle:
                    self.fail("request_timeout", "the request body stalled")
            elif now - max(self.sent_at, self.body_done_at) > timeouts.upstream_response:
                self.fail("upstream_timeout", "the upstream did not answer in time")
        elif phase == RESPONDING and upstream is not None:
            if client.write_paused_since is not None:
                if now - client.write_paused_since > timeouts.stream_idle:
                    self.abort("client_stalled")
            elif now - upstream.last_read > timeouts.stream_idle:
                self.abort("upstream_timeout")
        elif phase == RELAY and upstream is not None:
            if now - max(upstream.last_read, client.last_read) > timeouts.client_idle:
                client.close()

    def _end_observer(self, complete: bool) -> None:
        observer = self.observer
        if observer is not None and self.phase >= RESPONDING and self.phase != RELAY:
            self.observer = None
            try:
                observer.on_end(complete)
            except Exception as error:
                log_failure("response observer failed in on_end", error)

    def _drop_observer(self, where: str, error: Exception) -> None:
        log_failure(f"response observer failed in {where}; dropped for this response", error)
        self.observer = None


def _header_pairs(lines: list[bytes]) -> list[tuple[str, str]]:
    pairs = []
    for line in lines:
        name, _, value = line[:-2].partition(b": ")
        pairs.append((name.decode("latin-1"), value.decode("latin-1")))
    return pairs
