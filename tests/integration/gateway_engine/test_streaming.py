"""Bodies both ways: framing kept or re-framed, streamed as they arrive, observed on the way back."""
from __future__ import annotations

import asyncio
import threading

from credgate_gateway.proxy import Forward, Respond

from .fakes import API_HOST, TOKEN, RawClient, UpstreamRequest, basic


def test_chunked_request_body_is_re_emitted_chunked(setup):
    s = setup()

    def parts():
        yield b"first,"
        yield b"second,"
        yield b"third"

    with s.client() as client:
        response = client.post(f"https://{API_HOST}/upload", content=parts())
    assert response.content == b"first,second,third"
    seen = s.upstream.requests[0]
    assert seen.header("transfer-encoding") == "chunked"
    assert "content-length" not in seen.header_names()
    assert s.hooks.requests[0].body.length is None and s.hooks.requests[0].body.has_body


def test_content_length_request_keeps_its_length(setup):
    s = setup()
    with s.client() as client:
        client.put(f"https://{API_HOST}/put", content=b"z" * 70_000)
    seen = s.upstream.requests[0]
    assert seen.header("content-length") == "70000"
    assert "transfer-encoding" not in seen.header_names()


def test_chunked_response_stays_chunked(setup):
    async def chunked(request: UpstreamRequest) -> None:
        await request.start(200, [("Content-Type", "text/plain")])
        for part in (b"a" * 10, b"b" * 20000, b"c"):
            await request.send(part)
        await request.end()

    s = setup(chunked)
    with s.client() as client:
        response = client.get(f"https://{API_HOST}/chunks")
    assert response.headers["transfer-encoding"] == "chunked"
    assert response.content == b"a" * 10 + b"b" * 20000 + b"c"
    assert s.hooks.observers[0].complete is True
    assert b"".join(s.hooks.observers[0].chunks) == response.content


