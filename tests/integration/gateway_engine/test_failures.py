"""Upstream and agent failures: JSON errors with stable codes, timeouts, isolation, graceful shutdown."""
from __future__ import annotations

import asyncio
import json
import socket
import threading

import httpx
import pytest

from credgate_gateway.proxy import Forward, Timeouts

from .fakes import API_HOST, TOKEN, RawClient, ThrowawayCA, UpstreamRequest, basic

SHORT = Timeouts(
    client_header=0.5,
    client_idle=5,
    client_tls_handshake=5,
    upstream_connect=0.5,
    upstream_response=0.5,
    stream_idle=0.5,
    upstream_pool_idle=5,
)


def error_of(response: httpx.Response) -> str:
    payload = response.json()
    assert set(payload) == {"error", "message"}
    return payload["error"]


def test_untrusted_upstream_certificate_is_a_502_tls_error(setup):
    s = setup(ca=ThrowawayCA.create("an untrusted CA"))
    with s.client() as client:
        response = client.get(f"https://{API_HOST}/x")
    assert response.status_code == 502
    assert error_of(response) == "upstream_tls_error"
    assert s.upstream.requests == []
    assert s.hooks.wait_records(1)[0].error == "upstream_tls_error"


def test_upstream_certificate_for_another_host_is_a_502_tls_error(setup):
    s = setup(hosts=("other.example.test",))
    with s.client() as client:
        response = client.get(f"https://{API_HOST}/x")
    assert response.status_code == 502 and error_of(response) == "upstream_tls_error"


def test_upstream_down_is_a_502(start_proxy, agent_tls):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed_port = sock.getsockname()[1]
    proxy = start_proxy(connect_to=[f"{API_HOST}:443:127.0.0.1:{closed_port}"])
    with httpx.Client(proxy=f"http://x:{TOKEN}@127.0.0.1:{proxy.port}", verify=agent_tls, trust_env=False) as client:
        response = client.get(f"https://{API_HOST}/x")
        assert response.status_code == 502 and error_of(response) == "upstream_unreachable"
        assert client.get(f"https://{API_HOST}/again").status_code == 502  # the tunnel stays usable


def test_upstream_that_never_finishes_the_handshake_is_a_504(start_proxy, agent_tls):
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()
    try:
        proxy = start_proxy(connect_to=[f"{API_HOST}:443:127.0.0.1:{silent.getsockname()[1]}"], timeouts=SHORT)
        with httpx.Client(proxy=f"http://x:{TOKEN}@127.0.0.1:{proxy.port}", verify=agent_tls, trust_env=False) as client:
            response = client.get(f"https://{API_HOST}/x")
        assert response.status_code == 504 and error_of(response) == "upstream_timeout"
    finally:
        silent.close()


def test_upstream_that_never_answers_is_a_504(setup):
    release = threading.Event()

    async def stall(request: UpstreamRequest) -> None:
        await asyncio.get_running_loop().run_in_executor(None, release.wait, 10)

    s = setup(stall, timeouts=SHORT)
    try:
        with s.client() as client:
            response = client.get(f"https://{API_HOST}/slow")
        assert response.status_code == 504 and error_of(response) == "upstream_timeout"
    finally:
        release.set()


def test_upstream_stalling_mid_stream_cuts_the_response(setup):
    release = threading.Event()

    async def stall_mid_body(request: UpstreamRequest) -> None:
        await request.start(200, [("Content-Type", "text/event-stream")])
        await request.send(b"data: 1\n\n")
        await asyncio.get_running_loop().run_in_executor(None, release.wait, 10)

    s = setup(stall_mid_body, timeouts=SHORT)
    try:
        with s.client() as client:
            with pytest.raises(httpx.RemoteProtocolError):
                with client.stream("GET", f"https://{API_HOST}/sse") as response:
                    for _ in response.iter_raw():
                        pass
    finally:
        release.set()
    record = s.hooks.wait_records(1)[0]
    assert (record.status, record.error) == (200, "upstream_timeout")
    assert s.hooks.observers[0].complete is False


