"""Properties over wide inputs: injection never corrupts a request, matching agrees with a reference."""
from __future__ import annotations

import re
import unicodedata
from urllib.parse import unquote

from hypothesis import given, settings
from hypothesis import strategies as st

from credgate.policy import (
    CompiledConfig,
    InjectionRefused,
    RuleAction,
    apply_injections,
    compile_path_pattern,
    host_matches,
    normalize_host,
)

from .factories import header, llm_key, path_regex, path_template, query, rule, secret

FEW = settings(max_examples=150, deadline=None)
MANY = settings(max_examples=300, deadline=None)

# Values an attacker or a careless user might store: template syntax, escapes, URL syntax, any text.
TRICKY = ["$1", "$0", "\\1", "\\g<0>", "{value}", "%", "%2F", "/", "..", ".", "?", "#", "&", "=", "+", " ", "\t", "\r\n", "é", "\ud800"]
any_text = st.text(st.characters(exclude_categories=()), max_size=12)
secret_values = st.lists(st.one_of(st.sampled_from(TRICKY), any_text), max_size=5).map("".join)
PCHAR = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@")
path_values = st.lists(st.one_of(st.sampled_from(TRICKY + ["a", "Z9", "-._~", "!$&'()*+,;=:@"]), st.text("ab.:", max_size=3)), max_size=5).map("".join)
path_texts = st.lists(st.sampled_from(["/", "v1", "items", "7", "a", ".", "%20", "é", ";x=1", "{value}", "$1"]), max_size=8).map("".join)
query_texts = st.lists(
    st.sampled_from(["&", "=", "key", "Key", "k%65y", "a", "b", "%20", "+", "%zz", "é", ";", "/", "?", "keyx", "$1"]), max_size=10
).map("".join)
fragments = st.one_of(st.just(""), st.text("#abc/?&=", max_size=5).map(lambda text: "#" + text))


def header_safe(text: str) -> bool:
    return all(char == "\t" or unicodedata.category(char) not in ("Cc", "Cs") for char in text)


def split_target(target: str) -> tuple[str, str | None, str]:
    before_fragment, hash_sign, fragment = target.partition("#")
    path, question_mark, query_string = before_fragment.partition("?")
    return path, (query_string if question_mark else None), hash_sign + fragment


# Header injection


@FEW
@given(
    value=secret_values,
    value_format=st.sampled_from([None, "{value}", "Bearer {value}", "k={value};"]),
    headers=st.lists(st.tuples(st.sampled_from(["X-Token", "x-token", "X-TOKEN", "Accept", "authorization", "x-tokens"]), any_text), max_size=6),
)
def test_header_injection_leaves_exactly_one_header_of_that_name_or_refuses(value, value_format, headers):
    expected_value = (value_format or "{value}").replace("{value}", value)
    try:
        target, result = apply_injections("/p?q=1", headers, [secret("s", injection=header("X-Token", value_format), value=value)])
    except InjectionRefused:
        assert not value or not header_safe(expected_value)
        return
    assert value and header_safe(expected_value)
    assert target == "/p?q=1"
    ours = [pair for pair in result if pair[0].lower() == "x-token"]
    assert ours == [("X-Token", expected_value)]
    assert [pair for pair in result if pair[0].lower() != "x-token"] == [pair for pair in headers if pair[0].lower() != "x-token"]


@FEW
@given(value=secret_values, headers=st.lists(st.tuples(st.sampled_from(["Authorization", "X-Api-Key", "x-api-key", "Accept"]), any_text), max_size=6))
def test_anthropic_injection_leaves_one_x_api_key_and_no_authorization(value, headers):
    try:
        _, result = apply_injections("/v1/messages", headers, [llm_key("a", value=value)])
    except InjectionRefused:
        assert not value or not header_safe(value)
        return
    assert [pair for pair in result if pair[0].lower() in ("x-api-key", "authorization")] == [("x-api-key", value)]
    assert [pair for pair in result if pair[0] == "Accept"] == [pair for pair in headers if pair[0] == "Accept"]


# Query injection


