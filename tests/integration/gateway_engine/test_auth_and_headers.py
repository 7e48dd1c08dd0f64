"""Agent authentication (407s) and what headers may cross the proxy in each direction."""
from __future__ import annotations

import json

import httpx
import pytest

from .fakes import API_HOST, TOKEN, RawClient, UpstreamRequest, basic

SECRET_TOKEN = "aoc_SECRET_never_echoed_0123456789"


def assert_proxy_auth_required(status: int, headers, body: bytes) -> None:
    assert status == 407
    assert headers["proxy-authenticate"] == 'Basic realm="credgate"'
    payload = json.loads(body)
    assert payload["error"] == "proxy_auth_required" and payload["message"]
    assert SECRET_TOKEN.encode() not in body


@pytest.mark.parametrize("token", [None, SECRET_TOKEN])
def test_absolute_form_without_a_known_token_gets_407(setup, token):
    s = setup(tls=False)
    with s.client(token=token) as client:
        response = client.get(f"http://{API_HOST}/x")
    assert_proxy_auth_required(response.status_code, response.headers, response.content)
    assert s.upstream.accepts == 0
    record = s.hooks.wait_records(1)[0]
    assert (record.status, record.error) == (407, "proxy_auth_required")


@pytest.mark.parametrize("token", [None, SECRET_TOKEN])
def test_connect_without_a_known_token_gets_407_in_plaintext_before_any_tls(setup, token):
    s = setup()
    client = RawClient(s.proxy.port)
    auth = f"Proxy-Authorization: {basic(token)}\r\n" if token else ""
    try:
        client.send_raw(f"CONNECT {API_HOST}:443 HTTP/1.1\r\nHost: {API_HOST}:443\r\n{auth}\r\n".encode())
        answer = client.read_until_closed()
    finally:
        client.close()
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {name.lower(): value for name, _, value in (line.partition(": ") for line in lines[1:])}
    assert lines[0] == "HTTP/1.1 407 Proxy Authentication Required"
    assert_proxy_auth_required(407, headers, body)
    record = s.hooks.wait_records(1)[0]
    assert (record.method, record.status, record.error) == ("CONNECT", 407, "proxy_auth_required")


def test_httpx_sees_407_on_connect(setup):
    s = setup()
    with s.client(token=SECRET_TOKEN) as client:
        with pytest.raises(httpx.ProxyError) as error:
            client.get(f"https://{API_HOST}/x")
    assert "407" in str(error.value)


def test_a_token_revoked_while_the_tunnel_is_open_gets_407_inside_it(setup):
    s = setup()
    s.hooks.tokens["aoc_soon_revoked"] = "agent-2"
    with s.client(token="aoc_soon_revoked") as client:
        assert client.get(f"https://{API_HOST}/before").status_code == 200
        del s.hooks.tokens["aoc_soon_revoked"]
        response = client.get(f"https://{API_HOST}/after")
    assert_proxy_auth_required(response.status_code, response.headers, response.content)
    assert s.proxy.server.stats.accepted == 1  # same tunnel
    assert [request.target for request in s.upstream.requests] == ["/before"]
    assert s.hooks.auth_calls == ["aoc_soon_revoked"] * 3  # CONNECT, then each request


def test_the_tunnel_token_comes_from_connect_and_is_never_forwarded(setup, agent_tls):
    s = setup()
    client = RawClient.tunnel(s.proxy.port, agent_tls)
    try:
        response, _ = client.request(
            "GET",
            "/inside",
            [("Host", API_HOST), ("Proxy-Authorization", basic("aoc_inside_tunnel_ignored"))],
        )
    finally:
        client.close()
    assert response.status_code == 200
    assert s.hooks.auth_calls == [TOKEN, TOKEN]
    assert "proxy-authorization" not in s.upstream.requests[0].header_names()


def test_hop_by_hop_and_proxy_headers_never_reach_the_upstream(setup, agent_tls):
    s = setup()
    client = RawClient.tunnel(s.proxy.port, agent_tls)
    try:
        response, _ = client.request(
            "GET",
            "/hops",
            [
                ("Host", "wrong.example.test"),
                ("Connection", "keep-alive, X-Private-Hop"),
                ("X-Private-Hop", "secret"),
                ("Keep-Alive", "timeout=5"),
                ("Proxy-Connection", "keep-alive"),
                ("Proxy-Authorization", basic(TOKEN)),
                ("TE", "trailers"),
                ("Trailer", "X-Checksum"),
                ("Upgrade", "h2c"),
                ("X-End-To-End", "kept"),
                ("Authorization", "Bearer agent-supplied"),
            ],
        )
    finally:
        client.close()
    assert response.status_code == 200
    names = s.upstream.requests[0].header_names()
    for hop in ("connection", "x-private-hop", "keep-alive", "proxy-connection", "proxy-authorization", "te", "trailer", "upgrade"):
        assert hop not in names
    seen = s.upstream.requests[0]
    assert seen.header("host") == API_HOST  # the CONNECT host, not the agent's Host header
    assert seen.header("x-end-to-end") == "kept"
    assert seen.header("authorization") == "Bearer agent-supplied"
    hook_names = {name.lower() for name, _ in s.hooks.requests[0].headers}
    assert hook_names == {"x-end-to-end", "authorization"}


def test_proxy_authorization_is_not_forwarded_on_absolute_form(setup):
    s = setup(tls=False)
    with s.client() as client:
        assert client.get(f"http://{API_HOST}/plain").status_code == 200
    assert "proxy-authorization" not in s.upstream.requests[0].header_names()


def test_hop_by_hop_response_headers_never_reach_the_agent(setup):
    async def hoppy(request: UpstreamRequest) -> None:
        await request.send_raw(
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive, X-Internal\r\nX-Internal: secret\r\n"
            b"Keep-Alive: timeout=9\r\nProxy-Authenticate: Basic\r\nProxy-Connection: keep-alive\r\nTrailer: X-T\r\n"
            b"Upgrade: h2c\r\nX-Visible: yes\r\n\r\nok"
        )

    s = setup(hoppy)
    with s.client() as client:
        response = client.get(f"https://{API_HOST}/hops")
    assert response.content == b"ok"
    for hop in ("x-internal", "keep-alive", "proxy-authenticate", "proxy-connection", "trailer", "upgrade"):
        assert hop not in response.headers
    assert response.headers["x-visible"] == "yes"


def test_request_target_not_matching_the_tunnel_is_refused(setup, agent_tls):
    s = setup()
    client = RawClient.tunnel(s.proxy.port, agent_tls)
    try:
        response, body = client.request("GET", "https://evil.example.test/steal", [("Host", "evil.example.test")])
    finally:
        client.close()
    assert response.status_code == 400
    assert json.loads(body)["error"] == "bad_request"
    assert s.upstream.requests == []


def test_the_gateways_own_answers_count_their_body_in_the_record(setup):
    """A 407 written by the gateway is a response body the agent received, so bytes_out says so."""
    s = setup(tls=False)
    with s.client(token=None) as client:
        response = client.get(f"http://{API_HOST}/x")
    assert response.status_code == 407
    (record,) = s.hooks.wait_records(1)
    assert record.bytes_out == len(response.content) > 0
