"""Stand-ins for the engine's surroundings: a test CA, h11 upstream servers, trivial hooks, a raw client."""
from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import socket
import ssl
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable

import h11
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from credgate_gateway.proxy import Forward, ProxyRequest, RequestRecord, Respond

API_HOST = "api.example.test"
TOKEN = "aoc_test"


# A throwaway CA for the fake upstreams


@dataclass
class ThrowawayCA:
    key: ec.EllipticCurvePrivateKey
    cert: x509.Certificate

    @classmethod
    def create(cls, name: str) -> "ThrowawayCA":
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = dt.datetime.now(dt.timezone.utc)
        ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key())
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
            )
            .add_extension(ski, critical=False)
            .sign(key, hashes.SHA256())
        )
        return cls(key, cert)

    def write_cert(self, path: Path) -> Path:
        path.write_bytes(self.cert.public_bytes(serialization.Encoding.PEM))
        return path

    def server_context(self, directory: Path, *hosts: str) -> ssl.SSLContext:
        key = ec.generate_private_key(ec.SECP256R1())
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        now = dt.datetime.now(dt.timezone.utc)
        cert = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, hosts[0])]))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(days=1))
            .not_valid_after(now + dt.timedelta(days=30))
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )
        pem = cert.public_bytes(serialization.Encoding.PEM) + key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        path = directory / f"upstream-{hosts[0]}-{id(key)}.pem"
        path.write_bytes(pem)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(path)
        return context


# A fake upstream: h11 (a strict, independent parser) on a plain asyncio loop in a thread


