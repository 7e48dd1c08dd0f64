"""Pure HTTP/1.1 details of the engine: authorities, URLs, hop-by-hop filtering, heads and error bodies."""
from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from credgate_gateway.proxy import wire
from credgate_gateway.proxy.config import ConnectRoutes


@pytest.mark.parametrize(
    ("authority", "default", "expected"),
    [
        ("api.example.com:443", None, ("api.example.com", 443)),
        ("API.Example.COM.:8443", None, ("api.example.com", 8443)),
        ("api.example.com", 443, ("api.example.com", 443)),
        ("127.0.0.1:80", None, ("127.0.0.1", 80)),
        ("[::1]:8443", None, ("::1", 8443)),
        ("[2001:DB8::1]", 443, ("2001:db8::1", 443)),
        ("under_score.example:1", None, ("under_score.example", 1)),
    ],
)
def test_split_authority_normalizes(authority, default, expected):
    assert wire.split_authority(authority, default) == expected


@pytest.mark.parametrize(
    "authority",
    ["", ":443", "host:", "host:0", "host:65536", "host:12a", "ho st:443", "a@b:443", "[::1", "[zz::1]:443",
     "host/path:443", "api.example.com", "-bad..example:443", "x" * 300 + ":443"],
)
def test_split_authority_rejects(authority):
    with pytest.raises(ValueError):
        wire.split_authority(authority, None)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://api.example.com/v1/x?a=1", ("http", "api.example.com", 80, "/v1/x?a=1")),
        ("https://API.example.com:8443", ("https", "api.example.com", 8443, "/")),
        ("https://api.example.com?q=1", ("https", "api.example.com", 443, "/?q=1")),
        ("HTTP://[::1]:8080/a#frag", ("http", "::1", 8080, "/a")),
    ],
)
def test_split_absolute_url(url, expected):
    assert wire.split_absolute_url(url) == expected


@pytest.mark.parametrize("url", ["ftp://host/x", "/relative", "https://user:pw@host/x", "https:///x", "http//host/"])
def test_split_absolute_url_rejects(url):
    with pytest.raises(ValueError):
        wire.split_absolute_url(url)


@pytest.mark.parametrize(
    ("scheme", "host", "port", "header"),
    [
        ("https", "api.example.com", 443, "api.example.com"),
        ("https", "api.example.com", 8443, "api.example.com:8443"),
        ("http", "api.example.com", 80, "api.example.com"),
        ("http", "api.example.com", 443, "api.example.com:443"),
        ("https", "::1", 443, "[::1]"),
        ("https", "::1", 8443, "[::1]:8443"),
    ],
)
def test_host_header_has_port_only_when_not_default(scheme, host, port, header):
    assert wire.host_header(scheme, host, port) == header


def test_request_headers_drop_hop_by_hop_proxy_and_connection_listed():
    raw = [
        (b"Host", b"api.example.com"),
        (b"Proxy-Authorization", b"Basic c2VjcmV0"),
        (b"Proxy-Connection", b"keep-alive"),
        (b"Proxy-Foo", b"1"),
        (b"Connection", b"keep-alive, X-Hop"),
        (b"Keep-Alive", b"timeout=5"),
        (b"TE", b"trailers"),
        (b"Trailer", b"X-T"),
        (b"X-Hop", b"gone"),
        (b"Content-Type", b"application/json"),
        (b"Content-Length", b"12"),
        (b"Expect", b"100-continue"),
        (b"X-Keep", b"kept"),
        (b"Authorization", b"Bearer agent"),
    ]
    head = wire.split_request_headers(raw)
    assert head.headers == [("Content-Type", "application/json"), ("X-Keep", "kept"), ("Authorization", "Bearer agent")]
    assert head.proxy_authorization == b"Basic c2VjcmV0"
    assert head.content_length == 12
    assert head.chunked is False
    assert head.expect_continue is True
    assert head.upgrade is None


def test_request_headers_see_chunked_and_upgrade():
    head = wire.split_request_headers(
        [(b"Transfer-Encoding", b"gzip, chunked"), (b"Connection", b"Upgrade"), (b"Upgrade", b"websocket")]
    )
    assert head.chunked is True
    assert head.upgrade == "websocket"
    assert head.headers == []


def test_upgrade_without_connection_upgrade_is_ignored():
    assert wire.split_request_headers([(b"Upgrade", b"websocket")]).upgrade is None


def test_response_headers_drop_hop_by_hop_and_note_framing():
    head = wire.split_response_headers(
        [
            (b"Content-Type", b"text/event-stream"),
            (b"Transfer-Encoding", b"chunked"),
            (b"Connection", b"close, X-Internal"),
            (b"X-Internal", b"1"),
            (b"Keep-Alive", b"timeout=5"),
            (b"Proxy-Authenticate", b"Basic"),
            (b"Set-Cookie", b"a=1"),
            (b"Set-Cookie", b"b=2"),
        ]
    )
    assert head.lines == [b"Content-Type: text/event-stream\r\n", b"Set-Cookie: a=1\r\n", b"Set-Cookie: b=2\r\n"]
    assert head.chunked is True
    assert head.close is True
    assert head.content_length is None


def test_response_content_length_is_kept():
    head = wire.split_response_headers([(b"Content-Length", b"42")])
    assert head.lines == [b"Content-Length: 42\r\n"]
    assert head.content_length == 42


