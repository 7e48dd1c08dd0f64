"""How agents reach the gateway: proxy authentication (407s), the container config that
sets an agent up, and the one log line the gateway writes per proxied request."""
from __future__ import annotations

import json
import ssl
from pathlib import Path

import httpx
import pytest

from tests.integration.gateway_engine.fakes import RawClient, basic

from .gateway_support import connect, curl, headers_named, needs_curl, unique, wait_until

pytestmark = pytest.mark.e2e

HOSTS = ("auth.example.test", "setup.example.test", "log.example.test")



def unknown_token() -> str:
    return "aoc_" + unique("unknown").replace("-", "")


# Proxy authentication


def test_connect_without_proxy_authorization_gets_407_with_a_basic_challenge(gw):
    answer = connect(gw.port, "auth.example.test", None)

    assert answer.status == 407
    assert answer.headers["proxy-authenticate"].startswith("Basic")
    assert json.loads(answer.body)["error"] == "proxy_auth_required"
    assert gw.upstream.requests("auth.example.test") == []


def test_connect_with_an_unknown_token_gets_407(gw):
    token = unknown_token()
    gw.issued.append(token)

    answer = connect(gw.port, "auth.example.test", basic(token, "agent"))
    with gw.agent(token) as client, pytest.raises(httpx.ProxyError, match="407"):
        client.get("https://auth.example.test/unknown")

    assert answer.status == 407 and answer.headers["proxy-authenticate"].startswith("Basic")
    assert gw.upstream.requests("auth.example.test") == []


@needs_curl
def test_curl_without_or_with_a_wrong_token_sees_407_on_connect(gw):
    token = unknown_token()
    gw.issued.append(token)

    anonymous = curl(gw, "https://auth.example.test/curl", "-o", "/dev/null", "-w", "%{http_connect}", proxy_user=False)
    wrong = curl(gw, "https://auth.example.test/curl", "-o", "/dev/null", "-w", "%{http_connect}", token=token)

    assert (anonymous.returncode, anonymous.stdout) == (56, "407"), anonymous.stderr
    assert (wrong.returncode, wrong.stdout) == (56, "407"), wrong.stderr
    assert gw.upstream.requests("auth.example.test") == []


def test_token_as_the_basic_user_with_an_empty_password_is_accepted(gw):
    token = gw.bootstrap["agentToken"]

    answer = connect(gw.port, "auth.example.test", basic("", user=token))
    with httpx.Client(proxy=f"http://{token}:@127.0.0.1:{gw.port}", verify=gw.agent_tls, trust_env=False) as client:
        response = client.get("https://auth.example.test/user-only")

    assert answer.status == 200
    assert response.status_code == 200
    assert len(gw.upstream.requests("auth.example.test", "/user-only")) == 1


def test_proxy_authorization_never_reaches_the_upstream(gw):
    token = gw.bootstrap["agentToken"]

    tunneled = gw.client.get(
        "https://auth.example.test/tunneled", headers={"Proxy-Authorization": basic(token), "Proxy-Connection": "keep-alive"}
    )
    raw = RawClient(gw.port)
    try:
        absolute, _ = raw.request(
            "GET", "https://auth.example.test/absolute-form", [("Host", "auth.example.test"), ("Proxy-Authorization", basic(token))]
        )
    finally:
        raw.close()

    assert (tunneled.status_code, absolute.status_code) == (200, 200)
    for path in ("/tunneled", "/absolute-form"):
        received = gw.upstream.requests("auth.example.test", path)
        assert len(received) == 1
        assert {name.lower() for name, _ in received[0].raw_headers if name.lower().startswith("proxy-")} == set()
        assert token not in json.dumps(received[0].raw_headers)


# Agent setup


