"""Placing a secret into a request, per variant; refusals instead of a broken request; values never shown."""
from __future__ import annotations

import pytest

from credgate.errors import DomainError
from credgate.policy import CompiledConfig, InjectionPlan, InjectionRefused, SecretInjection, apply_injections

from .factories import header, llm_key, path_regex, path_template, query, secret

AGENT_HEADERS = [("Content-Type", "application/json"), ("Authorization", "Bearer agent"), ("X-Api-Key", "agent-key"), ("accept", "*/*")]


def inject(spec, target="/v1/items", headers=()):
    return apply_injections(target, list(headers), [spec])


# Anthropic and OpenAI


def test_anthropic_key_sets_x_api_key_and_removes_every_authorization_header():
    headers = AGENT_HEADERS + [("authorization", "Basic again")]
    target, result = inject(llm_key("a", value="sk-ant-1"), "/v1/messages", headers)
    assert target == "/v1/messages"
    assert result == [("Content-Type", "application/json"), ("accept", "*/*"), ("x-api-key", "sk-ant-1")]


def test_openai_key_sets_bearer_authorization_and_replaces_agent_authorization():
    _, result = inject(llm_key("o", "openai", value="sk-1"), "/v1/chat/completions", AGENT_HEADERS)
    assert result == [("Content-Type", "application/json"), ("X-Api-Key", "agent-key"), ("accept", "*/*"), ("authorization", "Bearer sk-1")]


# Generic header


@pytest.mark.parametrize(
    ("value_format", "expected"),
    [(None, "s3cr3t"), ("Token {value}", "Token s3cr3t"), ("{value}:x", "s3cr3t:x")],
)
def test_header_injection_formats_the_value(value_format, expected):
    _, result = inject(secret("h", injection=header("X-Token", value_format), value="s3cr3t"))
    assert result == [("X-Token", expected)]


def test_header_injection_overwrites_every_agent_header_of_that_name_case_insensitively():
    headers = [("x-token", "a"), ("Accept", "*/*"), ("X-TOKEN", "b")]
    _, result = inject(secret("h", injection=header("X-Token"), value="v"), headers=headers)
    assert result == [("Accept", "*/*"), ("X-Token", "v")]


@pytest.mark.parametrize("value", ["$1", "\\1", "{value}", "\\g<0>", "%s", "{0}", "%(value)s"])
def test_header_value_is_inserted_literally(value):
    _, result = inject(secret("h", injection=header("X-Token", "pre {value} post"), value=value))
    assert result == [("X-Token", f"pre {value} post")]


@pytest.mark.parametrize("value", ["a\r\nX-Evil: 1", "a\nb", "a\rb", "a\0b", "a\x01b", "a\x7fb", "a\x85b", "a\x1bb", "\ud800"])
@pytest.mark.parametrize("spec_of", [
    lambda v: secret("sec-1", injection=header("X-Token"), value=v),
    lambda v: llm_key("sec-1", value=v),
    lambda v: llm_key("sec-1", "openai", value=v),
])
def test_header_value_with_control_characters_is_refused_naming_the_secret_only(value, spec_of):
    with pytest.raises(InjectionRefused) as refused:
        inject(spec_of(value), headers=AGENT_HEADERS)
    assert refused.value.secret_id == "sec-1"
    assert "sec-1" in str(refused.value)
    assert value not in str(refused.value) and value not in repr(refused.value)
    assert isinstance(refused.value, DomainError)


def test_header_value_may_contain_tab_and_non_ascii():
    _, result = inject(secret("h", injection=header("X-Token"), value="a\tb é"))
    assert result == [("X-Token", "a\tb é")]


