"""Policy rules through the real gateway: block (by host, method, path, agent, level), disabled rules, the
organization's deny mode with allow rules, rate limits, and the refusal bodies the LLM vendors' SDKs read."""
from __future__ import annotations

import time

import pytest

from .gateway_support import headers_named, unique

pytestmark = pytest.mark.e2e

HOSTS = (
    "api.anthropic.com",
    "api.openai.com",
    "eu.api.openai.com",
    "blocked.example.test",
    "methods.example.test",
    "paths.example.test",
    "disabled.example.test",
    "org-rule.example.test",
    "agent-rule.example.test",
    "deny.example.test",
    "open.example.test",
    "limited.example.test",
)



def assert_blocked(response) -> None:
    assert response.status_code == 403, response.text
    assert response.json()["error"] == "blocked_by_policy"
    assert response.json()["message"]
    assert response.headers["x-should-retry"] == "false"


def clear_of_window_edge(window: int = 60, margin: float = 5.0) -> None:
    """Rate windows are fixed (aligned to the clock): start a counted burst well inside one window."""
    left = window - time.time() % window
    if left < margin:
        time.sleep(left + 0.1)


def test_block_rule_answers_403_and_the_upstream_is_never_reached(gw):
    gw.rule(hostPattern="blocked.example.test", action="block")
    gw.sync()

    response = gw.client.post("https://blocked.example.test/anything", json={"a": 1})

    assert_blocked(response)
    assert gw.upstream.requests("blocked.example.test") == []


def test_method_specific_block_rule_only_blocks_that_method(gw):
    gw.rule(hostPattern="methods.example.test", method="DELETE", action="block")
    gw.sync()

    deleted = gw.client.delete("https://methods.example.test/items/1")
    fetched = gw.client.get("https://methods.example.test/items/1")

    assert_blocked(deleted)
    assert fetched.status_code == 200
    assert [r.method for r in gw.upstream.requests("methods.example.test")] == ["GET"]


def test_path_specific_block_rule_blocks_its_paths_however_they_are_spelled(gw):
    gw.rule(hostPattern="paths.example.test", pathPattern="/admin/*", action="block")
    gw.sync()

    statuses = {
        path: gw.client.get(f"https://paths.example.test{path}").status_code
        for path in ("/admin", "/admin/users?x=1", "/%61dmin/users", "//admin/users", "/public", "/administrator")
    }

    assert statuses == {
        "/admin": 403, "/admin/users?x=1": 403, "/%61dmin/users": 403, "//admin/users": 403, "/public": 200, "/administrator": 200,
    }
    assert sorted(r.target for r in gw.upstream.requests("paths.example.test")) == ["/administrator", "/public"]


def test_disabled_rule_has_no_effect(gw):
    gw.rule(hostPattern="disabled.example.test", action="block", enabled=False)
    gw.sync()

    response = gw.client.get("https://disabled.example.test/x")

    assert response.status_code == 200
    assert len(gw.upstream.requests("disabled.example.test")) == 1


def test_organization_rule_applies_to_the_projects_agents(gw):
    gw.rule(scope="org", hostPattern="org-rule.example.test", pathPattern="/v1/*", action="block")
    gw.sync()

    assert_blocked(gw.client.get("https://org-rule.example.test/v1/x"))
    assert gw.client.get("https://org-rule.example.test/v2/x").status_code == 200


def test_agent_scoped_rule_blocks_only_that_agent(gw):
    second = gw.new_agent("ruled")
    gw.rule(hostPattern="agent-rule.example.test", action="block", agentId=second["id"])
    gw.sync()

    with gw.agent(second["accessToken"]) as client:
        assert_blocked(client.get("https://agent-rule.example.test/second"))
    assert gw.client.get("https://agent-rule.example.test/default").status_code == 200
    assert [r.target for r in gw.upstream.requests("agent-rule.example.test")] == ["/default"]