def names_key(parameter: str, name: str) -> bool:
    raw_name = parameter.split("=", 1)[0]
    return raw_name == name or unquote(raw_name) == name


@MANY
@given(
    value=secret_values,
    name=st.sampled_from(["key", "api key", "k&y"]),
    param_format=st.sampled_from([None, "Bearer {value}"]),
    path=path_texts,
    query_string=st.one_of(st.none(), query_texts),
    fragment=fragments,
)
def test_query_injection_sets_the_parameter_once_and_never_alters_other_parameters(value, name, param_format, path, query_string, fragment):
    target = path + ("" if query_string is None else "?" + query_string) + fragment
    expected_value = (param_format or "{value}").replace("{value}", value)
    try:
        result, _ = apply_injections(target, [], [secret("s", injection=query(name, param_format), value=value)])
    except InjectionRefused:
        assert not value or any(unicodedata.category(char) == "Cs" for char in expected_value)
        return
    result_path, result_query, result_fragment = split_target(result)
    assert (result_path, result_fragment) == (path, fragment)
    assert result_query is not None
    parameters = result_query.split("&")
    ours = [parameter for parameter in parameters if names_key(parameter, name)]
    assert len(ours) == 1
    raw_value = ours[0].split("=", 1)[1]
    assert unquote(raw_value) == expected_value
    assert re.fullmatch(r"[A-Za-z0-9\-._~%]*", raw_value)
    original = [] if not query_string else query_string.split("&")
    assert [p for p in parameters if not names_key(p, name)] == [p for p in original if not names_key(p, name)]
    if not any(names_key(parameter, name) for parameter in original) and query_string:
        assert result_query.startswith(query_string + "&")


# Path injections


def pchar_only(value: str) -> bool:
    return bool(value) and set(value) <= PCHAR


@MANY
@given(
    value=path_values,
    template=st.sampled_from(["/bot{value}", "/{value}", "/v1/{value}/", "/x{value}y"]),
    path=path_texts,
    query_string=st.one_of(st.none(), query_texts),
)
def test_path_template_puts_the_value_in_front_of_an_unchanged_request_or_refuses(value, template, path, query_string):
    target = path + ("" if query_string is None else "?" + query_string)
    whole_segment = template in ("/{value}", "/v1/{value}/")
    try:
        result, _ = apply_injections(target, [], [secret("s", injection=path_template(template), value=value)])
    except InjectionRefused as refused:
        assert not pchar_only(value) or (whole_segment and value in (".", ".."))
        assert refused.secret_id == "s"
        return
    assert pchar_only(value) and not (whole_segment and value in (".", ".."))
    head, tail = template.split("{value}")
    request_path = path if path.startswith("/") else "/" + path
    rest = request_path[1:] if tail.endswith("/") else request_path
    assert result == head + value + tail + rest + ("" if query_string is None else "?" + query_string)


REGEX_CASES = [
    (r"^/(v1)/", "/$1/{value}/"),
    (r"/(\d+)(/items)?", "/n$1-{value}$2"),
    (r"items", "{value}"),
    (r"^/", "$0{value}/"),
    (r"(é|%20)", "[$1]{value}[$1]"),
]


@MANY
@given(value=path_values, case=st.sampled_from(REGEX_CASES), path=path_texts, query_string=st.one_of(st.none(), query_texts))
def test_path_regex_rewrites_only_the_first_match_with_the_value_as_data_or_refuses(value, case, path, query_string):
    regex, replacement = case
    target = path + ("" if query_string is None else "?" + query_string)
    match = re.search(regex, path)
    expected = target
    inserted_at: list[int] = []
    if match is not None:
        expanded = re.sub(r"\$(\d+)", lambda ref: match.group(int(ref.group(1))) or "", replacement)
        before, after = expanded.split("{value}")  # each replacement here holds the token once
        new_path = path[: match.start()] + before + value + after + path[match.end():]
        inserted_at.append(match.start() + len(before))
        expected = new_path + ("" if query_string is None else "?" + query_string)
    try:
        result, _ = apply_injections(target, [], [secret("s", injection=path_regex(regex, replacement), value=value)])
    except InjectionRefused:
        if pchar_only(value):
            start = inserted_at[0]
            new_path = expected.split("?", 1)[0]
            segment = new_path[: start].rsplit("/", 1)[-1] + value + new_path[start + len(value):].split("/", 1)[0]
            assert segment in (".", "..")
        return
    assert pchar_only(value)
    if match is None:
        assert result == target
    else:
        assert result == expected
        assert result[inserted_at[0] : inserted_at[0] + len(value)] == value