# Query parameter


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("/v1/items", "/v1/items?key=s3cr3t"),
        ("/v1/items?", "/v1/items?key=s3cr3t"),
        ("/v1/items?a=1", "/v1/items?a=1&key=s3cr3t"),
        ("/v1/items?a=%7e&b=x+y&c&d=%2F;e=1", "/v1/items?a=%7e&b=x+y&c&d=%2F;e=1&key=s3cr3t"),
        ("/v1/items?a=1&", "/v1/items?a=1&&key=s3cr3t"),
        ("/v1/items?key=agent&a=1", "/v1/items?key=s3cr3t&a=1"),
        ("/v1/items?a=1&key=agent&b=2&key=again", "/v1/items?a=1&key=s3cr3t&b=2"),
        ("/v1/items?a=1&key&b", "/v1/items?a=1&key=s3cr3t&b"),
        ("/v1/items?a=1&k%65y=agent", "/v1/items?a=1&key=s3cr3t"),
        ("/v1/items?keyx=1&xkey=2&a=key", "/v1/items?keyx=1&xkey=2&a=key&key=s3cr3t"),
        ("/v1/items?q=key+x&b=%2B&monkey=1", "/v1/items?q=key+x&b=%2B&monkey=1&key=s3cr3t"),
        ("/v1/items?a=1#frag", "/v1/items?a=1&key=s3cr3t#frag"),
        ("/v1/items#frag", "/v1/items?key=s3cr3t#frag"),
        ("/v1/it%20ems?a=%zz", "/v1/it%20ems?a=%zz&key=s3cr3t"),
    ],
)
def test_query_injection_sets_one_parameter_and_keeps_the_others_byte_for_byte(target, expected):
    result, headers = inject(secret("q", injection=query("key"), value="s3cr3t"), target, [("a", "b")])
    assert result == expected
    assert headers == [("a", "b")]


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        ("AZaz09-._~", "AZaz09-._~"),
        ("a b", "a%20b"),
        ("a/b?c#d&e=f+g%h", "a%2Fb%3Fc%23d%26e%3Df%2Bg%25h"),
        ("é", "%C3%A9"),
        ("$1{value}", "%241%7Bvalue%7D"),
    ],
)
def test_query_value_is_percent_encoded_leaving_unreserved_characters(value, encoded):
    result, _ = inject(secret("q", injection=query("key"), value=value), "/p")
    assert result == f"/p?key={encoded}"


def test_query_injection_uses_the_format_and_encodes_the_name():
    result, _ = inject(secret("q", injection=query("api key", "Bearer {value}"), value="v"), "/p?api%20key=old")
    assert result == "/p?api%20key=Bearer%20v"


# Path template


@pytest.mark.parametrize(
    ("template", "target", "expected"),
    [
        ("/bot{value}", "/sendMessage?x=1", "/bot123:AA-b_c/sendMessage?x=1"),
        ("/bot{value}", "/", "/bot123:AA-b_c/"),
        ("/bot{value}", "", "/bot123:AA-b_c/"),
        ("/bot{value}", "?x=1", "/bot123:AA-b_c/?x=1"),
        ("/v1/{value}/", "/items", "/v1/123:AA-b_c/items"),
        ("/bot{value}", "/a?x=/b#f", "/bot123:AA-b_c/a?x=/b#f"),
    ],
)
def test_path_template_is_prefixed_to_the_request_path(template, target, expected):
    result, _ = inject(secret("t", injection=path_template(template), value="123:AA-b_c"), target)
    assert result == expected


# Path regex


@pytest.mark.parametrize(
    ("regex", "replacement", "target", "expected"),
    [
        (r"^/v1/(\w+)", "/v1/$1/{value}", "/v1/items/7?x=1", "/v1/items/k3y/7?x=1"),
        (r"/(\d+)", "/{value}-$1", "/a/1/b/2", "/a/k3y-1/b/2"),
        (r"^/v1/(\w+)(/x)?", "/$1$2/{value}", "/v1/items/7", "/items/k3y/7"),
        (r"^/v1", "$0/{value}", "/v1/items", "/v1/k3y/items"),
        (r"^/v2", "/{value}", "/v1/items", "/v1/items"),
        (r"key", "{value}", "/path?key=1", "/path?key=1"),
        (r"^/(a)", "/$1\\1\\g<0>{value}", "/a/b", "/a\\1\\g<0>k3y/b"),
    ],
)
def test_path_regex_replaces_the_first_match_in_the_path_only(regex, replacement, target, expected):
    result, _ = inject(secret("r", injection=path_regex(regex, replacement), value="k3y"), target)
    assert result == expected


@pytest.mark.parametrize("value", ["$1", "$0", "$$", "a$1b", "@:!*+,;='()&~"])
def test_path_regex_inserts_the_value_literally(value):
    result, _ = inject(secret("r", injection=path_regex(r"^/(v1)", "/$1/{value}"), value=value), "/v1/items")
    assert result == f"/v1/{value}/items"


