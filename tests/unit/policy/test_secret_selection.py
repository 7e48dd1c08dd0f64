"""Which secrets a request gets: scope precedence, selective agents, per-kind shadowing, specificity."""
from __future__ import annotations

import pytest

from credgate.policy import CompiledConfig

from .factories import header, llm_key, path_regex, path_template, query, secret


def selected(secrets, host="api.example.com", path="/", allowed=None) -> list[str]:
    config = CompiledConfig.build(secrets, [], "allow")
    return [spec.id for spec in config.select_secrets(host, path, allowed)]


@pytest.mark.parametrize(
    ("scopes", "winner"),
    [
        (("project", "organization", "partner"), "project"),
        (("organization", "partner"), "organization"),
        (("project", "partner"), "project"),
        (("partner",), "partner"),
    ],
)
def test_most_specific_level_with_a_matching_key_wins(scopes, winner):
    secrets = [llm_key(scope, scope=scope) for scope in scopes]
    assert selected(secrets, "api.anthropic.com") == [winner]
    assert selected(list(reversed(secrets)), "api.anthropic.com") == [winner]


def test_customer_key_shadows_partner_key_even_when_partner_pattern_is_more_specific():
    secrets = [
        llm_key("partner", scope="partner", host="api.anthropic.com", path="/v1/messages"),
        llm_key("org", scope="organization", host="*.anthropic.com"),
    ]
    assert selected(secrets, "api.anthropic.com", "/v1/messages") == ["org"]


def test_customer_openai_key_shadows_partner_but_not_the_other_vendor():
    secrets = [
        llm_key("partner-anthropic", scope="partner"),
        llm_key("partner-openai", "openai", scope="partner"),
        llm_key("org-openai", "openai", scope="organization"),
    ]
    assert selected(secrets, "api.openai.com") == ["org-openai"]
    assert selected(secrets, "api.anthropic.com") == ["partner-anthropic"]


@pytest.mark.parametrize(
    ("allowed", "winner"),
    [
        (None, ["project"]),
        (frozenset({"org"}), ["org"]),
        (frozenset({"partner"}), ["partner"]),
        (frozenset({"org", "partner"}), ["org"]),
        (frozenset({"project", "org", "partner"}), ["project"]),
        (frozenset(), []),
        (frozenset({"unrelated"}), []),
    ],
)
def test_selective_agent_only_competes_with_its_assigned_secrets(allowed, winner):
    secrets = [llm_key("project"), llm_key("org", scope="organization"), llm_key("partner", scope="partner")]
    assert selected(secrets, "api.anthropic.com", "/v1/messages", allowed) == winner


def test_secret_of_a_level_that_does_not_match_the_path_falls_back_to_the_next_level():
    secrets = [
        llm_key("project-files", path="/v1/files/*"),
        llm_key("org", scope="organization"),
    ]
    assert selected(secrets, "api.anthropic.com", "/v1/messages") == ["org"]
    assert selected(secrets, "api.anthropic.com", "/v1/files/abc?limit=1") == ["project-files"]


@pytest.mark.parametrize(
    ("secrets", "expected"),
    [
        pytest.param(
            [secret("p", injection=header("X-Token")), secret("o", scope="organization", injection=query("key"))],
            ["p", "o"],
            id="header and query of different levels both apply",
        ),
        pytest.param(
            [secret("p", injection=header("X-Token")), secret("o", scope="organization", injection=header("x-token"))],
            ["p"],
            id="same header name in another case is the same kind",
        ),
        pytest.param(
            [secret("p", injection=header("X-Token")), secret("o", scope="organization", injection=header("X-Other"))],
            ["p", "o"],
            id="different header names are different kinds",
        ),
        pytest.param(
            [secret("p", injection=query("key")), secret("o", scope="organization", injection=query("Key"))],
            ["p", "o"],
            id="query parameter names are case-sensitive",
        ),
        pytest.param(
            [secret("p", injection=query("key")), secret("o", scope="organization", injection=query("key"))],
            ["p"],
            id="same query parameter",
        ),
        pytest.param(
            [secret("o", scope="organization", injection=path_template("/bot{value}")), secret("p", injection=path_regex("^/x", "/{value}"))],
            ["p"],
            id="only one path rewrite applies",
        ),
        pytest.param(
            [secret("a", type="anthropic"), secret("g", injection=header("X-Token"))],
            ["a", "g"],
            id="llm key and generic header both apply",
        ),
    ],
)
def test_one_secret_per_credential_kind(secrets, expected):
    assert selected(secrets) == expected


