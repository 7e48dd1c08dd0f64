"""The gateway's own answers: JSON with a stable `error` code, shaped for the LLM vendors' SDKs.

On the LLM hosts (api.anthropic.com, api.openai.com and its regional variants) the SDKs read
their vendor's error shape, so the body takes that shape (the SDK then shows our message) and
still carries our code.
"""
from __future__ import annotations

import json
from typing import Any

from credgate.policy import is_llm_host, normalize_host

from credgate_gateway.proxy import Respond

_ANTHROPIC_TYPES = {400: "invalid_request_error", 403: "permission_error", 429: "rate_limit_error", 502: "api_error"}
_OPENAI_TYPES = {400: "invalid_request_error", 403: "permission_denied", 429: "rate_limit_exceeded", 502: "server_error"}


def _vendor(host: str) -> str | None:
    if not is_llm_host(host):
        return None
    return "anthropic" if normalize_host(host).endswith(".anthropic.com") else "openai"


def refusal(
    host: str,
    status: int,
    code: str,
    message: str,
    *,
    retryable: bool = False,
    headers: list[tuple[str, str]] | None = None,
    **details: Any,
) -> Respond:
    vendor = _vendor(host)
    if vendor == "anthropic":
        body: dict[str, Any] = {
            "type": "error",
            "error": {"type": _ANTHROPIC_TYPES.get(status, "api_error"), "message": message, "code": code, **details},
        }
    elif vendor == "openai":
        body = {"error": {"message": message, "type": _OPENAI_TYPES.get(status, "server_error"), "code": code, "param": None, **details}}
    else:
        body = {"error": code, "message": message, **details}
    response_headers = [("content-type", "application/json"), *(headers or [])]
    if not retryable:
        response_headers.append(("x-should-retry", "false"))
    return Respond(status, response_headers, json.dumps(body).encode(), error=code)


def blocked_by_policy(host: str, rule_name: str | None) -> Respond:
    reason = f'policy rule "{rule_name}"' if rule_name else "the organization's deny policy (no rule allows this request)"
    return refusal(host, 403, "blocked_by_policy", f"credgate blocked this request: {reason}.")


def rate_limited(host: str, rule_name: str, retry_after: int) -> Respond:
    return refusal(
        host,
        429,
        "rate_limited",
        f'credgate rate limit "{rule_name}" reached; retry after {retry_after} s.',
        retryable=True,
        headers=[("retry-after", str(retry_after))],
        retry_after=retry_after,
    )


def manual_approval_denied(host: str, outcome: str) -> Respond:
    return refusal(host, 403, "manual_approval_denied", f"credgate: this request needs approval and was {outcome}.")


def injection_refused(host: str, message: str) -> Respond:
    return refusal(host, 502, "credential_injection_failed", f"credgate could not inject the credential: {message}")
