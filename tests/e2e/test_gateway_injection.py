"""Credential injection through the real gateway: every injection variant, both LLM vendors, host and path
matching, precedence between levels, selective agents. Asserted on what the upstream received."""
from __future__ import annotations

import json

import pytest

from tests.integration.gateway_engine.fakes import UpstreamRequest

from .gateway_support import curl, headers_named, needs_curl, unique

pytestmark = pytest.mark.e2e

HOSTS = (
    "api.anthropic.com",
    "api.openai.com",
    "header.example.test",
    "query.example.test",
    "template.example.test",
    "regex.example.test",
    "literal.example.test",
    "refused.example.test",
    "curl.example.test",
    "a.tools.test",
    "b.tools.test",
    "x.y.tools.test",
    "tools.test",
    "paths.example.test",
    "precedence.example.test",
    "org-only.example.test",
    "both.example.test",
    "selective.example.test",
    "plain.example.test",
)



def only(requests: list[UpstreamRequest]) -> UpstreamRequest:
    assert len(requests) == 1, f"expected exactly one upstream request, got {[r.target for r in requests]}"
    return requests[0]


# The injection variants


def test_header_secret_replaces_the_agents_header_of_the_same_name_whatever_its_case(gw):
    value = unique("hdr-secret")
    gw.header_secret("header.example.test", "X-Api-Token", value, value_format="Bearer {value}")
    gw.sync()

    response = gw.client.get(
        "https://header.example.test/items?page=2",
        headers=[("x-API-token", "agent-supplied"), ("X-Other", "kept"), ("X-API-TOKEN", "a-second-copy")],
    )

    assert response.status_code == 200
    received = only(gw.upstream.requests("header.example.test", "/items"))
    assert headers_named(received, "x-api-token") == [f"Bearer {value}"]
    assert headers_named(received, "x-other") == ["kept"]
    assert received.method == "GET" and received.target == "/items?page=2"


@needs_curl
def test_curl_through_the_gateway_gets_the_header_injected(gw):
    value = unique("curl-secret")
    gw.header_secret("curl.example.test", "X-Api-Key", value)
    gw.sync()

    result = curl(gw, "https://curl.example.test/v1/ping?x=1", "-H", "X-Api-Key: placeholder", "-d", "hello")

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["target"] == "/v1/ping?x=1"
    received = only(gw.upstream.requests("curl.example.test"))
    assert received.method == "POST"
    assert headers_named(received, "x-api-key") == [value]
    assert received.received_body == b"hello"


def test_query_secret_replaces_its_parameter_and_keeps_the_others_byte_for_byte(gw):
    value = unique("q/secret+v")
    gw.secret(
        name="query", type="generic", value=value, hostPattern="query.example.test",
        injectionConfig={"paramName": "key", "paramFormat": "k:{value}"},
    )
    gw.sync()

    replaced = gw.client.get("https://query.example.test/replace?b=%20x&a=1&key=agentvalue&c=%2F")
    added = gw.client.get("https://query.example.test/add?z=1")
    escaped_name = gw.client.get("https://query.example.test/escaped?%6Bey=agentvalue&a=1")

    assert (replaced.status_code, added.status_code, escaped_name.status_code) == (200, 200, 200)
    encoded = "k%3A" + value.replace("/", "%2F").replace("+", "%2B")
    assert only(gw.upstream.requests("query.example.test", "/replace")).target == f"/replace?b=%20x&a=1&key={encoded}&c=%2F"
    assert only(gw.upstream.requests("query.example.test", "/add")).target == f"/add?z=1&key={encoded}"
    assert only(gw.upstream.requests("query.example.test", "/escaped")).target == f"/escaped?key={encoded}&a=1"


def test_path_template_secret_is_put_in_front_of_the_request_path(gw):
    value = "123456:" + unique("ABC")
    gw.secret(
        name="bot", type="generic", value=value, hostPattern="template.example.test",
        injectionConfig={"pathTemplate": "/bot{value}"},
    )
    gw.sync()

    response = gw.client.post("https://template.example.test/sendMessage?chat_id=7", json={"text": "hi"})

    assert response.status_code == 200
    assert only(gw.upstream.requests("template.example.test")).target == f"/bot{value}/sendMessage?chat_id=7"