@pytest.mark.parametrize(
    ("secrets", "host", "expected"),
    [
        pytest.param(
            [secret("generic-auth", injection=header("Authorization", "Bearer {value}"), host="api.openai.com"),
             llm_key("org-openai", "openai", scope="organization")],
            "api.openai.com", ["generic-auth"], id="project authorization header shadows org openai key",
        ),
        pytest.param(
            [secret("generic-auth", scope="organization", injection=header("authorization"), host="api.openai.com"),
             llm_key("project-openai", "openai")],
            "api.openai.com", ["project-openai"], id="project openai key shadows org authorization header",
        ),
        pytest.param(
            [llm_key("anthropic"), secret("generic-x-api-key", scope="organization", host="api.anthropic.com", injection=header("X-Api-Key"))],
            "api.anthropic.com", ["anthropic"], id="anthropic key owns x-api-key",
        ),
        pytest.param(
            [llm_key("anthropic", scope="organization"), secret("generic-auth", host="api.anthropic.com", injection=header("Authorization"))],
            "api.anthropic.com", ["generic-auth"], id="anthropic key removes authorization so it yields to a better one",
        ),
    ],
)
def test_secrets_writing_the_same_header_do_not_both_apply(secrets, host, expected):
    assert selected(secrets, host) == expected


@pytest.mark.parametrize(
    ("secrets", "path", "winner"),
    [
        pytest.param([secret("wild", host="*.example.com"), secret("exact", host="v1.api.example.com")], "/", "exact", id="exact host over wildcard"),
        pytest.param(
            [secret("shallow", host="*.example.com"), secret("deep", host="*.api.example.com")], "/", "deep",
            id="deeper wildcard over shallower",
        ),
        pytest.param([secret("any"), secret("prefix", path="/v1/*")], "/v1/items", "prefix", id="path prefix over every path"),
        pytest.param([secret("star", path="*"), secret("prefix", path="/v1*")], "/v1/items", "prefix", id="path prefix over star"),
        pytest.param(
            [secret("short", path="/v1/*"), secret("long", path="/v1/items/*")], "/v1/items/7", "long",
            id="longer prefix over shorter",
        ),
        pytest.param(
            [secret("prefix", path="/v1/items/*"), secret("exact", path="/v1/items")], "/v1/items", "exact",
            id="exact path over prefix",
        ),
        pytest.param(
            [secret("old", created="2025-01-01T00:00:00Z"), secret("new", created="2025-02-01T00:00:00Z")], "/", "new",
            id="newest on a tie",
        ),
        pytest.param(
            [secret("utc", created="2025-01-01T23:30:00Z"), secret("offset", created="2025-01-02T01:00:00+02:00")], "/", "utc",
            id="created_at compared as instants not strings",
        ),
        pytest.param([secret("b"), secret("a")], "/", "a", id="id on a full tie"),
    ],
)
def test_within_a_level_the_most_specific_pattern_wins(secrets, path, winner):
    host = "v1.api.example.com" if any(spec.host_pattern.startswith("*.") for spec in secrets) else "api.example.com"
    assert selected(secrets, host, path) == [winner]
    assert selected(list(reversed(secrets)), host, path) == [winner]


def test_level_beats_specificity_for_generic_kinds_too():
    secrets = [secret("org-exact", scope="organization", path="/v1/items"), secret("project-wild", host="*.example.com")]
    assert selected(secrets, "api.example.com", "/v1/items") == ["project-wild"]


@pytest.mark.parametrize(
    ("host", "path", "expected"),
    [
        ("API.Example.COM.", "/", ["s"]),
        ("api.example.com:443", "/", ["s"]),
        ("example.com", "/", []),
        ("api.example.com", "/v1/items?x=1", ["s"]),
    ],
)
def test_request_host_and_path_are_normalized_before_matching(host, path, expected):
    assert selected([secret("s")], host, path) == expected


def test_no_secret_for_a_host_without_any():
    assert selected([secret("s", host="*.example.com")], "github.com") == []


def test_secret_only_under_its_path():
    secrets = [secret("s", path="/v1/*")]
    assert selected(secrets, path="/v1") == ["s"]
    assert selected(secrets, path="/v10") == []
    assert selected(secrets, path="/v2/x") == []
