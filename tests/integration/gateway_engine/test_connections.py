"""Connection lifetimes: the upstream pool's idle expiry and bound, agent keep-alive, half-close, HTTP/1.0."""
from __future__ import annotations

import asyncio
import socket
import threading
import time

from credgate_gateway.proxy import Limits, Timeouts

from .fakes import API_HOST, TOKEN, RawClient, UpstreamRequest, basic


def wait_for(condition, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        time.sleep(0.01)


def test_idle_upstream_connections_expire(setup):
    s = setup(timeouts=Timeouts(upstream_pool_idle=0.2))
    pool = s.proxy.server.pool
    with s.client() as client:
        assert client.get(f"https://{API_HOST}/a").status_code == 200
        wait_for(lambda: pool.idle_count == 1)
        wait_for(lambda: pool.idle_count == 0)
        assert client.get(f"https://{API_HOST}/b").status_code == 200
    assert s.upstream.accepts == 2


def test_the_pool_keeps_at_most_its_bound_per_origin(setup):
    both_in = threading.Barrier(2)

    async def concurrent(request: UpstreamRequest) -> None:
        if request.target == "/together":
            await asyncio.get_running_loop().run_in_executor(None, both_in.wait, 10)
        await request.respond(200, [], b"ok")

    s = setup(concurrent, limits=Limits(pool_idle_per_origin=1))
    results = []

    def call():
        with s.client() as client:
            results.append(client.get(f"https://{API_HOST}/together").status_code)

    threads = [threading.Thread(target=call) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert results == [200, 200]
    assert s.upstream.accepts == 2
    assert s.proxy.server.pool.idle_count == 1


def test_an_idle_agent_connection_is_closed(setup):
    s = setup(tls=False, timeouts=Timeouts(client_idle=0.2))
    client = RawClient(s.proxy.port)
    try:
        response, _ = client.request("GET", f"http://{API_HOST}/x", [("Host", API_HOST), ("Proxy-Authorization", basic(TOKEN))])
        assert response.status_code == 200
        assert client.read_until_closed() == b""
    finally:
        client.close()


def test_an_agent_that_half_closes_still_gets_its_response(setup):
    s = setup(tls=False)
    sock = socket.create_connection(("127.0.0.1", s.proxy.port), timeout=10)
    try:
        sock.sendall(
            f"GET http://{API_HOST}/half HTTP/1.1\r\nHost: {API_HOST}\r\nProxy-Authorization: {basic(TOKEN)}\r\n\r\n".encode()
        )
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    finally:
        sock.close()
    # The read loop ending proves the gateway closed its side after answering. Whether the head also says
    # "Connection: close" depends on whether the agent's FIN arrived before it was written: not asserted.
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
    assert answer.endswith(b"\r\n\r\n")  # the whole (empty-bodied) response


def test_an_http_1_0_agent_gets_a_close_delimited_body(setup):
    async def chunked(request: UpstreamRequest) -> None:
        await request.start(200, [("Content-Type", "text/plain")])
        await request.send(b"one,")
        await request.send(b"two")
        await request.end()

    s = setup(chunked, tls=False)
    client = RawClient(s.proxy.port)
    try:
        client.send_raw(f"GET http://{API_HOST}/old HTTP/1.0\r\nProxy-Authorization: {basic(TOKEN)}\r\n\r\n".encode())
        answer = client.read_until_closed()
    finally:
        client.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"Transfer-Encoding" not in head
    assert body == b"one,two"


def test_interim_responses_from_the_upstream_are_not_forwarded(setup):
    async def early_hints(request: UpstreamRequest) -> None:
        await request.send_raw(
            b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"
            b"HTTP/1.1 100 Continue\r\n\r\n"
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal"
        )
        request.close()

    s = setup(early_hints)
    with s.client() as client:
        response = client.get(f"https://{API_HOST}/hints")
    assert response.status_code == 200 and response.content == b"final"
    assert "link" not in response.headers
