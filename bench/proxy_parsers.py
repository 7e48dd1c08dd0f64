"""HTTP/1.1 parsing cost per proxied message: httptools (llhttp, C) against h11 (pure Python).

Run: .venv/bin/python bench/proxy_parsers.py

The messages are what the gateway sees most: an agent's LLM request (POST with a JSON body and the
headers an SDK sends), a JSON response with Content-Length, and a streamed (SSE, chunked) response
of 40 events arriving in 40 reads. Each parser is driven the way a proxy would drive it: httptools
through callbacks that collect the method, target, headers and body pieces; h11 through
receive_data/next_event until EndOfMessage. h11 reads responses only as a client that sent a
request, so its response numbers include serializing that request (the cost of that alone is shown).

Results on the 2-core development VM (Python 3.11.7, httptools 0.9.0, h11 0.16.0, a shared and
noisy machine: best of 7), microseconds per message; in brackets h11 less its per-message
request/response turnaround, i.e. parsing alone:

    LLM request (13 headers, 2 KiB body)   httptools    2.2   h11   65.5 (  39.6 parsing)   ratio  29.1x ( 17.6x)
    JSON response (Content-Length, 1 KiB)  httptools    1.7   h11   48.8 (  26.3 parsing)   ratio  29.0x ( 15.6x)
    SSE response (chunked, 40 reads)       httptools   10.0   h11  300.0 ( 277.5 parsing)   ratio  30.1x ( 27.8x)
    h11 turnaround alone: server 25.9, client 22.5

For scale: the whole engine spends about 25 us of Python per proxied request (both directions,
hooks included) and about 80 us of CPU with TLS on both sides; h11 alone would cost ~110 us.
"""
from __future__ import annotations

import json
import timeit

import h11
import httptools

REQUEST_BODY = json.dumps(
    {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "x" * 1900}],
    }
).encode()

REQUEST = (
    b"POST /v1/messages HTTP/1.1\r\n"
    b"Host: api.anthropic.com\r\n"
    b"Accept: application/json\r\n"
    b"Accept-Encoding: gzip, deflate\r\n"
    b"Connection: keep-alive\r\n"
    b"Content-Type: application/json\r\n"
    b"User-Agent: Anthropic/Python 0.40.0\r\n"
    b"X-Stainless-Lang: python\r\n"
    b"X-Stainless-Package-Version: 0.40.0\r\n"
    b"X-Stainless-Runtime: CPython\r\n"
    b"X-Stainless-Retry-Count: 0\r\n"
    b"anthropic-version: 2023-06-01\r\n"
    b"x-api-key: placeholder\r\n"
    b"Content-Length: " + str(len(REQUEST_BODY)).encode() + b"\r\n\r\n" + REQUEST_BODY
)

JSON_BODY = json.dumps({"id": "msg_01", "content": [{"type": "text", "text": "y" * 900}], "usage": {"input_tokens": 12}}).encode()
JSON_RESPONSE = (
    b"HTTP/1.1 200 OK\r\n"
    b"Date: Mon, 05 Jan 2026 10:00:00 GMT\r\n"
    b"Content-Type: application/json\r\n"
    b"Content-Length: " + str(len(JSON_BODY)).encode() + b"\r\n"
    b"Connection: keep-alive\r\n"
    b"request-id: req_011CQ\r\n"
    b"anthropic-ratelimit-requests-remaining: 49\r\n"
    b"via: 1.1 google\r\n"
    b"cf-cache-status: DYNAMIC\r\n"
    b"Server: cloudflare\r\n\r\n" + JSON_BODY
)

SSE_EVENTS = [
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"token %d"}}\n\n' % n
    for n in range(40)
]
SSE_HEAD = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n"
    b"Transfer-Encoding: chunked\r\nConnection: keep-alive\r\nrequest-id: req_011CR\r\n\r\n"
)
SSE_READS = [SSE_HEAD + b"%x\r\n%s\r\n" % (len(SSE_EVENTS[0]), SSE_EVENTS[0])]
SSE_READS += [b"%x\r\n%s\r\n" % (len(event), event) for event in SSE_EVENTS[1:]]
SSE_READS[-1] += b"0\r\n\r\n"