def test_container_config_carries_the_agents_proxy_and_the_gateway_ca(gw, tmp_path):
    value = unique("setup")
    gw.header_secret("setup.example.test", "X-Setup-Key", value)
    gw.sync()

    config = gw.api.get("/container-config")
    ca = gw.api.get("/gateway/ca")

    assert config.status_code == 200 and ca.status_code == 200
    body = config.json()
    env = body["env"]
    local_ca = Path(gw.ca_path).read_text()
    proxy = f"http://agent:{gw.bootstrap['agentToken']}@127.0.0.1:{gw.port}"
    assert (body["agentId"], body["identifier"], body["gatewayUrl"]) == (gw.bootstrap["agentId"], "default", gw.bootstrap["gatewayUrl"])
    assert env["HTTPS_PROXY"] == env["HTTP_PROXY"] == env["https_proxy"] == env["http_proxy"] == proxy
    for name in ("NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO"):
        assert env[name] == body["caCertPath"], name
    assert body["caCert"] == local_ca
    assert ca.headers["content-type"].startswith("application/x-pem-file")
    assert ca.text == local_ca

    # What a container does with it: the PEM at a path of its own, the proxy from the environment.
    ca_file = tmp_path / "ca.pem"
    ca_file.write_text(body["caCert"])
    with httpx.Client(proxy=env["HTTPS_PROXY"], verify=ssl.create_default_context(cafile=str(ca_file)), trust_env=False) as container:
        response = container.get("https://setup.example.test/from-container")
    assert response.status_code == 200
    assert headers_named(gw.upstream.requests("setup.example.test")[0], "x-setup-key") == [value]


def test_container_config_for_a_named_agent_carries_that_agents_token(gw):
    agent = gw.new_agent("setup")

    config = gw.api.get("/container-config", params={"agent": agent["identifier"]})

    assert config.status_code == 200
    assert config.json()["agentId"] == agent["id"]
    assert config.json()["env"]["HTTPS_PROXY"] == f"http://agent:{agent['accessToken']}@127.0.0.1:{gw.port}"


# The request log


def test_each_proxied_request_gets_one_log_line_without_any_credential(gw):
    header_value, query_value, path_value = unique("log-hdr"), unique("log-qry"), unique("log-path")
    header_secret = gw.header_secret("log.example.test", "X-Log-Key", header_value, pathPattern="/header/*")
    query_secret = gw.secret(
        name="log query", type="generic", value=query_value, hostPattern="log.example.test", pathPattern="/query",
        injectionConfig={"paramName": "api_key"},
    )
    path_secret = gw.secret(
        name="log path", type="generic", value=path_value, hostPattern="log.example.test", pathPattern="/path/*",
        injectionConfig={"pathRegex": "^/path/", "pathReplacement": "/path/{value}/"},
    )
    gw.rule(hostPattern="log.example.test", pathPattern="/blocked", action="block")
    gw.sync()
    token = gw.bootstrap["agentToken"]

    sent = [
        ("GET", "/header/a", 200, [header_secret["id"]]),
        ("POST", "/query", 200, [query_secret["id"]]),
        ("GET", "/path/p", 200, [path_secret["id"]]),
        ("DELETE", "/blocked", 403, []),
        ("GET", "/plain", 200, []),
    ]
    for method, path, status, _ in sent:
        response = gw.client.request(
            method, f"https://log.example.test{path}?agent_token={token}", headers={"Authorization": f"Bearer {token}"}, content=b"{}"
        )
        assert response.status_code == status, (path, response.text)

    def lines_for_this_test():
        lines = [line for line in gw.request_log() if line.get("host") == "log.example.test"]
        return lines if len(lines) >= len(sent) else None

    lines = wait_until(lines_for_this_test, timeout=5, what="a log line for each request")
    assert len(lines) == len(sent)
    for line, (method, path, status, injected) in zip(lines, sent):
        assert line["agentId"] == gw.bootstrap["agentId"]
        assert (line["host"], line["method"], line["path"], line["status"]) == ("log.example.test", method, path, status)
        assert line["injectedSecretIds"] == injected
        assert isinstance(line["durationMs"], (int, float)) and line["durationMs"] >= 0
    assert lines[3]["error"] == "blocked_by_policy"

    log = gw.serve.logs()
    for credential in (header_value, query_value, path_value, token):
        assert credential not in log
    gw.assert_log_holds_no_credential()