def test_request_head_is_well_formed():
    head = wire.request_head(
        "POST", "/v1/messages?x=1", "api.example.com", [("X-A", "1"), ("x-api-key", "sk")], "Content-Length: 5\r\n", ""
    )
    assert head == (
        b"POST /v1/messages?x=1 HTTP/1.1\r\nHost: api.example.com\r\nX-A: 1\r\nx-api-key: sk\r\n"
        b"Content-Length: 5\r\n\r\n"
    )


def test_request_head_drops_engine_owned_and_proxy_headers_a_hook_returns():
    head = wire.request_head(
        "POST",
        "/",
        "api.example.com",
        [("Proxy-Authorization", "Basic x"), ("content-length", "1"), ("Host", "evil"), ("Transfer-Encoding", "gzip"),
         ("Connection", "close"), ("X-Kept", "1")],
        "Content-Length: 5\r\n",
        "",
    )
    assert head == b"POST / HTTP/1.1\r\nHost: api.example.com\r\nX-Kept: 1\r\nContent-Length: 5\r\n\r\n"


@pytest.mark.parametrize(
    ("method", "target", "headers"),
    [
        ("GET", "/", [("X-Evil", "a\r\nInjected: 1")]),
        ("GET", "/", [("X-Evil", "a\nb")]),
        ("GET", "/", [("X-Evil\r\nInjected", "1")]),
        ("GET", "/", [("X-Nul", "a\0b")]),
        ("GET", "/a b", []),
        ("GET", "/a\r\nb", []),
        ("GET", "", []),
        ("GE T", "/", []),
        ("GET\r\n", "/", []),
        ("GET", "/", [("X-Unicode", "snowman \u2603")]),
    ],
)
def test_request_head_refuses_what_would_break_framing(method, target, headers):
    with pytest.raises(wire.UnsafeHeader) as error:
        wire.request_head(method, target, "h", headers, "", "")
    assert "Injected" not in str(error.value) and "snowman" not in str(error.value)


@given(
    st.lists(
        st.tuples(
            st.text(alphabet="abcXYZ-\r\n:", min_size=1, max_size=8),
            st.text(alphabet="ab \t\r\n\0:", max_size=8),
        ),
        max_size=4,
    )
)
def test_request_head_never_emits_more_lines_than_headers(headers):
    try:
        head = wire.request_head("GET", "/", "h", headers, "", "")
    except wire.UnsafeHeader:
        return
    assert head.count(b"\r\n") == len(headers) + 3
    assert head.count(b"\n") == head.count(b"\r\n")


def test_error_response_is_json_with_code_and_message():
    payload = wire.error_response("upstream_timeout", "the upstream did not answer in time")
    head, _, body = payload.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 504 Gateway Timeout\r\n")
    assert b"Content-Type: application/json" in head
    assert json.loads(body) == {"error": "upstream_timeout", "message": "the upstream did not answer in time"}
    assert f"Content-Length: {len(body)}".encode() in head


def test_proxy_auth_error_carries_basic_challenge_and_no_retry():
    payload = wire.error_response("proxy_auth_required", "auth", close=True)
    assert payload.startswith(b"HTTP/1.1 407 Proxy Authentication Required\r\n")
    assert b'Proxy-Authenticate: Basic realm="credgate"\r\n' in payload
    assert b"x-should-retry: false\r\n" in payload
    assert b"Connection: close\r\n" in payload


def test_simple_response_replaces_framing_headers():
    payload = wire.simple_response(403, [("Content-Length", "999"), ("X-A", "1"), ("Connection", "keep-alive")], b"no")
    assert payload == b"HTTP/1.1 403 Forbidden\r\nX-A: 1\r\nContent-Length: 2\r\n\r\nno"


def test_simple_response_refuses_crlf():
    with pytest.raises(wire.UnsafeHeader):
        wire.simple_response(200, [("X-A", "1\r\nSet-Cookie: x")], b"")


@pytest.mark.parametrize(
    ("specs", "origin", "expected"),
    [
        (["api.example.test:443:127.0.0.1:9443"], ("api.example.test", 443), ("127.0.0.1", 9443)),
        (["api.example.test:443:127.0.0.1:9443"], ("api.example.test", 80), ("api.example.test", 80)),
        (["API.Example.Test.:443:127.0.0.1:9443"], ("api.example.test", 443), ("127.0.0.1", 9443)),
        (["::127.0.0.2:"], ("any.host", 8443), ("127.0.0.2", 8443)),
        (["api.x:443::8443"], ("api.x", 443), ("api.x", 8443)),
        (["api.x::[::1]:9000"], ("api.x", 1234), ("::1", 9000)),
        ([":443:127.0.0.3:1", "api.x:443:127.0.0.4:2"], ("api.x", 443), ("127.0.0.4", 2)),
        ([":443:127.0.0.3:1", "api.x:443:127.0.0.4:2"], ("other", 443), ("127.0.0.3", 1)),
        ([], ("api.x", 443), ("api.x", 443)),
    ],
)
def test_connect_routes_follow_curl(specs, origin, expected):
    assert ConnectRoutes.parse(specs).route(*origin) == expected


@pytest.mark.parametrize("spec", ["api.x:443:127.0.0.1", "api.x", "api.x:99999:a:1", "api.x:443:a:b", "[::1:443:a:1"])
def test_connect_routes_reject_malformed(spec):
    with pytest.raises(ValueError):
        ConnectRoutes.parse([spec])