class Collector:
    """What the engine's protocols do in their callbacks, minus the forwarding."""

    __slots__ = ("url", "headers", "body", "done")

    def __init__(self) -> None:
        self.url = b""
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: list[bytes] = []
        self.done = False

    def on_message_begin(self) -> None:
        self.url = b""
        self.headers = []
        self.body = []
        self.done = False

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_body(self, data: bytes) -> None:
        self.body.append(data)

    def on_message_complete(self) -> None:
        self.done = True


def httptools_request(count: int) -> None:
    collector = Collector()
    parser = httptools.HttpRequestParser(collector)
    for _ in range(count):
        parser.feed_data(REQUEST)
        assert collector.done


def httptools_responses(reads: list[bytes], count: int) -> None:
    collector = Collector()
    parser = httptools.HttpResponseParser(collector)
    for _ in range(count):
        for data in reads:
            parser.feed_data(data)
        assert collector.done


def h11_request(count: int) -> None:
    conn = h11.Connection(h11.SERVER)
    for _ in range(count):
        conn.receive_data(REQUEST)
        body = []
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Data):
                body.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
        conn.send(h11.Response(status_code=204, headers=[]))
        conn.send(h11.EndOfMessage())
        conn.start_next_cycle()


_UPSTREAM_REQUEST = h11.Request(method="POST", target="/v1/messages", headers=[("Host", "api.anthropic.com"), ("Content-Length", "0")])
_TINY_REQUEST = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
_TINY_RESPONSE = b"HTTP/1.1 204 No Content\r\n\r\n"


def h11_server_turnaround(count: int) -> None:
    """h11's per-message state machine on the server side, with the smallest request there is."""
    conn = h11.Connection(h11.SERVER)
    for _ in range(count):
        conn.receive_data(_TINY_REQUEST)
        conn.next_event()
        conn.next_event()
        conn.send(h11.Response(status_code=204, headers=[]))
        conn.send(h11.EndOfMessage())
        conn.start_next_cycle()


def h11_client_turnaround(count: int) -> None:
    """h11's per-message state machine on the client side (send a request, read a bodiless answer)."""
    conn = h11.Connection(h11.CLIENT)
    for _ in range(count):
        conn.send(_UPSTREAM_REQUEST)
        conn.send(h11.EndOfMessage())
        conn.receive_data(_TINY_RESPONSE)
        conn.next_event()
        conn.next_event()
        conn.start_next_cycle()


def h11_responses(reads: list[bytes], count: int) -> None:
    conn = h11.Connection(h11.CLIENT)
    for _ in range(count):
        conn.send(_UPSTREAM_REQUEST)
        conn.send(h11.EndOfMessage())
        body = []
        done = False
        for data in reads:
            conn.receive_data(data)
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    break
                if isinstance(event, h11.Data):
                    body.append(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    done = True
                    break
        assert done
        conn.start_next_cycle()


def per_message(function, *args, count: int) -> float:
    timer = timeit.Timer(lambda: function(*args, count))
    return min(timer.repeat(repeat=7, number=1)) / count * 1e6


def main() -> None:
    server_overhead = per_message(h11_server_turnaround, count=4000)
    client_overhead = per_message(h11_client_turnaround, count=4000)
    rows = [
        ("LLM request (13 headers, 2 KiB body)", per_message(httptools_request, count=20000), per_message(h11_request, count=4000), server_overhead),
        (
            "JSON response (Content-Length, 1 KiB)",
            per_message(httptools_responses, [JSON_RESPONSE], count=20000),
            per_message(h11_responses, [JSON_RESPONSE], count=4000),
            client_overhead,
        ),
        (
            "SSE response (chunked, 40 reads)",
            per_message(httptools_responses, SSE_READS, count=3000),
            per_message(h11_responses, SSE_READS, count=400),
            client_overhead,
        ),
    ]
    print("microseconds per message (best of 7); h11 with and without its request/response turnaround")
    for name, fast, slow, overhead in rows:
        parse_only = max(slow - overhead, 0.0)
        print(
            f"    {name:<38} httptools {fast:6.1f}   h11 {slow:6.1f} ({parse_only:6.1f} parsing)"
            f"   ratio {slow / fast:5.1f}x ({parse_only / fast:5.1f}x)"
        )
    print(f"    h11 turnaround alone: server {server_overhead:.1f}, client {client_overhead:.1f}")


if __name__ == "__main__":
    main()
