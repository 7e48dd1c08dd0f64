"""authenticate(): the one decision of who is calling, shared by the Lambda authorizer and the local server."""
from __future__ import annotations

import enum
import re
from dataclasses import dataclass

from credgate.domain.enums import Role
from credgate.errors import DependencyUnavailable, DomainError, Forbidden, Unauthenticated, ValidationFailed
from credgate.keys import KeyKind, classify, key_hash
from credgate.ports import ItemStore
from credgate.services.core import CredentialKind, Principal
from credgate.store import schema

SESSION_COOKIE = "credgate_session"


class RouteScope(str, enum.Enum):
    PUBLIC = "public"
    USER = "user"  # a signed-in person, with or without an organization
    ORGANIZATION = "organization"  # organization context, any member
    ORGANIZATION_ADMIN = "organization_admin"
    PROJECT = "project"
    PARTNER = "partner"


_PUBLIC = {
    ("GET", "/v1/health"),
    ("GET", "/v1/openapi.json"),
    ("GET", "/v1/docs"),
    ("POST", "/v1/auth/email-link"),
    ("GET", "/v1/auth/callback"),
    ("POST", "/v1/auth/logout"),
    ("GET", "/v1/gateway/ca"),
}
_MEMBER_READABLE_ORG_ROUTE = re.compile(r"^/v1/org/rules/permissions/[^/]+$")
_PROJECT_PREFIXES = (
    "/v1/agents", "/v1/secrets", "/v1/rules", "/v1/approvals", "/v1/apps", "/v1/connections",
    "/v1/user/api-key", "/v1/container-config",
)
_ORGANIZATION_PREFIXES = ("/v1/projects", "/v1/team")
_USER_PREFIXES = ("/v1/user", "/v1/claims")


def _under(path: str, prefixes: tuple[str, ...]) -> bool:
    return any(path == prefix or path.startswith(prefix + "/") for prefix in prefixes)


def route_scope(method: str, path: str) -> RouteScope:
    path = path.rstrip("/") or "/"
    if (method, path) in _PUBLIC or method == "OPTIONS":
        return RouteScope.PUBLIC
    if _under(path, ("/v1/partner",)):
        return RouteScope.PARTNER
    if _under(path, ("/v1/org",)):
        if method == "GET" and _MEMBER_READABLE_ORG_ROUTE.match(path):
            return RouteScope.ORGANIZATION
        return RouteScope.ORGANIZATION_ADMIN
    if _under(path, _PROJECT_PREFIXES):
        return RouteScope.PROJECT
    if _under(path, _ORGANIZATION_PREFIXES):
        return RouteScope.ORGANIZATION
    if _under(path, _USER_PREFIXES):
        return RouteScope.USER
    return RouteScope.PROJECT  # unknown routes still demand a credential before answering 404


@dataclass(frozen=True)
class AuthRequest:
    method: str
    path: str
    authorization: str | None = None
    session_token: str | None = None
    project_id: str | None = None
    organization_id: str | None = None