# Matching agrees with a reference implementation


def reference_host_matches(pattern: str, host: str) -> bool:
    host_labels = host.split(".")
    if pattern.startswith("*."):
        suffix = pattern[2:].split(".")
        return len(host_labels) > len(suffix) and host_labels[-len(suffix):] == suffix
    return host_labels == pattern.split(".")


def reference_glob(pattern: str, text: str) -> bool:
    if not pattern:
        return not text
    if pattern[0] == "*":
        return any(reference_glob(pattern[1:], text[i:]) for i in range(len(text) + 1))
    return bool(text) and text[0] == pattern[0] and reference_glob(pattern[1:], text[1:])


def reference_path_matches(pattern: str | None, path: str) -> bool:
    if pattern is None or pattern == "*":
        return True
    if pattern.endswith("/*") and len(pattern) > 2 and reference_glob(pattern[:-2], path):
        return True
    return reference_glob(pattern, path)


labels = st.sampled_from(["a", "b", "api", "example", "com"])
hosts = st.lists(labels, min_size=1, max_size=4).map(".".join)
host_patterns = st.one_of(hosts, hosts.map(lambda host: "*." + host))
segments = st.sampled_from(["a", "b", "ab", "v1", "*", "a*", "*b"])
path_patterns = st.one_of(st.none(), st.just("*"), st.lists(segments, min_size=1, max_size=3).map(lambda parts: "/" + "/".join(parts)))
request_paths = st.builds(  # canonical paths (no empty or dot segments): canonicalization has its own table
    lambda parts, trailing_slash: "/" + "/".join(parts) + ("/" if trailing_slash and parts else ""),
    st.lists(st.sampled_from(["a", "b", "ab", "v1"]), max_size=4),
    st.booleans(),
)


@MANY
@given(pattern=host_patterns, host=hosts, uppercase=st.booleans(), trailing_dot=st.booleans())
def test_host_matching_agrees_with_reference(pattern, host, uppercase, trailing_dot):
    request_host = (host.upper() if uppercase else host) + ("." if trailing_dot else "")
    assert host_matches(pattern, normalize_host(request_host)) is reference_host_matches(pattern, host)


@MANY
@given(pattern=path_patterns, path=request_paths)
def test_path_matching_agrees_with_reference(pattern, path):
    matcher = compile_path_pattern(pattern)
    assert (matcher is None or bool(matcher(path))) is reference_path_matches(pattern, path)


LEVELS = {"project": 0, "organization": 1, "partner": 2}
INJECTIONS = {
    "header-a": header("X-A"),
    "header-A": header("x-a"),
    "header-auth": header("Authorization"),
    "query-k": query("k"),
    "template": path_template("/t/{value}"),
    "regex": path_regex("^/", "/{value}/"),
}
secret_specs = st.builds(
    lambda index, scope, kind, host, path, day: secret(
        f"s{index:02d}", scope=scope,
        type=kind if kind in ("anthropic", "openai") else "generic",
        injection=None if kind in ("anthropic", "openai") else INJECTIONS[kind],
        host=host, path=path, created=f"2025-01-0{day}T00:00:00Z",
    ),
    st.integers(0, 99), st.sampled_from(list(LEVELS)), st.sampled_from(["anthropic", "openai", *INJECTIONS]),
    host_patterns, path_patterns, st.integers(1, 3),
)


