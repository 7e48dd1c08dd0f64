"""Where the caller comes from: authenticate() in-process, or the Lambda authorizer's context."""
from __future__ import annotations

from starlette.requests import Request

from credgate.services.auth import SESSION_COOKIE, AuthRequest, authenticate, principal_from_context
from credgate.services.core import Core, Principal


def auth_request(method: str, path: str, headers: dict[str, str], cookies: dict[str, str]) -> AuthRequest:
    return AuthRequest(
        method=method,
        path=path,
        authorization=headers.get("authorization"),
        session_token=cookies.get(SESSION_COOKIE),
        project_id=headers.get("x-project-id"),
        organization_id=headers.get("x-organization-id"),
    )


def in_process(core: Core):
    """Self-hosted: the same authenticate() the Lambda authorizer runs, called directly."""

    def resolve(request: Request) -> Principal | None:
        return authenticate(core.store, auth_request(request.method, request.url.path, request.headers, request.cookies))

    return resolve


def from_authorizer(request: Request) -> Principal | None:
    """Behind API Gateway: the authorizer already decided; its context carries a principal or an error."""
    event = request.scope.get("aws.event") or {}
    context = event.get("requestContext", {}).get("authorizer", {}).get("lambda") or {}
    return principal_from_context(context)


from_authorizer.blocking = False  # type: ignore[attr-defined]  # reads the event only
