"""The FastAPI application, the same in Lambda and self-hosted; only the principal source differs."""
from __future__ import annotations

from typing import Any, Callable

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from credgate.services.auth import RouteScope, route_scope
from credgate.services.core import Core
from credgate_api import errors
from credgate_api.middleware import AuthenticationMiddleware, PrincipalResolver
from credgate_api.routers import agent_setup, agents, approvals, auth, org_settings, projects, rules, secrets, team, user, utility

API_PREFIX = "/v1"
_ROUTERS = (
    utility.router,
    auth.router,
    user.router,
    agents.router,
    secrets.project_router,
    secrets.organization_router,
    rules.project_router,
    rules.organization_router,
    approvals.project_router,
    approvals.organization_router,
    org_settings.router,
    projects.router,
    team.router,
    agent_setup.router,
)


def create_app(
    core: Core,
    resolver: PrincipalResolver,
    *,
    ca_certificate: Callable[[], str | None],
    ready: Callable[[], bool] = lambda: True,
) -> FastAPI:
    app = FastAPI(
        title="credgate management API",
        version="1.0",
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
    )
    app.state.core = core
    app.state.ready = ready
    app.state.ca_certificate = ca_certificate
    for router in _ROUTERS:
        app.include_router(router, prefix=API_PREFIX)
    errors.install(app)
    app.add_middleware(AuthenticationMiddleware, resolver=resolver)
    app.openapi = lambda: _openapi(app)  # type: ignore[method-assign]
    return app


def _openapi(app: FastAPI) -> dict[str, Any]:
    """The generated description plus how to authenticate, and the project header where it applies."""
    if app.openapi_schema:
        return app.openapi_schema
    schema = get_openapi(title=app.title, version=app.version, routes=app.routes)
    schema["components"]["securitySchemes"] = {
        "apiKey": {"type": "http", "scheme": "bearer", "description": "oc_ project key, oc_org_ organization key or oc_partner_ partner key"},
        "session": {"type": "apiKey", "in": "cookie", "name": "credgate_session"},
    }
    project_header = {
        "name": "X-Project-Id",
        "in": "header",
        "required": False,
        "schema": {"type": "string"},
        "description": "Required with an organization key or a session; a project key always acts on its own project.",
    }
    organization_header = {
        "name": "X-Organization-Id",
        "in": "header",
        "required": False,
        "schema": {"type": "string"},
        "description": "Sessions only: which organization to act on when the signed-in person belongs to several.",
    }
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            scope = route_scope(method.upper(), path)
            if scope is RouteScope.PUBLIC:
                operation["security"] = []
                continue
            operation["security"] = [{"apiKey": []}, {"session": []}]
            headers = [project_header] if scope is RouteScope.PROJECT else []
            if scope is not RouteScope.PARTNER:
                headers.append(organization_header)
            operation.setdefault("parameters", []).extend(headers)
    app.openapi_schema = schema
    return schema
