"""Lambda authorizer (HTTP API, payload 2.0, simple responses).

It always answers isAuthorized=true: the decision (a principal, or the spec's error)
travels in the context, and the API renders errors in the spec's envelope. A denial
here would make API Gateway answer with its own {"message": ...} body instead.
"""
from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

from credgate.aws import LazyClient
from credgate.errors import DomainError
from credgate.services.auth import SESSION_COOKIE, AuthRequest, authenticate, error_to_context, principal_to_context
from credgate.store.dynamodb import DynamoItemStore

# Settings are one environment variable here; pydantic would double this function's cold start.
_store = DynamoItemStore(LazyClient("dynamodb"), os.environ.get("CREDGATE_TABLE_NAME", ""))
log = logging.getLogger("credgate.authorizer")
if not log.handlers:
    _handler = logging.StreamHandler(sys.stdout)
    _handler.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(_handler)
    log.setLevel(os.environ.get("POWERTOOLS_LOG_LEVEL", "INFO"))
    log.propagate = False


def _cookie(cookies: list[str], name: str) -> str | None:
    for cookie in cookies:
        key, _, value = cookie.partition("=")
        if key.strip() == name:
            return value.strip()
    return None


def auth_request_from_event(event: dict[str, Any]) -> AuthRequest:
    headers = {name.lower(): value for name, value in (event.get("headers") or {}).items()}
    http = event["requestContext"]["http"]
    return AuthRequest(
        method=http["method"],
        path=event.get("rawPath") or http["path"],
        authorization=headers.get("authorization"),
        session_token=_cookie(event.get("cookies") or [], SESSION_COOKIE),
        project_id=headers.get("x-project-id"),
        organization_id=headers.get("x-organization-id"),
    )


def decide(store: Any, event: dict[str, Any]) -> dict[str, Any]:
    request = auth_request_from_event(event)
    try:
        context = principal_to_context(authenticate(store, request))
    except DomainError as error:
        context = error_to_context(error)
    except Exception as error:  # noqa: BLE001 - API Gateway must never answer with its own body
        log.error(json.dumps({"message": "authorizer failed", "error": type(error).__name__}))
        context = {"error": "DependencyUnavailable", "errorMessage": "The service is temporarily unavailable. Retry with exponential backoff."}
    return {"isAuthorized": True, "context": context}


def handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    return decide(_store, event)