def test_path_regex_secret_rewrites_the_path_with_capture_groups(gw):
    value = unique("acct-key")
    gw.secret(
        name="regex", type="generic", value=value, hostPattern="regex.example.test",
        injectionConfig={"pathRegex": "^/v1/(\\w+)/x", "pathReplacement": "/v1/$1/{value}/x"},
    )
    gw.sync()

    rewritten = gw.client.get("https://regex.example.test/v1/acme/x/items?q=1")
    untouched = gw.client.get("https://regex.example.test/v2/acme/x")

    assert (rewritten.status_code, untouched.status_code) == (200, 200)
    assert only(gw.upstream.requests("regex.example.test", "/v1/")).target == f"/v1/acme/{value}/x/items?q=1"
    assert only(gw.upstream.requests("regex.example.test", "/v2/")).target == "/v2/acme/x"


def test_a_value_that_looks_like_a_template_stays_literal(gw):
    header_value = unique("h$1{value}\\g<0>")
    path_value = unique("p$1$$2")
    gw.header_secret("literal.example.test", "X-Literal", header_value, value_format="Token {value}")
    gw.secret(
        name="literal path", type="generic", value=path_value, hostPattern="literal.example.test",
        injectionConfig={"pathRegex": "^/v1/(\\w+)/x", "pathReplacement": "/v1/$1/{value}/x"},
    )
    gw.sync()

    response = gw.client.get("https://literal.example.test/v1/acme/x")

    assert response.status_code == 200
    received = only(gw.upstream.requests("literal.example.test"))
    assert received.target == f"/v1/acme/{path_value}/x"
    assert headers_named(received, "x-literal") == [f"Token {header_value}"]


def test_a_value_not_allowed_in_a_url_path_is_refused_with_502_and_nothing_goes_upstream(gw):
    value = unique("not/a{value}segment")
    gw.secret(
        name="refused", type="generic", value=value, hostPattern="refused.example.test",
        injectionConfig={"pathTemplate": "/t/{value}"},
    )
    gw.sync()

    response = gw.client.get("https://refused.example.test/anything")

    assert response.status_code == 502
    assert response.json()["error"] == "credential_injection_failed"
    assert response.headers["x-should-retry"] == "false"
    assert value not in response.text
    assert gw.upstream.requests("refused.example.test") == []


# The LLM vendors, driven with their SDKs' request shapes


def test_anthropic_secret_sets_x_api_key_and_drops_the_agents_authorization(gw):
    value = "sk-ant-api03-" + unique("e2e")
    gw.secret(name="Anthropic", type="anthropic", value=value, hostPattern="api.anthropic.com")
    gw.sync()
    message = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}

    response = gw.client.post(
        "https://api.anthropic.com/v1/messages",
        json=message,
        headers={
            "x-api-key": "sk-ant-credgate-placeholder",
            "Authorization": "Bearer placeholder",
            "anthropic-version": "2023-06-01",
            "User-Agent": "Anthropic/Python 0.40.0",
            "X-Stainless-Lang": "python",
        },
    )

    assert response.status_code == 200
    received = only(gw.upstream.requests("api.anthropic.com", "/v1/messages"))
    assert (received.method, received.target) == ("POST", "/v1/messages")
    assert headers_named(received, "x-api-key") == [value]
    assert headers_named(received, "authorization") == []
    assert headers_named(received, "anthropic-version") == ["2023-06-01"]
    assert headers_named(received, "x-stainless-lang") == ["python"]
    assert json.loads(received.received_body) == message


def test_openai_secret_sets_a_bearer_authorization_over_the_sdks_placeholder(gw):
    value = "sk-proj-" + unique("e2e")
    gw.secret(name="OpenAI", type="openai", value=value, hostPattern="api.openai.com")
    gw.sync()
    completion = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]}

    response = gw.client.post(
        "https://api.openai.com/v1/chat/completions",
        json=completion,
        headers={"Authorization": "Bearer sk-credgate-placeholder", "OpenAI-Organization": "org-test"},
    )

    assert response.status_code == 200
    received = only(gw.upstream.requests("api.openai.com", "/v1/chat/completions"))
    assert headers_named(received, "authorization") == [f"Bearer {value}"]
    assert headers_named(received, "openai-organization") == ["org-test"]
    assert json.loads(received.received_body) == completion


# Which secret applies