def test_upstream_dying_mid_body_cuts_the_response(setup):
    async def die(request: UpstreamRequest) -> None:
        await request.send_raw(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly part")
        request.close()

    s = setup(die)
    with s.client() as client:
        with pytest.raises(httpx.RemoteProtocolError):
            client.get(f"https://{API_HOST}/x")
    assert s.hooks.wait_records(1)[0].error == "upstream_closed"


def test_upstream_speaking_garbage_is_a_502(setup):
    async def garbage(request: UpstreamRequest) -> None:
        await request.send_raw(b"SPDY/9 nonsense\r\n\r\n")

    s = setup(garbage)
    with s.client() as client:
        response = client.get(f"https://{API_HOST}/x")
    assert response.status_code == 502 and error_of(response) == "upstream_protocol_error"


def test_a_reused_connection_that_died_is_retried_for_a_replayable_request(setup):
    async def drop_second(request: UpstreamRequest) -> None:
        if request.index_on_connection == 1:
            request.close()  # read the request, then vanish without answering
            return
        await request.respond(200, [], b"ok")

    s = setup(drop_second)
    with s.client() as client:
        assert client.get(f"https://{API_HOST}/1").status_code == 200
        assert client.get(f"https://{API_HOST}/2").status_code == 200
    assert s.upstream.accepts == 2
    assert [request.target for request in s.upstream.requests] == ["/1", "/2", "/2"]


def test_malformed_request_is_a_400(setup):
    s = setup()
    client = RawClient(s.proxy.port)
    try:
        client.send_raw(b"THIS IS NOT HTTP\r\n\r\n")
        answer = client.read_until_closed()
    finally:
        client.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert json.loads(body)["error"] == "bad_request"


def test_oversized_request_head_is_a_431(setup):
    s = setup(tls=False)
    client = RawClient(s.proxy.port)
    try:
        client.send_raw(f"GET http://{API_HOST}/ HTTP/1.1\r\nX-Big: {'a' * 70000}\r\n\r\n".encode())
        answer = client.read_until_closed()
    finally:
        client.close()
    assert answer.startswith(b"HTTP/1.1 431 ")
    assert b"a" * 100 not in answer


def test_half_sent_head_times_out_with_408(setup):
    s = setup(timeouts=SHORT)
    client = RawClient(s.proxy.port)
    try:
        client.send_raw(f"GET http://{API_HOST}/ HTTP/1.1\r\nHost: {API_HOST}\r\n".encode())
        answer = client.read_until_closed()
    finally:
        client.close()
    assert answer.startswith(b"HTTP/1.1 408 ")


def test_stalled_request_body_times_out(setup):
    s = setup(tls=False, timeouts=SHORT)
    client = RawClient(s.proxy.port)
    try:
        client.send_raw(
            f"POST http://{API_HOST}/ HTTP/1.1\r\nHost: {API_HOST}\r\nProxy-Authorization: {basic(TOKEN)}\r\n"
            f"Content-Length: 1000\r\n\r\nonly a little".encode()
        )
        answer = client.read_until_closed()
    finally:
        client.close()
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert s.hooks.wait_records(1)[0].error == "request_timeout"


def test_a_stuck_client_does_not_hold_up_another(setup):
    s = setup()
    stuck = RawClient(s.proxy.port)
    stuck_in_tunnel = RawClient.tunnel(s.proxy.port, s.agent_tls)
    try:
        stuck.send_raw(b"GET http://api.example.test/ HTTP/1.1\r\nHost: api.ex")  # and nothing more
        stuck_in_tunnel.send_raw(b"POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nbegin")
        with s.client() as client:
            for index in range(3):
                assert client.get(f"https://{API_HOST}/other/{index}").status_code == 200
    finally:
        stuck.close()
        stuck_in_tunnel.close()


def test_a_client_that_stops_reading_does_not_hold_up_another(setup):
    async def big(request: UpstreamRequest) -> None:
        if request.target == "/big":
            await request.start(200, [])
            for _ in range(64):
                await request.send(b"x" * 262144)
            await request.end()
        else:
            await request.respond(200, [], b"small")

    s = setup(big)
    reader = RawClient.tunnel(s.proxy.port, s.agent_tls)
    try:
        reader.send_raw(f"GET /big HTTP/1.1\r\nHost: {API_HOST}\r\n\r\n".encode())  # never read
        with s.client() as client:
            assert client.get(f"https://{API_HOST}/small").content == b"small"
    finally:
        reader.close()


def test_a_hook_holding_a_request_does_not_block_others(setup):
    s = setup()
    release: asyncio.Event | None = None
    held = threading.Event()

    async def hold(identity, request):
        nonlocal release
        if request.path == "/approval":
            release = asyncio.Event()
            held.set()
            await release.wait()
        return Forward(request.method, request.target, request.headers)

    s.hooks.decide = hold
    result = {}

    def held_request():
        with s.client() as client:
            result["held"] = client.get(f"https://{API_HOST}/approval").status_code

    thread = threading.Thread(target=held_request)
    thread.start()
    assert held.wait(10)
    with s.client() as client:
        for index in range(3):
            assert client.get(f"https://{API_HOST}/free/{index}").status_code == 200
    assert "held" not in result
    s.proxy.call(lambda: release.set())
    thread.join(10)
    assert result == {"held": 200}


def test_a_hook_that_raises_is_a_500_without_details(setup):
    s = setup()

    async def explode(identity, request):
        raise RuntimeError("details with secret sk-live-123")

    s.hooks.decide = explode
    with s.client() as client:
        response = client.get(f"https://{API_HOST}/x")
    assert response.status_code == 500 and error_of(response) == "internal_error"
    assert b"sk-live" not in response.content


def test_a_hook_header_with_crlf_is_refused_not_smuggled(setup):
    s = setup()

    async def smuggle(identity, request):
        return Forward(request.method, request.target, [("X-Api-Key", "sk-123\r\nX-Injected: 1")])

    s.hooks.decide = smuggle
    with s.client() as client:
        response = client.get(f"https://{API_HOST}/x")
    assert response.status_code == 500 and error_of(response) == "internal_error"
    assert b"sk-123" not in response.content
    assert s.upstream.requests == []


def test_graceful_shutdown_drains_a_streaming_request(setup):
    gate = threading.Event()

    async def sse(request: UpstreamRequest) -> None:
        await request.start(200, [("Content-Type", "text/event-stream")])
        await request.send(b"data: 1\n\n")
        await asyncio.get_running_loop().run_in_executor(None, gate.wait, 10)
        await request.send(b"data: 2\n\n")
        await request.end()

    s = setup(sse)
    idle = RawClient(s.proxy.port)  # an idle keep-alive connection: closed at once on shutdown
    received = []
    with s.client() as client:
        with client.stream("GET", f"https://{API_HOST}/sse") as response:
            chunks = response.iter_raw()
            received.append(next(chunks))
            stopper = threading.Thread(target=s.proxy.stop, kwargs={"drain_timeout": 10})
            stopper.start()
            assert idle.read_until_closed() == b""
            with pytest.raises(OSError):
                socket.create_connection(("127.0.0.1", s.proxy.port), timeout=2).close()
            gate.set()
            received.extend(chunks)
            assert response.headers.get("connection") != "close" or True
    stopper.join(15)
    assert not stopper.is_alive()
    assert b"".join(received) == b"data: 1\n\ndata: 2\n\n"
    assert s.hooks.wait_records(1)[0].error is None
    idle.close()


def test_shutdown_aborts_what_does_not_finish_within_the_drain_timeout(setup):
    gate = threading.Event()

    async def never_done(request: UpstreamRequest) -> None:
        await request.start(200, [])
        await request.send(b"partial")
        await asyncio.get_running_loop().run_in_executor(None, gate.wait, 10)

    s = setup(never_done)
    try:
        with s.client() as client:
            with pytest.raises(httpx.RemoteProtocolError):
                with client.stream("GET", f"https://{API_HOST}/forever") as response:
                    chunks = response.iter_raw()
                    next(chunks)
                    s.proxy.stop(drain_timeout=0.3)
                    for _ in chunks:
                        pass
    finally:
        gate.set()
    assert s.hooks.wait_records(1)[0].error == "shutting_down"
