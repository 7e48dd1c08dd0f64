"""Upgrade (WebSocket): after the upstream's 101 the engine relays raw bytes both ways."""
from __future__ import annotations

from .fakes import API_HOST, RawClient, UpstreamRequest

UPGRADE_REQUEST = (
    f"GET /v1/realtime HTTP/1.1\r\nHost: {API_HOST}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
).encode()


async def websocket_echo(request: UpstreamRequest) -> None:
    if request.header("upgrade") != "websocket":
        await request.respond(200, [], b"plain")
        return
    await request.send_raw(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\nhello-from-upstream"
    )
    while data := await request._reader.read(65536):
        request._writer.write(b"echo:" + data)
        await request._writer.drain()


def test_websocket_upgrade_is_relayed_both_ways(setup, agent_tls):
    s = setup(websocket_echo)
    client = RawClient.tunnel(s.proxy.port, agent_tls)
    try:
        client.send_raw(UPGRADE_REQUEST)
        head = client.read_head()
        assert head.startswith(b"HTTP/1.1 101 Switching Protocols\r\n")
        assert b"Upgrade: websocket\r\n" in head and b"Connection: Upgrade\r\n" in head
        assert b"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n" in head
        greeting = b""
        while len(greeting) < len(b"hello-from-upstream"):
            greeting += client.sock.recv(100)
        assert greeting == b"hello-from-upstream"
        client.send_raw(b"frame-1")
        assert client.sock.recv(100) == b"echo:frame-1"
    finally:
        client.close()
    seen = s.upstream.requests[0]
    assert seen.header("upgrade") == "websocket"
    assert seen.header("connection") == "Upgrade"
    assert seen.header("sec-websocket-key") == "dGhlIHNhbXBsZSBub25jZQ=="
    record = s.hooks.wait_records(1)[0]
    assert (record.status, record.error) == (101, None)
    assert record.bytes_in == len(b"frame-1")


def test_an_upgrade_the_upstream_declines_leaves_http_going(setup, agent_tls):
    async def decline(request: UpstreamRequest) -> None:
        await request.respond(200, [], f"plain {request.target}".encode())

    s = setup(decline)
    client = RawClient.tunnel(s.proxy.port, agent_tls)
    try:
        # The second request follows in the same write: held until the first answer shows no switch.
        client.send_raw(UPGRADE_REQUEST + f"GET /next HTTP/1.1\r\nHost: {API_HOST}\r\nConnection: close\r\n\r\n".encode())
        answer = client.read_until_closed()
    finally:
        client.close()
    assert answer.count(b"HTTP/1.1 200 OK\r\n") == 2
    assert b"plain /v1/realtime" in answer and b"plain /next" in answer