class UpstreamRequest:
    def __init__(self, upstream: "FakeUpstream", conn: h11.Connection, event: h11.Request, reader, writer) -> None:
        self.upstream = upstream
        self.method = event.method.decode()
        self.target = event.target.decode()
        self.raw_headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in event.headers.raw_items()]
        self.headers = {name.lower(): value for name, value in self.raw_headers}
        self._conn = conn
        self._reader = reader
        self._writer = writer
        self._body_done = False
        self.raw = False
        self.index_on_connection = 0

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def header_names(self) -> set[str]:
        return {name.lower() for name, _ in self.raw_headers}

    async def chunks(self) -> AsyncIterator[bytes]:
        while not self._body_done:
            event = await self.upstream._next_event(self._conn, self._reader)
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self._body_done = True
            elif event is None or isinstance(event, h11.ConnectionClosed):
                raise ConnectionError("client went away mid-body")

    async def body(self) -> bytes:
        return b"".join([chunk async for chunk in self.chunks()])

    async def respond(self, status: int, headers: list[tuple[str, str]] = (), body: bytes = b"") -> None:
        if not any(name.lower() == "content-length" for name, _ in headers):
            headers = [*headers, ("Content-Length", str(len(body)))]
        await self.start(status, headers)
        if body:
            await self.send(body)
        await self.end()

    async def start(self, status: int, headers: list[tuple[str, str]] = ()) -> None:
        if not self._body_done:
            await self.body()
        await self._write(self._conn.send(h11.Response(status_code=status, headers=list(headers))))

    async def send(self, data: bytes) -> None:
        await self._write(self._conn.send(h11.Data(data=data)))

    async def end(self) -> None:
        await self._write(self._conn.send(h11.EndOfMessage()))

    async def send_raw(self, data: bytes) -> None:
        """Bypass h11 (for responses it refuses to produce, like close-delimited bodies)."""
        self.raw = True
        await self._write(data)

    def close(self) -> None:
        self.raw = True
        self._writer.close()

    async def _write(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()


Handler = Callable[[UpstreamRequest], Awaitable[None]]


async def echo(request: UpstreamRequest) -> None:
    body = await request.body()
    await request.respond(200, [("Content-Type", "application/octet-stream"), ("X-Method", request.method)], body)


class FakeUpstream:
    def __init__(self, handler: Handler = echo, *, tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.tls = tls
        self.accepts = 0
        self.requests: list[UpstreamRequest] = []
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="fake-upstream", daemon=True)
        self._server: asyncio.AbstractServer | None = None
        self.port = 0

    def start(self) -> "FakeUpstream":
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls), self.loop
        ).result(10)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        async def close() -> None:
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    def run(self, coroutine: Awaitable[Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(10)

    async def _next_event(self, conn: h11.Connection, reader: asyncio.StreamReader) -> Any:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                data = await reader.read(65536)
                conn.receive_data(data)
                if not data and conn.their_state is not h11.DONE:
                    return None
                continue
            return event

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepts += 1
        conn = h11.Connection(h11.SERVER, max_incomplete_event_size=256 * 1024)
        served = 0
        try:
            while True:
                event = await self._next_event(conn, reader)
                if not isinstance(event, h11.Request):
                    break
                request = UpstreamRequest(self, conn, event, reader, writer)
                request.index_on_connection = served
                served += 1
                self.requests.append(request)
                await self.handler(request)
                if request.raw or conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                    break
                if conn.our_state is not h11.DONE:
                    break
                conn.start_next_cycle()
        except (ConnectionError, h11.RemoteProtocolError, asyncio.CancelledError, ssl.SSLError):
            pass
        finally:
            writer.close()


# Hooks: accept one token, tag forwarded requests, keep every record


class Observer:
    def __init__(self) -> None:
        self.status: int | None = None
        self.headers: list[tuple[str, str]] = []
        self.chunks: list[bytes] = []
        self.complete: bool | None = None

    def on_head(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.status, self.headers = status, headers

    def on_chunk(self, data: bytes) -> None:
        self.chunks.append(data)

    def on_end(self, complete: bool) -> None:
        assert self.complete is None, "on_end called twice"
        self.complete = complete


@dataclass
class RecordingHooks:
    tokens: dict[str, str] = field(default_factory=lambda: {TOKEN: "agent-1"})
    records: list[tuple[Any, RequestRecord]] = field(default_factory=list)
    requests: list[ProxyRequest] = field(default_factory=list)
    observers: list[Observer] = field(default_factory=list)
    auth_calls: list[str | None] = field(default_factory=list)
    decide: Callable[[Any, ProxyRequest], Awaitable[Forward | Respond] | None] | None = None
    records_changed: threading.Condition = field(default_factory=threading.Condition)

    async def authenticate(self, token: str | None) -> Any | None:
        self.auth_calls.append(token)
        return self.tokens.get(token) if token else None

    async def on_request(self, identity: Any, request: ProxyRequest) -> Forward | Respond:
        self.requests.append(request)
        if self.decide is not None:
            decision = await self.decide(identity, request)
            if decision is not None:
                return decision
        observer = Observer()
        self.observers.append(observer)
        return Forward(request.method, request.target, [*request.headers, ("X-Credgate-Agent", identity)], observer)

    def on_complete(self, identity: Any | None, record: RequestRecord) -> None:
        with self.records_changed:
            self.records.append((identity, record))
            self.records_changed.notify_all()

    def wait_records(self, count: int, timeout: float = 10) -> list[RequestRecord]:
        with self.records_changed:
            assert self.records_changed.wait_for(lambda: len(self.records) >= count, timeout), self.records
            return [record for _, record in self.records]


# A raw HTTP/1.1 client for what httpx will not send (absolute-form https://, half-written heads)


class RawClient:
    def __init__(self, port: int, *, tls: ssl.SSLContext | None = None, server_hostname: str | None = None) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        if tls is not None:
            self.sock = tls.wrap_socket(self.sock, server_hostname=server_hostname)
        self.conn = h11.Connection(h11.CLIENT)

    @classmethod
    def tunnel(cls, port: int, tls: ssl.SSLContext, host: str = API_HOST, token: str = TOKEN) -> "RawClient":
        """CONNECT through the proxy, then TLS to the intercepted host."""
        client = cls(port)
        client.sock.sendall(f"CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\nProxy-Authorization: {basic(token)}\r\n\r\n".encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += client.sock.recv(1)
        assert answer.startswith(b"HTTP/1.1 200"), answer
        client.sock = tls.wrap_socket(client.sock, server_hostname=host)
        return client

    def read_head(self) -> bytes:
        """Read one response head byte by byte (leaves the body unread)."""
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            data = self.sock.recv(1)
            if not data:
                break
            head += data
        return head

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def request(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes = b"") -> tuple[h11.Response, bytes]:
        if body:
            headers = [*headers, ("Content-Length", str(len(body)))]
        data = self.conn.send(h11.Request(method=method, target=target, headers=headers))
        if body:
            data += self.conn.send(h11.Data(data=body))
        data += self.conn.send(h11.EndOfMessage())
        self.sock.sendall(data)
        return self.read_response()

    def read_response(self) -> tuple[h11.Response, bytes]:
        response = None
        body = b""
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                self.conn.receive_data(self.sock.recv(65536))
                continue
            if isinstance(event, h11.Response):
                response = event
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                break
        if self.conn.our_state is h11.DONE and self.conn.their_state is h11.DONE:
            self.conn.start_next_cycle()
        return response, body

    def read_until_closed(self) -> bytes:
        chunks = []
        while True:
            try:
                data = self.sock.recv(65536)
            except ConnectionResetError:
                break
            if not data:
                break
            chunks.append(data)
        return b"".join(chunks)

    def close(self) -> None:
        self.sock.close()


def basic(token: str, user: str = "x") -> str:
    import base64

    return "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()
