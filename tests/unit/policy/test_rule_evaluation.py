"""Policy rules: action precedence, filters (enabled, agent, method, path), deny mode."""
from __future__ import annotations

from itertools import permutations

import pytest

from credgate.policy import CompiledConfig, RateLimitWindow, RuleAction, RuleSpec

from .factories import rule

ACTIONS = ["block", "manual_approval", "rate_limit", "allow"]


def decide(rules, *, host="api.example.com", path="/v1/items", method="GET", agent="agent-a",
           credentialed=True, llm_host=None, mode="allow"):
    return CompiledConfig.build([], rules, mode).evaluate(host, path, method, agent, credentialed, llm_host)


@pytest.mark.parametrize("action", ACTIONS)
def test_a_single_matching_rule_decides(action):
    decision = decide([rule("r", action)])
    assert decision.action == action
    assert decision.rule is not None and decision.rule.id == "r"
    assert [r.id for r in decision.rules] == ["r"]
    assert not decision.default_deny


@pytest.mark.parametrize(("first", "second"), list(permutations(ACTIONS, 2)))
def test_block_beats_manual_approval_beats_rate_limit_beats_allow(first, second):
    winner = min(first, second, key=ACTIONS.index)
    decision = decide([rule("first", first), rule("second", second)])
    assert decision.action == winner
    assert decision.rule.id == ("first" if winner == first else "second")
    assert [r.id for r in decision.rules] == [decision.rule.id]


def test_no_matching_rule_allows_without_a_rule():
    decision = decide([rule("elsewhere", "block", host="other.example.com")])
    assert decision.action is RuleAction.ALLOW
    assert decision.rule is None and decision.rules == ()
    assert not decision.default_deny


def test_disabled_rule_is_ignored():
    decision = decide([rule("off", "block", enabled=False), rule("on", "allow")])
    assert decision.action == "allow"
    assert decision.rule.id == "on"


@pytest.mark.parametrize(
    ("rule_agent", "request_agent", "blocked"),
    [(None, "agent-a", True), ("agent-a", "agent-a", True), ("agent-a", "agent-b", False), ("agent-a", None, False)],
)
def test_agent_scoped_rule_applies_to_that_agent_only(rule_agent, request_agent, blocked):
    assert (decide([rule("r", "block", agent=rule_agent)], agent=request_agent).action == "block") is blocked


@pytest.mark.parametrize(
    ("rule_method", "request_method", "blocked"),
    [
        (None, "GET", True),
        ("DELETE", "DELETE", True),
        ("DELETE", "delete", True),
        ("delete", "DELETE", True),
        ("DELETE", "GET", False),
        ("*", "PATCH", True),
    ],
)
def test_method_filter(rule_method, request_method, blocked):
    assert (decide([rule("r", "block", method=rule_method)], method=request_method).action == "block") is blocked


@pytest.mark.parametrize(
    ("rule_path", "request_path", "blocked"),
    [
        ("/admin/*", "/admin", True),
        ("/admin/*", "/admin/users?x=1", True),
        ("/admin/*", "/administrator", False),
        ("/admin/*", "/%61dmin/users", True),
        ("/admin/*", "//admin/users", True),
        ("/admin/*", "/public/../admin/users", True),
        ("/admin/*", "/public/%2e%2e/admin", True),
        ("/admin", "/admin/", False),
    ],
)
def test_path_filter_cannot_be_stepped_around_by_encoding(rule_path, request_path, blocked):
    assert (decide([rule("r", "block", path=rule_path)], path=request_path).action == "block") is blocked


@pytest.mark.parametrize(
    ("rule_host", "request_host", "blocked"),
    [
        ("*.example.com", "api.example.com", True),
        ("*.example.com", "example.com", False),
        ("api.example.com", "API.EXAMPLE.COM.", True),
        ("api.example.com", "api.example.com:443", True),
    ],
)
def test_host_filter(rule_host, request_host, blocked):
    assert (decide([rule("r", "block", host=rule_host)], host=request_host).action == "block") is blocked


def test_rules_of_all_scopes_apply_and_org_block_overrides_project_allow():
    decision = decide([rule("project-allow", "allow"), rule("org-block", "block", scope="organization")])
    assert decision.action == "block"
    assert decision.rule.id == "org-block"