@pytest.mark.parametrize("value", ["a/b", "a?b", "a#b", "a%2Fb", "a b", "é", "\\g<0>", "{value}", "a\nb", "", "a[b]", "a\"b"])
@pytest.mark.parametrize("injection", [path_template("/bot{value}"), path_regex(r"^/v1", "/v1/{value}")])
def test_path_value_outside_pchar_is_refused_not_encoded(value, injection):
    with pytest.raises(InjectionRefused) as refused:
        inject(secret("path-secret", injection=injection, value=value), "/v1/items")
    assert refused.value.secret_id == "path-secret"
    assert value == "" or value not in str(refused.value)


@pytest.mark.parametrize(
    ("injection", "value", "refused"),
    [
        (path_template("/{value}/x"), "..", True),
        (path_template("/{value}"), ".", True),
        (path_template("/bot{value}"), "..", False),
        (path_template("/{value}"), "...", False),
        (path_regex(r"^/v1", "/v1/{value}"), "..", True),
        (path_regex(r"^/v1", "/v1/{value}"), ".", True),
        (path_regex(r"^/v1/", "/v1/x{value}"), "..", False),
        (path_regex(r"^/(v1)", "/$1{value}"), "..", False),
        (path_regex(r"^/(x)?v1", "/$1{value}"), "..", True),
        (path_regex(r"^/(x)?", "/$1{value}"), "..", False),
    ],
)
def test_path_value_that_would_form_a_dot_segment_is_refused(injection, value, refused):
    spec = secret("s", injection=injection, value=value)
    if refused:
        with pytest.raises(InjectionRefused):
            inject(spec, "/v1/items")
    else:
        inject(spec, "/v1/items")


# Plans


def test_one_plan_applies_header_query_and_path_secrets_together():
    config = CompiledConfig.build(
        [
            secret("h", injection=header("X-Token"), value="hv"),
            secret("q", scope="organization", injection=query("key"), value="q v"),
            secret("p", scope="partner", injection=path_template("/t/{value}"), value="pv"),
        ],
        [],
    )
    plan = config.resolve("api.example.com", "/items?a=1")
    target, headers = plan.apply("/items?a=1", [("x-token", "agent"), ("accept", "*/*")])
    assert target == "/t/pv/items?a=1&key=q%20v"
    assert headers == [("accept", "*/*"), ("X-Token", "hv")]


def test_apply_leaves_the_callers_headers_untouched():
    headers = [("authorization", "agent")]
    inject(llm_key("o", "openai"), headers=headers)
    plan = InjectionPlan.for_secrets([llm_key("o", "openai")])
    plan.apply("/", headers)
    assert headers == [("authorization", "agent")]


def test_empty_plan_changes_nothing():
    config = CompiledConfig.build([], [])
    plan = config.resolve("api.example.com", "/x")
    assert not plan
    assert plan.apply("/x?y=%20", [("a", "b")]) == ("/x?y=%20", [("a", "b")])


def test_secrets_writing_the_same_place_cannot_share_a_plan():
    with pytest.raises(ValueError):
        apply_injections("/", [], [secret("a", injection=header("X-Token")), secret("b", injection=header("x-token"))])
    with pytest.raises(ValueError):
        apply_injections("/", [], [llm_key("a"), llm_key("b", "openai")])


def test_one_refused_secret_refuses_the_whole_plan():
    with pytest.raises(InjectionRefused) as refused:
        apply_injections("/", [], [secret("fine", injection=header("X-A")), secret("bad", injection=header("X-B"), value="a\nb")])
    assert refused.value.secret_id == "bad"


# The value never shows


def test_secret_value_appears_in_no_repr_or_str():
    value = "sk-very-secret-value"
    specs = [
        llm_key("a", value=value),
        secret("h", injection=header("X-Token"), value=value),
        secret("q", scope="organization", injection=query("key"), value=value),
        secret("p", scope="partner", injection=path_template("/bot{value}"), value=value),
    ]
    config = CompiledConfig.build(specs, [])
    plan = config.resolve("api.example.com", "/")
    shown = [repr(spec) for spec in specs] + [str(spec) for spec in specs]
    shown += [repr(SecretInjection(spec)) for spec in specs]
    shown += [repr(plan), str(plan), repr(config), repr(config.select_secrets("api.example.com", "/"))]
    assert plan.secrets and all(value not in text for text in shown)


def test_path_regexes_run_on_re2_so_no_pattern_can_backtrack_forever():
    from credgate.domain.path_regex import compile_path_regex

    pattern = compile_path_regex(r"(a+)+$")
    assert type(pattern).__module__.startswith("re2")
    # Exponential for a backtracking engine; linear for RE2.
    assert pattern.search("a" * 40 + "!") is None