def bearer_token(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


def authenticate(store: ItemStore, request: AuthRequest) -> Principal | None:
    """The caller of a request, or None for a public route. Raises Unauthenticated / Forbidden / ValidationFailed."""
    scope = route_scope(request.method, request.path)
    if scope is RouteScope.PUBLIC:
        return None
    token = bearer_token(request.authorization)
    if token is not None:
        principal = _from_key(store, token, scope, request)
    elif request.session_token:
        principal = _from_session(store, request.session_token, scope, request)
    else:
        raise Unauthenticated()
    if scope is RouteScope.ORGANIZATION_ADMIN:
        principal.require_admin()
    return principal


def _from_key(store: ItemStore, token: str, scope: RouteScope, request: AuthRequest) -> Principal:
    kind = classify(token)
    if kind is None or kind is KeyKind.AGENT:
        raise Unauthenticated()  # agent tokens only route traffic through the gateway
    hashed = key_hash(token)
    record = store.get(schema.credential(hashed))
    if record is None or record.get("kind") != kind.value:
        raise Unauthenticated()
    if kind is KeyKind.PARTNER:
        if scope is not RouteScope.PARTNER:
            raise Forbidden()
        return Principal(CredentialKind.PARTNER_KEY, partner_id=record["partnerId"], credential_hash=hashed)
    if scope is RouteScope.PARTNER:
        raise Forbidden()
    org_id = record["organizationId"]
    if kind is KeyKind.PROJECT:
        # A project key is its user's key for one project: it never reaches organization-wide routes.
        if scope in (RouteScope.ORGANIZATION, RouteScope.ORGANIZATION_ADMIN) and not _member_readable(request):
            raise Forbidden()
        role = _role(store, org_id, record["userId"])
        if role is None or _live_project(store, record["projectId"], org_id) is None:
            raise Unauthenticated()
        return Principal(
            CredentialKind.PROJECT_KEY, org_id, record["projectId"], record["userId"], role, credential_hash=hashed
        )
    # Organization key: acts as an administrator across the organization's projects.
    if scope is RouteScope.USER:
        raise Forbidden("This endpoint needs a user credential: a project key or a dashboard session")
    project_id = None
    if scope is RouteScope.PROJECT:
        if not request.project_id:
            raise Unauthenticated()
        project_id = _project_of_organization(store, request.project_id, org_id)
    elif request.project_id:
        project_id = _project_of_organization(store, request.project_id, org_id)
    return Principal(CredentialKind.ORGANIZATION_KEY, org_id, project_id, None, Role.ADMIN, credential_hash=hashed)


def _member_readable(request: AuthRequest) -> bool:
    return route_scope(request.method, request.path) is RouteScope.ORGANIZATION and request.path.startswith("/v1/org/")


def _from_session(store: ItemStore, token: str, scope: RouteScope, request: AuthRequest) -> Principal:
    hashed = key_hash(token)
    session = store.get(schema.session(hashed))
    if session is None:
        raise Unauthenticated("Your session has expired. Sign in again.")
    user_id = session["userId"]
    if scope is RouteScope.PARTNER:
        raise Forbidden()  # partner portal sessions arrive with the partner program
    if scope is RouteScope.USER and not request.project_id and not request.organization_id:
        return Principal(CredentialKind.SESSION, user_id=user_id, credential_hash=hashed)
    org_id = _session_organization(store, user_id, request)
    role = _role(store, org_id, user_id)
    if role is None:
        raise Forbidden()
    project_id = None
    if request.project_id:
        project_id = _project_of_organization(store, request.project_id, org_id)
    elif scope is RouteScope.PROJECT:
        raise ValidationFailed("X-Project-Id header is required")
    return Principal(CredentialKind.SESSION, org_id, project_id, user_id, role, credential_hash=hashed)


def _session_organization(store: ItemStore, user_id: str, request: AuthRequest) -> str:
    if request.organization_id:
        return request.organization_id
    if request.project_id:
        project = store.get(schema.project(request.project_id))
        if project is None or project["status"] != "active":
            raise Forbidden()
        return project["organizationId"]
    memberships = store.query(schema.membership(user_id, "").pk, "MEMBER#")
    if len(memberships) == 1:
        return memberships[0]["organizationId"]
    if not memberships:
        raise Forbidden("You are not a member of any organization")
    raise ValidationFailed("X-Organization-Id header is required")


def _role(store: ItemStore, org_id: str, user_id: str) -> Role | None:
    member = store.get(schema.member(org_id, user_id))
    return Role(member["role"]) if member else None


def _live_project(store: ItemStore, project_id: str, org_id: str) -> dict | None:
    project = store.get(schema.project(project_id))
    if project is None or project["status"] != "active" or project["organizationId"] != org_id:
        return None
    return project


def _project_of_organization(store: ItemStore, project_id: str, org_id: str) -> str:
    # Another tenant's project and a missing one look the same: no existence oracle.
    if _live_project(store, project_id, org_id) is None:
        raise Forbidden()
    return project_id


# The authorizer hands its decision to the API Lambda as flat string context values.

_ERRORS = {error.__name__: error for error in (Unauthenticated, Forbidden, ValidationFailed, DependencyUnavailable)}


def principal_to_context(principal: Principal | None) -> dict[str, str]:
    if principal is None:
        return {"public": "true"}
    fields = {
        "kind": principal.kind.value,
        "organizationId": principal.organization_id,
        "projectId": principal.project_id,
        "userId": principal.user_id,
        "role": principal.role.value if principal.role else None,
        "partnerId": principal.partner_id,
        "credentialHash": principal.credential_hash,
    }
    return {name: value for name, value in fields.items() if value is not None}


def error_to_context(error: DomainError) -> dict[str, str]:
    return {"error": type(error).__name__, "errorMessage": error.message}


def principal_from_context(context: dict[str, str]) -> Principal | None:
    """Rebuild the authorizer's decision; raises its error. No context at all means no authorizer ran."""
    if context.get("public") == "true":
        return None
    if "error" in context:
        raise _ERRORS.get(context["error"], Unauthenticated)(context.get("errorMessage", "Invalid API key or token."))
    if "kind" not in context:
        raise Unauthenticated()
    return Principal(
        kind=CredentialKind(context["kind"]),
        organization_id=context.get("organizationId"),
        project_id=context.get("projectId"),
        user_id=context.get("userId"),
        role=Role(context["role"]) if context.get("role") else None,
        partner_id=context.get("partnerId"),
        credential_hash=context.get("credentialHash"),
    )