def reference_kind_and_slots(spec):
    if spec.type.value == "anthropic":
        return "anthropic", {"x-api-key", "authorization"}
    if spec.type.value == "openai":
        return "openai", {"authorization"}
    injection = spec.injection
    if hasattr(injection, "headerName"):
        return "h:" + injection.headerName.lower(), {injection.headerName.lower()}
    if hasattr(injection, "paramName"):
        return "q:" + injection.paramName, {"?" + injection.paramName}
    return "path", {"/"}


def reference_key(spec):
    pattern = spec.host_pattern
    host_rank = (1, -len(pattern.split("."))) if pattern.startswith("*.") else (0, 0)
    path = spec.path_pattern
    if path is None:
        path_rank = (2, 0)
    elif "*" in path:
        path_rank = (1, -len(path.replace("*", "")))
    else:
        path_rank = (0, -len(path))
    return (LEVELS[spec.scope.value], host_rank, path_rank, -int(spec.created_at[8:10]), spec.id)


def reference_select(secrets, host, path, allowed):
    candidates = [
        spec for spec in secrets
        if (allowed is None or spec.id in allowed)
        and reference_host_matches(spec.host_pattern, host)
        and reference_path_matches(spec.path_pattern, path)
    ]
    best = {}
    for spec in sorted(candidates, key=reference_key):
        best.setdefault(reference_kind_and_slots(spec)[0], spec)
    chosen, taken = [], set()
    for spec in sorted(best.values(), key=reference_key):
        slots = reference_kind_and_slots(spec)[1]
        if not slots & taken:
            chosen.append(spec.id)
            taken |= slots
    return chosen


@MANY
@given(
    secrets=st.lists(secret_specs, max_size=12, unique_by=lambda spec: spec.id),
    host=hosts,
    path=request_paths,
    allowed=st.one_of(st.none(), st.frozensets(st.integers(0, 99).map(lambda index: f"s{index:02d}"))),
)
def test_secret_selection_agrees_with_a_linear_reference(secrets, host, path, allowed):
    config = CompiledConfig.build(secrets, [], "allow")
    assert [spec.id for spec in config.select_secrets(host, path, allowed)] == reference_select(secrets, host, path, allowed)


ACTION_ORDER = ["block", "manual_approval", "rate_limit", "allow"]
rule_specs = st.builds(
    lambda index, action, scope, host, path, method, agent, enabled: rule(
        f"r{index:02d}", action, scope=scope, host=host, path=path, method=method, agent=agent, enabled=enabled
    ),
    st.integers(0, 99), st.sampled_from(ACTION_ORDER), st.sampled_from(["project", "organization"]), host_patterns,
    path_patterns, st.sampled_from([None, "GET", "POST"]), st.sampled_from([None, "agent-a", "agent-b"]), st.booleans(),
)


@MANY
@given(
    rules=st.lists(rule_specs, max_size=10, unique_by=lambda spec: spec.id),
    host=hosts,
    path=request_paths,
    method=st.sampled_from(["GET", "post"]),
    agent=st.sampled_from(["agent-a", "agent-b", None]),
    mode=st.sampled_from(["allow", "deny"]),
    credentialed=st.booleans(),
    llm_host=st.booleans(),
)
def test_rule_evaluation_agrees_with_a_linear_reference(rules, host, path, method, agent, mode, credentialed, llm_host):
    decision = CompiledConfig.build([], rules, mode).evaluate(host, path, method, agent, credentialed, llm_host)
    matching = [
        spec for spec in rules
        if spec.enabled
        and reference_host_matches(spec.host_pattern, host)
        and reference_path_matches(spec.path_pattern, path)
        and spec.method in (None, method.upper())
        and spec.agent_id in (None, agent)
    ]
    if matching:
        action = min((spec.action.value for spec in matching), key=ACTION_ORDER.index)
        assert decision.action == action and not decision.default_deny
        assert {spec.id for spec in decision.rules} == {spec.id for spec in matching if spec.action == action}
        assert decision.rule == decision.rules[0]
    elif mode == "deny" and credentialed and not llm_host:
        assert decision.action is RuleAction.BLOCK and decision.default_deny and decision.rule is None
    else:
        assert decision.action is RuleAction.ALLOW and decision.rule is None and not decision.default_deny
