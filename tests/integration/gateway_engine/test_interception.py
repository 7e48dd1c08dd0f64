"""CONNECT interception and absolute-form proxying with real clients, keep-alive on both sides."""
from __future__ import annotations

import json
import shutil
import ssl
import subprocess
from pathlib import Path

import httpx
import pytest

from credgate_gateway.proxy import Respond

from .fakes import API_HOST, TOKEN, RawClient, UpstreamRequest, basic


def test_connect_is_intercepted_and_forwarded_with_the_hooks_changes(setup):
    s = setup()
    with s.client() as client:
        response = client.post(f"https://{API_HOST}/v1/messages?beta=true", content=b'{"model":"m"}')
    assert response.status_code == 200
    assert response.content == b'{"model":"m"}'
    seen = s.upstream.requests[0]
    assert (seen.method, seen.target) == ("POST", "/v1/messages?beta=true")
    assert seen.header("host") == API_HOST
    assert seen.header("x-credgate-agent") == "agent-1"
    request = s.hooks.requests[0]
    assert (request.scheme, request.host, request.port, request.tunneled) == ("https", API_HOST, 443, True)
    assert request.target == "/v1/messages?beta=true"
    assert request.body.has_body and request.body.length == 13


def test_agent_sees_a_leaf_for_the_connect_host_signed_by_the_gateway_ca(setup, gateway_ca):
    s = setup()
    with s.client() as client:
        with client.stream("GET", f"https://{API_HOST}/") as response:
            cert = response.extensions["network_stream"].get_extra_info("ssl_object").getpeercert()
    assert dict(pair[0] for pair in cert["issuer"])["commonName"] == "credgate gateway CA"
    assert ("DNS", API_HOST) in cert["subjectAltName"]


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl not installed")
def test_curl_through_the_proxy(setup, gateway_ca_file: Path):
    s = setup()
    result = subprocess.run(
        ["curl", "-sS", "--fail-with-body", "--proxy", s.proxy_url, "--cacert", str(gateway_ca_file),
         "-H", "Content-Type: application/json", "--data-binary", '{"hello":"curl"}', f"https://{API_HOST}/v1/echo",
         "--next", "--proxy", s.proxy_url, "--cacert", str(gateway_ca_file), f"https://{API_HOST}/second"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == '{"hello":"curl"}'
    assert [request.target for request in s.upstream.requests] == ["/v1/echo", "/second"]
    assert s.proxy.server.stats.accepted == 1  # curl reused its tunnel for --next


@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
def test_node_accepts_the_intercepted_certificate(setup, gateway_ca_file: Path):
    s = setup()
    script = f"""
const net = require('net'), tls = require('tls'), fs = require('fs');
const raw = net.connect({s.proxy.port}, '127.0.0.1', () => {{
  raw.write('CONNECT {API_HOST}:443 HTTP/1.1\\r\\nHost: {API_HOST}:443\\r\\nProxy-Authorization: {basic(TOKEN)}\\r\\n\\r\\n');
  raw.once('data', (d) => {{
    if (!d.toString().startsWith('HTTP/1.1 200')) {{ console.error(d.toString()); process.exit(2); }}
    const s = tls.connect({{ socket: raw, servername: '{API_HOST}', ca: fs.readFileSync('{gateway_ca_file}') }}, () => {{
      s.write('GET /from-node HTTP/1.1\\r\\nHost: {API_HOST}\\r\\nConnection: close\\r\\n\\r\\n');
    }});
    let out = ''; s.on('data', (c) => out += c); s.on('end', () => {{ console.log(out.split('\\r\\n')[0]); process.exit(0); }});
    s.on('error', (e) => {{ console.error(e.message); process.exit(3); }});
  }});
}});
"""
    result = subprocess.run(["node", "-e", script], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "HTTP/1.1 200 OK"


def test_keep_alive_is_reused_on_both_sides(setup):
    s = setup()
    with s.client() as client:
        for index in range(5):
            assert client.get(f"https://{API_HOST}/n/{index}").status_code == 200
    assert s.proxy.server.stats.accepted == 1
    assert s.upstream.accepts == 1
    assert s.proxy.server.stats.upstream_connects == 1


def test_upstream_connection_close_is_not_reused(setup):
    async def closing(request: UpstreamRequest) -> None:
        await request.respond(200, [("Connection", "close")], b"bye")

    s = setup(closing)
    with s.client() as client:
        assert client.get(f"https://{API_HOST}/a").content == b"bye"
        assert client.get(f"https://{API_HOST}/b").content == b"bye"
    assert s.upstream.accepts == 2
    assert s.proxy.server.stats.accepted == 1


def test_absolute_form_http_request(setup):
    s = setup(tls=False)
    with s.client() as client:
        response = client.post(f"http://{API_HOST}/plain?x=1", content=b"abc")
    assert response.status_code == 200 and response.content == b"abc"
    seen = s.upstream.requests[0]
    assert seen.target == "/plain?x=1"
    assert seen.header("host") == API_HOST
    request = s.hooks.requests[0]
    assert (request.scheme, request.port, request.tunneled) == ("http", 80, False)


def test_absolute_form_https_request_goes_upstream_over_tls(setup):
    s = setup()
    client = RawClient(s.proxy.port)
    try:
        response, body = client.request(
            "POST", f"https://{API_HOST}/over-tls", [("Host", API_HOST), ("Proxy-Authorization", basic(TOKEN))], b"hi"
        )
        assert response.status_code == 200 and body == b"hi"
        response, body = client.request("GET", f"https://{API_HOST}/again", [("Host", API_HOST), ("Proxy-Authorization", basic(TOKEN))])
        assert response.status_code == 200
    finally:
        client.close()
    assert [request.target for request in s.upstream.requests] == ["/over-tls", "/again"]
    assert s.hooks.requests[0].scheme == "https"
    assert s.upstream.accepts == 1


def test_host_header_carries_a_non_default_port(upstreams, start_proxy, hooks, agent_tls):
    upstream = upstreams()
    proxy = start_proxy(connect_to=[f"{API_HOST}:8443:127.0.0.1:{upstream.port}"])
    with httpx.Client(proxy=f"http://x:{TOKEN}@127.0.0.1:{proxy.port}", verify=agent_tls, trust_env=False) as client:
        assert client.get(f"https://{API_HOST}:8443/port").status_code == 200
    assert upstream.requests[0].header("host") == f"{API_HOST}:8443"
    assert hooks.requests[0].port == 8443


def test_healthz_answers_without_auth_and_is_not_recorded(setup):
    s = setup()
    response = httpx.get(f"http://127.0.0.1:{s.proxy.port}/healthz", trust_env=False)
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert s.hooks.records == []
    assert s.hooks.auth_calls == []


def test_origin_form_other_than_healthz_is_a_bad_request(setup):
    s = setup()
    response = httpx.get(f"http://127.0.0.1:{s.proxy.port}/v1/messages", trust_env=False)
    assert response.status_code == 400
    assert response.json()["error"] == "bad_request"


def test_redirects_are_passed_through_not_followed(setup):
    async def redirect(request: UpstreamRequest) -> None:
        await request.respond(302, [("Location", "https://elsewhere.example.test/x")], b"")

    s = setup(redirect)
    with s.client(follow_redirects=False) as client:
        response = client.get(f"https://{API_HOST}/moved")
    assert response.status_code == 302
    assert response.headers["location"] == "https://elsewhere.example.test/x"
    assert len(s.upstream.requests) == 1


def test_hook_can_answer_without_going_upstream(setup):
    s = setup()

    async def block(identity, request):
        body = json.dumps({"error": "blocked_by_policy", "message": "no"}).encode()
        return Respond(403, [("Content-Type", "application/json"), ("x-should-retry", "false")], body, "blocked_by_policy")

    s.hooks.decide = block
    with s.client() as client:
        response = client.get(f"https://{API_HOST}/blocked")
        assert response.status_code == 403 and response.json()["error"] == "blocked_by_policy"
        assert client.get(f"https://{API_HOST}/still-open").status_code == 403
    assert s.upstream.accepts == 0
    records = s.hooks.wait_records(2)
    assert records[0].error == "blocked_by_policy" and records[0].status == 403
    assert s.proxy.server.stats.accepted == 1


def test_completion_records_describe_each_request(setup):
    s = setup()
    with s.client() as client:
        client.post(f"https://{API_HOST}/v1/messages?key=secret", content=b"x" * 10)
    identity, record = s.hooks.records[0]
    assert identity == "agent-1"
    assert (record.method, record.scheme, record.host, record.port) == ("POST", "https", API_HOST, 443)
    assert record.path == "/v1/messages"  # the query string (which can carry keys) is left out
    assert (record.status, record.bytes_in, record.bytes_out, record.error) == (200, 10, 10, None)
    assert record.duration > 0 and record.tunneled
    assert record.client[0] == "127.0.0.1"


def test_tunnel_to_an_ip_address_gets_an_ip_certificate(upstreams, start_proxy, agent_tls):
    upstream = upstreams(hosts=("127.0.0.1",))
    proxy = start_proxy()
    with httpx.Client(proxy=f"http://x:{TOKEN}@127.0.0.1:{proxy.port}", verify=agent_tls, trust_env=False) as client:
        response = client.get(f"https://127.0.0.1:{upstream.port}/ip")
    assert response.status_code == 200
    assert upstream.requests[0].header("host") == f"127.0.0.1:{upstream.port}"


def test_client_without_the_gateway_ca_fails_and_is_recorded(setup):
    s = setup()
    with httpx.Client(proxy=s.proxy_url, verify=ssl.create_default_context(), trust_env=False) as client:
        with pytest.raises(httpx.ConnectError):
            client.get(f"https://{API_HOST}/")
    record = s.hooks.wait_records(1)[0]
    assert (record.method, record.error) == ("CONNECT", "client_tls_error")