def test_response_read_until_close_is_re_framed_and_the_tunnel_survives(setup):
    async def until_close(request: UpstreamRequest) -> None:
        if request.target == "/eof":
            await request.send_raw(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it, then EOF")
            request.close()
        else:
            await request.respond(200, [], b"next")

    s = setup(until_close)
    with s.client() as client:
        response = client.get(f"https://{API_HOST}/eof")
        assert response.content == b"all of it, then EOF"
        assert response.headers["transfer-encoding"] == "chunked"
        assert client.get(f"https://{API_HOST}/after").content == b"next"
    assert s.proxy.server.stats.accepted == 1
    assert s.upstream.accepts == 2


def test_head_204_and_304_have_no_body_and_keep_both_connections(setup):
    async def bodiless(request: UpstreamRequest) -> None:
        if request.method == "HEAD":
            await request.start(200, [("Content-Length", "1234"), ("Content-Type", "text/plain")])
            await request.end()
        elif request.target == "/204":
            await request.start(204, [])
            await request.end()
        elif request.target == "/304":
            await request.start(304, [("ETag", '"v1"')])
            await request.end()
        else:
            await request.respond(200, [], b"body")

    s = setup(bodiless)
    with s.client() as client:
        head = client.head(f"https://{API_HOST}/file")
        assert head.status_code == 200 and head.headers["content-length"] == "1234" and head.content == b""
        assert client.get(f"https://{API_HOST}/204").status_code == 204
        not_modified = client.get(f"https://{API_HOST}/304")
        assert not_modified.status_code == 304 and not_modified.headers["etag"] == '"v1"'
        assert client.get(f"https://{API_HOST}/after").content == b"body"
    assert s.upstream.accepts == 1
    assert s.proxy.server.stats.accepted == 1


def test_sse_events_reach_the_agent_one_by_one(setup):
    delivered = [threading.Event() for _ in range(3)]
    events = [f"event: message\ndata: {{\"n\": {n}}}\n\n".encode() for n in range(3)]

    async def sse(request: UpstreamRequest) -> None:
        await request.start(200, [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")])
        loop = asyncio.get_running_loop()
        for event, seen in zip(events, delivered, strict=True):
            await request.send(event)
            # The next event goes only once the agent has the previous one: buffering would deadlock.
            assert await loop.run_in_executor(None, seen.wait, 10), "the agent never received the event"
        await request.end()

    s = setup(sse)
    received = []
    with s.client() as client:
        with client.stream("POST", f"https://{API_HOST}/v1/messages", content=b'{"stream":true}') as response:
            assert response.headers["content-type"] == "text/event-stream"
            buffer = b""
            for data in response.iter_raw():
                buffer += data
                while b"\n\n" in buffer:
                    event, buffer = buffer.split(b"\n\n", 1)
                    received.append(event + b"\n\n")
                    delivered[len(received) - 1].set()
    assert received == events
    observer = s.hooks.observers[0]
    assert observer.status == 200 and ("Content-Type", "text/event-stream") in observer.headers
    assert observer.chunks == events
    assert observer.complete is True


def test_expect_100_continue_gets_a_continue_before_the_body(setup):
    s = setup(tls=False)
    client = RawClient(s.proxy.port)
    try:
        client.send_raw(
            f"POST http://{API_HOST}/expect HTTP/1.1\r\nHost: {API_HOST}\r\nProxy-Authorization: {basic(TOKEN)}\r\n"
            "Content-Length: 5\r\nExpect: 100-continue\r\n\r\n".encode()
        )
        assert client.read_head() == b"HTTP/1.1 100 Continue\r\n\r\n"
        client.send_raw(b"hello")
        head = client.read_head()
        assert head.startswith(b"HTTP/1.1 200 OK\r\n")
        assert client.sock.recv(5) == b"hello"
    finally:
        client.close()
    assert "expect" not in s.upstream.requests[0].header_names()


def test_expect_100_continue_refused_by_a_hook_gets_no_continue_and_a_close(setup):
    s = setup(tls=False)

    async def refuse(identity, request):
        return Respond(403, [], b"no")

    s.hooks.decide = refuse
    client = RawClient(s.proxy.port)
    try:
        client.send_raw(
            f"POST http://{API_HOST}/expect HTTP/1.1\r\nHost: {API_HOST}\r\nProxy-Authorization: {basic(TOKEN)}\r\n"
            "Content-Length: 5\r\nExpect: 100-continue\r\n\r\n".encode()
        )
        answer = client.read_until_closed()
    finally:
        client.close()
    assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n")
    assert b"Connection: close\r\n" in answer
    assert b"100 Continue" not in answer


def test_hook_peeks_at_the_body_and_it_goes_upstream_unchanged(setup):
    s = setup()
    peeked = []

    async def peek(identity, request):
        peeked.append(await request.body.peek(16))
        peeked.append(await request.body.peek(1_000_000))
        return Forward(request.method, request.target, request.headers)

    s.hooks.decide = peek
    body = b'{"model":"claude","messages":[]}' + b" " * 300_000
    with s.client() as client:
        response = client.post(f"https://{API_HOST}/v1/messages", content=body)
    assert response.content == body
    assert peeked[0] == body[:16]
    assert peeked[1] == body


def test_peek_works_with_chunked_bodies_and_expect_continue(setup):
    s = setup(tls=False)
    peeked = []

    async def peek(identity, request):
        peeked.append(await request.body.peek(100))
        return Forward(request.method, request.target, request.headers)

    s.hooks.decide = peek
    client = RawClient(s.proxy.port)
    try:
        client.send_raw(
            f"POST http://{API_HOST}/c HTTP/1.1\r\nHost: {API_HOST}\r\nProxy-Authorization: {basic(TOKEN)}\r\n"
            "Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n\r\n".encode()
        )
        assert client.read_head() == b"HTTP/1.1 100 Continue\r\n\r\n"
        client.send_raw(b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
        response, body = client.read_response()
    finally:
        client.close()
    assert peeked == [b"abcde"]
    assert response.status_code == 200 and body == b"abcde"


def test_pipelined_requests_are_answered_in_order(setup):
    s = setup(tls=False)
    client = RawClient(s.proxy.port)
    auth = basic(TOKEN)
    try:
        client.send_raw(
            b"".join(
                f"POST http://{API_HOST}/p{n} HTTP/1.1\r\nHost: {API_HOST}\r\nProxy-Authorization: {auth}\r\n"
                f"Content-Length: 2\r\n{'Connection: close' if n == 2 else 'X-N: n'}\r\n\r\n#{n}".encode()
                for n in range(3)
            )
        )
        answer = client.read_until_closed()
    finally:
        client.close()
    assert answer.count(b"HTTP/1.1 200 OK\r\n") == 3
    assert answer.index(b"#0") < answer.index(b"#1") < answer.index(b"#2")
    assert [request.target for request in s.upstream.requests] == ["/p0", "/p1", "/p2"]


def test_an_observer_that_raises_does_not_break_the_response(setup):
    s = setup()

    class Broken:
        def on_head(self, status, headers):
            raise RuntimeError("observer bug")

        def on_chunk(self, data):
            raise RuntimeError("observer bug")

        def on_end(self, complete):
            raise RuntimeError("observer bug")

    async def broken(identity, request):
        return Forward(request.method, request.target, request.headers, Broken())

    s.hooks.decide = broken
    with s.client() as client:
        assert client.post(f"https://{API_HOST}/x", content=b"fine").content == b"fine"
