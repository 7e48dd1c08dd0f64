"""The proxy listener: accepts agents, sweeps timeouts, drains on shutdown."""
from __future__ import annotations

import asyncio
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from credgate_gateway.proxy.client import ClientConnection
from credgate_gateway.proxy.config import ConnectRoutes, Limits, Timeouts
from credgate_gateway.proxy.hooks import ProxyHooks, ServerCertificates
from credgate_gateway.proxy.upstream import UpstreamConnection, UpstreamPool, upstream_tls_context

log = logging.getLogger("credgate.gateway.proxy")

_READ_BUFFER_BYTES = 256 * 1024


@dataclass(slots=True)
class EngineStats:
    accepted: int = 0
    """Agent TCP connections accepted."""
    upstream_connects: int = 0
    """Upstream connections attempted (reuse keeps this low)."""
    peak_client_buffer: int = 0
    """Most bytes ever queued toward one agent (bounded by the high-water mark plus one read)."""
    peak_upstream_buffer: int = 0
    """Most bytes ever queued toward one upstream."""
    peak_request_buffer: int = 0
    """Most request-body bytes ever held for one request while the hooks decided."""

    def note_client_buffer(self, transport: Any) -> None:
        size = transport.get_write_buffer_size()
        if size > self.peak_client_buffer:
            self.peak_client_buffer = size

    def note_upstream_buffer(self, upstream: UpstreamConnection | None) -> None:
        if upstream is not None and upstream.transport is not None:
            size = upstream.transport.get_write_buffer_size()
            if size > self.peak_upstream_buffer:
                self.peak_upstream_buffer = size


class ProxyServer:
    """The intercepting HTTP/1.1 forward proxy.

    `certificates` hands out the TLS server context for each intercepted host (the gateway CA).
    `connect_to` takes curl's HOST:PORT:ADDR:PORT strings; `upstream_ca_bundle` adds trusted roots.
    """

    def __init__(
        self,
        hooks: ProxyHooks,
        certificates: ServerCertificates,
        *,
        host: str = "127.0.0.1",
        port: int = 10255,
        connect_to: Iterable[str] = (),
        upstream_ca_bundle: str | None = None,
        timeouts: Timeouts | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.hooks = hooks
        # Optional synchronous fast path of the hooks (see ProxyHooks.decide_now).
        self.decide_now = getattr(hooks, "decide_now", None)
        self.certificates = certificates
        self.host = host
        self.requested_port = port
        self.routes = ConnectRoutes.parse(connect_to)
        self.upstream_ca_bundle = upstream_ca_bundle
        self.timeouts = timeouts = timeouts or Timeouts()
        self.limits = limits or Limits()
        self.stats = EngineStats()
        self.draining = False
        self.connections: set[ClientConnection] = set()
        self.loop: asyncio.AbstractEventLoop = None  # type: ignore[assignment]
        self.pool: UpstreamPool = None  # type: ignore[assignment]
        self._server: asyncio.AbstractServer | None = None
        self._sweeper: asyncio.TimerHandle | None = None
        self._sweep_every = min(1.0, max(0.02, timeouts.shortest() / 5))
        self._drained: asyncio.Future[None] | None = None
        self._port: int | None = None
        # One read buffer for every connection: reads are handled to completion before the next one,
        # and parsed data is copied out, so sharing it saves a buffer (or an allocation) per read.
        self.read_buffer = memoryview(bytearray(_READ_BUFFER_BYTES))

    @property
    def port(self) -> int:
        """The bound port (useful with port=0)."""
        if self._port is None:
            raise RuntimeError("the proxy is not started")
        return self._port

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self.loop = loop
        self.pool = UpstreamPool(
            loop,
            tls=upstream_tls_context(self.upstream_ca_bundle),
            routes=self.routes,
            timeouts=self.timeouts,
            limits=self.limits,
            stats=self.stats,
            read_buffer=self.read_buffer,
        )
        self._server = await loop.create_server(
            lambda: ClientConnection(self),
            self.host,
            self.requested_port,
            backlog=2048,
            reuse_address=True,
        )
        self._port = self._server.sockets[0].getsockname()[1]
        self._sweeper = loop.call_later(self._sweep_every, self._sweep)
        log.info("gateway proxy listening on %s:%d", self.host, self._port)

    async def shutdown(self, drain_timeout: float = 30.0) -> None:
        """Stop accepting, close idle connections, let requests in flight finish (up to `drain_timeout`)."""
        if self._server is None:
            return
        self.draining = True
        self._server.close()
        for connection in list(self.connections):
            connection.begin_shutdown()
        if self.connections:
            self._drained = self.loop.create_future()
            try:
                async with asyncio.timeout(drain_timeout):
                    await self._drained
            except TimeoutError:
                log.warning("drain timeout: aborting %d connection(s)", len(self.connections))
                for connection in list(self.connections):
                    connection.abort("shutting_down")
        self.pool.close_all()
        if self._sweeper is not None:
            self._sweeper.cancel()
            self._sweeper = None
        server, self._server = self._server, None
        await server.wait_closed()

    # called by connections

    def connection_opened(self, connection: ClientConnection) -> None:
        self.stats.accepted += 1
        self.connections.add(connection)

    def connection_closed(self, connection: ClientConnection) -> None:
        self.connections.discard(connection)
        drained = self._drained
        if drained is not None and not self.connections and not drained.done():
            drained.set_result(None)

    def _sweep(self) -> None:
        now = self.loop.time()
        for connection in list(self.connections):
            try:
                connection.check_timeouts(now)
            except Exception:
                log.exception("timeout check failed")
                connection.abort()
        self.pool.sweep(now)
        self._sweeper = self.loop.call_later(self._sweep_every, self._sweep)


class BackgroundProxy:
    """Runs a ProxyServer on its own uvloop event loop in a thread (tests, embedding in sync code)."""

    def __init__(self, server: ProxyServer, *, loop_factory: Callable[[], asyncio.AbstractEventLoop] | None = None) -> None:
        self.server = server
        self._loop_factory = loop_factory or _new_loop
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.loop: asyncio.AbstractEventLoop | None = None

    def start(self) -> "BackgroundProxy":
        self._thread = threading.Thread(target=self._run, name="credgate-proxy", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        return self

    @property
    def port(self) -> int:
        return self.server.port

    def call(self, function: Callable[..., Any], *args: Any) -> None:
        """Run `function(*args)` on the proxy's loop."""
        assert self.loop is not None
        self.loop.call_soon_threadsafe(function, *args)

    def run(self, coroutine: Any, timeout: float | None = None) -> Any:
        """Run a coroutine on the proxy's loop and wait for its result."""
        assert self.loop is not None
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def stop(self, drain_timeout: float = 5.0) -> None:
        if self.loop is None or self._thread is None:
            return
        try:
            self.run(self.server.shutdown(drain_timeout))
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
            self._thread = None

    def __enter__(self) -> "BackgroundProxy":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _run(self) -> None:
        loop = self._loop_factory()
        self.loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self.server.start())
        except BaseException as error:  # surfaced by start()
            self._error = error
            self._ready.set()
            loop.close()
            return
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.close()


def _new_loop() -> asyncio.AbstractEventLoop:
    import uvloop

    return uvloop.new_event_loop()