def test_wildcard_host_pattern_matches_subdomains_at_any_depth_but_not_the_apex(gw):
    value = unique("tools")
    gw.header_secret("*.Tools.TEST", "X-Tools-Key", value)
    gw.sync()

    for host in ("a.tools.test", "x.y.tools.test", "tools.test"):
        assert gw.client.get(f"https://{host}/wildcard").status_code == 200

    assert headers_named(only(gw.upstream.requests("a.tools.test", "/wildcard")), "x-tools-key") == [value]
    assert headers_named(only(gw.upstream.requests("x.y.tools.test", "/wildcard")), "x-tools-key") == [value]
    assert headers_named(only(gw.upstream.requests("tools.test", "/wildcard")), "x-tools-key") == []


def test_path_pattern_limits_a_secret_to_its_paths(gw):
    value = unique("paths")
    gw.header_secret("paths.example.test", "X-Path-Key", value, pathPattern="/v1/*")
    gw.sync()

    injected = {}
    for path in ("/v1", "/v1/models", "/v1/a/b?x=1", "/v2", "/v1x"):
        assert gw.client.get(f"https://paths.example.test{path}").status_code == 200
        received = [r for r in gw.upstream.requests("paths.example.test") if r.target == path]
        injected[path] = headers_named(only(received), "x-path-key") == [value]

    assert injected == {"/v1": True, "/v1/models": True, "/v1/a/b?x=1": True, "/v2": False, "/v1x": False}


def test_project_secret_beats_the_organization_secret_of_the_same_kind(gw):
    gw.header_secret("precedence.example.test", "X-Key", unique("org"), scope="org")
    project_value = unique("project")
    gw.header_secret("precedence.example.test", "X-Key", project_value)
    gw.sync()

    assert gw.client.get("https://precedence.example.test/p").status_code == 200

    assert headers_named(only(gw.upstream.requests("precedence.example.test")), "x-key") == [project_value]


def test_organization_secret_applies_when_the_project_has_none(gw):
    org_value = unique("org")
    gw.header_secret("org-only.example.test", "X-Key", org_value, scope="org")
    gw.sync()

    assert gw.client.get("https://org-only.example.test/o").status_code == 200

    assert headers_named(only(gw.upstream.requests("org-only.example.test")), "x-key") == [org_value]


def test_project_header_secret_and_organization_query_secret_both_apply(gw):
    header_value, query_value = unique("hdr"), unique("qry")
    gw.header_secret("both.example.test", "X-Key", header_value)
    gw.secret(
        scope="org", name="org query", type="generic", value=query_value, hostPattern="both.example.test",
        injectionConfig={"paramName": "token"},
    )
    gw.sync()

    assert gw.client.get("https://both.example.test/b?x=1").status_code == 200

    received = only(gw.upstream.requests("both.example.test"))
    assert received.target == f"/b?x=1&token={query_value}"
    assert headers_named(received, "x-key") == [header_value]


def test_selective_agent_gets_only_its_assigned_secret(gw):
    org_value = unique("org")
    org_secret = gw.header_secret("selective.example.test", "X-Key", org_value, scope="org")
    project_value = unique("project")
    gw.header_secret("selective.example.test", "X-Key", project_value)
    second = gw.new_agent("selective")
    assigned = gw.api.put(f"/agents/{second['id']}/secrets", json={"secretIds": [org_secret["id"]]})
    assert assigned.status_code == 200 and assigned.json()["secretMode"] == "selective", assigned.text
    gw.sync()

    with gw.agent(second["accessToken"]) as selective_client:
        assert selective_client.get("https://selective.example.test/second").status_code == 200
    assert gw.client.get("https://selective.example.test/default").status_code == 200

    second_received = only(gw.upstream.requests("selective.example.test", "/second"))
    default_received = only(gw.upstream.requests("selective.example.test", "/default"))
    assert headers_named(default_received, "x-key") == [project_value]
    assert headers_named(second_received, "x-key") == [org_value]


def test_a_request_no_secret_matches_passes_through_unchanged(gw):
    sent_headers = {"Authorization": "Bearer agent-own-key", "X-Custom": "a b;c", "Accept": "application/json"}

    response = gw.client.put("https://plain.example.test/things/1?b=%20x&a=1", headers=sent_headers, content=b"\x00raw body\xff")

    assert response.status_code == 200
    received = only(gw.upstream.requests("plain.example.test"))
    assert (received.method, received.target, received.received_body) == ("PUT", "/things/1?b=%20x&a=1", b"\x00raw body\xff")
    for name, value in sent_headers.items():
        assert headers_named(received, name) == [value]
    assert headers_named(received, "proxy-authorization") == []
