"""Small builders for policy tests: a secret or rule with sensible defaults, overridden per case."""
from __future__ import annotations

from credgate.domain.injection import HeaderInjection, PathRegexInjection, PathTemplateInjection, QueryInjection
from credgate.policy import RuleSpec, SecretSpec

CREATED = "2025-01-01T00:00:00Z"


def header(name: str, value_format: str | None = None) -> HeaderInjection:
    return HeaderInjection(headerName=name, valueFormat=value_format)


def query(name: str, param_format: str | None = None) -> QueryInjection:
    return QueryInjection(paramName=name, paramFormat=param_format)


def path_template(template: str) -> PathTemplateInjection:
    return PathTemplateInjection(pathTemplate=template)


def path_regex(regex: str, replacement: str) -> PathRegexInjection:
    return PathRegexInjection(pathRegex=regex, pathReplacement=replacement)


def secret(
    id: str,
    *,
    scope: str = "project",
    type: str = "generic",
    host: str = "api.example.com",
    path: str | None = None,
    injection=None,
    value: str | None = None,
    created: str = CREATED,
) -> SecretSpec:
    if type == "generic" and injection is None:
        injection = header("x-api-token")
    return SecretSpec(id, scope, type, host, path, injection, f"value-of-{id}" if value is None else value, created)


def llm_key(id: str, vendor: str = "anthropic", *, scope: str = "project", host: str | None = None, **fields) -> SecretSpec:
    default_host = "api.anthropic.com" if vendor == "anthropic" else "api.openai.com"
    return secret(id, scope=scope, type=vendor, host=host or default_host, **fields)


def rule(
    id: str,
    action: str,
    *,
    scope: str = "project",
    host: str = "api.example.com",
    path: str | None = None,
    method: str | None = None,
    agent: str | None = None,
    enabled: bool = True,
    limit: int = 10,
    window: str = "minute",
) -> RuleSpec:
    rate = action == "rate_limit"
    return RuleSpec(
        id, scope, f"rule {id}", host, path, method, action, enabled, agent,
        limit if rate else None, window if rate else None,
    )
