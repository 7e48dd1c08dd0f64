"""Host and path matching: normalization of the request side and every pattern shape of the design."""
from __future__ import annotations

import pytest

from credgate.policy import compile_path_pattern, host_matches, is_llm_host, normalize_host, request_path


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("api.example.com", "api.example.com"),
        ("API.Example.COM", "api.example.com"),
        ("api.example.com.", "api.example.com"),
        ("api.example.com:443", "api.example.com"),
        ("API.example.com.:8443", "api.example.com"),
        (" api.example.com ", "api.example.com"),
        ("[::1]:443", "[::1]"),
        ("[::1]", "[::1]"),
        ("10.0.0.1:80", "10.0.0.1"),
    ],
)
def test_request_host_is_normalized_like_stored_patterns(raw, normalized):
    assert normalize_host(raw) == normalized


@pytest.mark.parametrize(
    ("pattern", "host", "matches"),
    [
        ("api.example.com", "api.example.com", True),
        ("api.example.com", "example.com", False),
        ("api.example.com", "x.api.example.com", False),
        ("api.example.com", "api.example.co", False),
        ("*.example.com", "api.example.com", True),
        ("*.example.com", "a.b.c.example.com", True),
        ("*.example.com", "example.com", False),
        ("*.example.com", "badexample.com", False),
        ("*.example.com", "example.com.evil.net", False),
        ("*.example.com", ".example.com", False),
        ("*.api.example.com", "v1.api.example.com", True),
        ("*.api.example.com", "api.example.com", False),
    ],
)
def test_host_pattern_is_exact_or_any_subdomain_depth_but_never_the_apex(pattern, host, matches):
    assert host_matches(pattern, host) is matches


@pytest.mark.parametrize(
    ("host", "is_llm"),
    [
        ("api.anthropic.com", True),
        ("API.Anthropic.com.", True),
        ("api.openai.com", True),
        ("eu.api.openai.com", True),
        ("us.api.openai.com:443", True),
        ("a.b.api.openai.com", False),
        ("xapi.openai.com", False),
        ("openai.com", False),
        ("anthropic.com", False),
        ("console.anthropic.com", False),
        ("api.anthropic.com.evil.net", False),
        ("api.example.com", False),
    ],
)
def test_llm_hosts_are_the_vendor_api_hosts_and_openai_regional_endpoints(host, is_llm):
    assert is_llm_host(host) is is_llm


@pytest.mark.parametrize(
    ("target", "path"),
    [
        ("/v1/messages", "/v1/messages"),
        ("/v1/messages?beta=true", "/v1/messages"),
        ("/v1/messages#top", "/v1/messages"),
        ("/a?next=/../b", "/a"),
        ("", "/"),
        ("?x=1", "/"),
        ("/%61dmin", "/admin"),
        ("/%7Euser", "/~user"),
        ("/a%2fb", "/a%2Fb"),
        ("/a%2Fb", "/a%2Fb"),
        ("/a%20b", "/a%20b"),
        ("//admin", "/admin"),
        ("/x//y///z", "/x/y/z"),
        ("/x/../admin", "/admin"),
        ("/./admin", "/admin"),
        ("/%2e%2e/admin", "/admin"),
        ("/a/b/..", "/a/"),
        ("/a/.", "/a/"),
        ("/..", "/"),
        ("/.well-known/openid", "/.well-known/openid"),
        ("/a..b/", "/a..b/"),
    ],
)
def test_request_path_drops_query_and_reads_the_path_as_the_upstream_would(target, path):
    assert request_path(target) == path


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        (None, "/anything/at/all", True),
        ("*", "/", True),
        ("/v1/messages", "/v1/messages", True),
        ("/v1/messages", "/v1/messages/", False),
        ("/v1/messages", "/v1/messages/batches", False),
        ("/v1/messages", "/v1", False),
        ("/a/*", "/a", True),
        ("/a/*", "/a/", True),
        ("/a/*", "/a/b", True),
        ("/a/*", "/a/b/c", True),
        ("/a/*", "/ab", False),
        ("/a/*", "/", False),
        ("/a/*", "/b/a", False),
        ("/a*", "/a", True),
        ("/a*", "/ab", True),
        ("/a*", "/a/b", True),
        ("/a*", "/b", False),
        ("/*", "/", True),
        ("/*", "/x/y", True),
        ("/v1/*/files", "/v1/org/files", True),
        ("/v1/*/files", "/v1/a/b/files", True),
        ("/v1/*/files", "/v1/org/files/x", False),
        ("/v1/*/files/*", "/v1/org/files", True),
        ("/v1/*/files/*", "/v1/org/files/x", True),
        ("/v1/*/files/*", "/v1/org/filesx", False),
    ],
)
def test_path_pattern_shapes(pattern, path, matches):
    matcher = compile_path_pattern(pattern)
    assert (matcher is None or bool(matcher(path))) is matches