def test_every_matching_rate_limit_rule_is_returned_most_specific_first():
    rules = [
        rule("org-wide", "rate_limit", scope="organization", host="*.example.com", limit=1000, window="day"),
        rule("project-items", "rate_limit", path="/v1/items", limit=10),
        rule("other-agent", "rate_limit", agent="agent-b"),
        rule("allow", "allow"),
    ]
    decision = decide(rules)
    assert decision.action == "rate_limit"
    assert [r.id for r in decision.rules] == ["project-items", "org-wide"]
    assert decision.rule.id == "project-items"
    assert decision.rules[1].rate_limit == 1000
    assert decision.rules[1].rate_limit_window is RateLimitWindow.DAY
    assert RateLimitWindow.DAY.seconds == 86400


@pytest.mark.parametrize(
    ("rules", "expected"),
    [
        pytest.param([rule("wild", "block", host="*.example.com"), rule("exact", "block")], "exact", id="exact host first"),
        pytest.param([rule("org", "block", scope="organization"), rule("project", "block")], "project", id="project first"),
        pytest.param([rule("any", "block"), rule("get", "block", method="GET")], "get", id="method-specific first"),
        pytest.param([rule("all", "block"), rule("mine", "block", agent="agent-a")], "mine", id="agent-specific first"),
        pytest.param([rule("b", "block"), rule("a", "block")], "a", id="id on a tie"),
    ],
)
def test_deciding_rule_among_the_same_action_is_the_most_specific(rules, expected):
    assert decide(rules).rule.id == expected
    assert decide(list(reversed(rules))).rule.id == expected


@pytest.mark.parametrize(
    ("rules", "host", "credentialed", "llm_host", "action", "default_deny"),
    [
        pytest.param([], "api.example.com", True, None, "block", True, id="credentialed non-llm without rule is denied"),
        pytest.param([], "api.anthropic.com", True, None, "allow", False, id="llm host is exempt"),
        pytest.param([], "eu.api.openai.com", True, None, "allow", False, id="regional llm host is exempt"),
        pytest.param([], "api.anthropic.com", True, False, "block", True, id="caller's llm_host flag wins"),
        pytest.param([], "api.example.com", True, True, "allow", False, id="caller says llm host"),
        pytest.param([], "api.example.com", False, None, "allow", False, id="uncredentialed is not subject"),
        pytest.param([rule("a", "allow")], "api.example.com", True, None, "allow", False, id="allow rule lets it through"),
        pytest.param([rule("r", "rate_limit")], "api.example.com", True, None, "rate_limit", False, id="rate limit lets it through"),
        pytest.param([rule("m", "manual_approval")], "api.example.com", True, None, "manual_approval", False, id="approval decides"),
        pytest.param([rule("a", "allow", path="/other")], "api.example.com", True, None, "block", True, id="allow for other path"),
        pytest.param([rule("a", "allow", agent="agent-b")], "api.example.com", True, None, "block", True, id="allow for other agent"),
        pytest.param([rule("a", "allow", enabled=False)], "api.example.com", True, None, "block", True, id="disabled allow"),
        pytest.param([rule("b", "block", host="api.anthropic.com")], "api.anthropic.com", True, None, "block", False, id="rule blocks llm host"),
    ],
)
def test_deny_mode(rules, host, credentialed, llm_host, action, default_deny):
    decision = decide(rules, host=host, credentialed=credentialed, llm_host=llm_host, mode="deny")
    assert decision.action == action
    assert decision.default_deny is default_deny
    assert (decision.rule is None) is (not rules or default_deny)


def test_allow_mode_lets_credentialed_non_llm_request_through_without_rule():
    decision = decide([], credentialed=True, mode="allow")
    assert decision.action == "allow" and not decision.default_deny


@pytest.mark.parametrize(
    "fields",
    [
        {"action": "rate_limit", "rate_limit": None, "rate_limit_window": "minute"},
        {"action": "rate_limit", "rate_limit": 5, "rate_limit_window": None},
        {"action": "rate_limit", "rate_limit": 0, "rate_limit_window": "hour"},
        {"action": "rate_limit", "rate_limit": 5, "rate_limit_window": "week"},
        {"action": "throttle", "rate_limit": None, "rate_limit_window": None},
    ],
)
def test_invalid_rule_is_refused_at_construction(fields):
    with pytest.raises(ValueError):
        RuleSpec("r", "project", "name", "api.example.com", None, None, fields["action"], True, None,
                 fields["rate_limit"], fields["rate_limit_window"])