def test_deny_mode_blocks_credentialed_non_llm_requests_unless_a_rule_allows_them(gw):
    value = unique("deny")
    gw.header_secret("deny.example.test", "X-Key", value)
    gw.secret(name="OpenAI", type="openai", value="sk-" + unique("deny-llm"), hostPattern="api.openai.com")
    gw.set_policy_mode("deny")
    try:
        gw.sync()

        credentialed = gw.client.get("https://deny.example.test/before-allow")
        llm = gw.client.post("https://api.openai.com/v1/chat/completions", json={"model": "gpt-4o-mini", "messages": []})
        uncredentialed = gw.client.get("https://open.example.test/x")

        assert_blocked(credentialed)
        assert llm.status_code == 200
        assert uncredentialed.status_code == 200
        assert gw.upstream.requests("deny.example.test") == []

        gw.rule(hostPattern="deny.example.test", action="allow")
        gw.sync()
        allowed = gw.client.get("https://deny.example.test/after-allow")

        assert allowed.status_code == 200
        assert headers_named(gw.upstream.requests("deny.example.test", "/after-allow")[0], "x-key") == [value]
    finally:
        gw.set_policy_mode("allow")
        gw.sync()


def test_rate_limit_rule_answers_429_with_retry_after_once_the_window_is_used_up(gw):
    gw.rule(hostPattern="limited.example.test", action="rate_limit", rateLimit=3, rateLimitWindow="minute")
    gw.sync()
    clear_of_window_edge()

    responses = [gw.client.get(f"https://limited.example.test/call/{n}") for n in range(4)]

    assert [r.status_code for r in responses] == [200, 200, 200, 429]
    limited = responses[3]
    assert limited.json()["error"] == "rate_limited"
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    assert "x-should-retry" not in limited.headers  # retrying later is what the agent should do
    assert [r.target for r in gw.upstream.requests("limited.example.test")] == ["/call/0", "/call/1", "/call/2"]


# On the LLM hosts the SDKs read their vendor's error shape: ours has to fit it and still carry our code


@pytest.mark.parametrize(
    ("host", "path"),
    [("api.anthropic.com", "/v1/messages"), ("api.openai.com", "/v1/chat/completions"), ("eu.api.openai.com", "/v1/responses")],
)
def test_refusals_on_llm_hosts_take_the_vendors_error_shape(gw, host, path):
    blocked_path, limited_path = f"{path}/blocked-{unique('b')}", f"{path}/limited-{unique('l')}"
    gw.rule(hostPattern=host, pathPattern=blocked_path, action="block")
    gw.rule(hostPattern=host, pathPattern=limited_path, action="rate_limit", rateLimit=1, rateLimitWindow="minute")
    gw.sync()
    clear_of_window_edge()

    blocked = gw.client.post(f"https://{host}{blocked_path}", json={})
    first = gw.client.post(f"https://{host}{limited_path}", json={})
    limited = gw.client.post(f"https://{host}{limited_path}", json={})

    assert (blocked.status_code, first.status_code, limited.status_code) == (403, 200, 429)
    assert blocked.headers["x-should-retry"] == "false"
    assert 1 <= int(limited.headers["retry-after"]) <= 60
    if host == "api.anthropic.com":
        for response, kind, code in ((blocked, "permission_error", "blocked_by_policy"), (limited, "rate_limit_error", "rate_limited")):
            body = response.json()
            assert body["type"] == "error"
            assert (body["error"]["type"], body["error"]["code"]) == (kind, code)
            assert body["error"]["message"]
    else:
        for response, kind, code in ((blocked, "permission_denied", "blocked_by_policy"), (limited, "rate_limit_exceeded", "rate_limited")):
            error = response.json()["error"]
            assert (error["type"], error["code"], error["param"]) == (kind, code, None)
            assert error["message"]
    assert [r.target for r in gw.upstream.requests(host, f"{path}/")] == [limited_path]
