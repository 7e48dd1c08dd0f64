"""The interface description: served without a credential, complete, tagged with the spec's groups."""
from __future__ import annotations

from fastapi import routing
from fastapi.routing import APIRoute

SPEC_TAGS = {
    "Agents", "Secrets", "Rules", "Approvals", "User", "Projects", "Team", "Apps", "Connections", "Utility",
    "Agent Setup", "Migration", "Organization Settings", "Organization Secrets", "Organization Rules",
    "Organization Connections", "Organization App Config", "Organization Approvals", "Partner Organizations",
    "Partner Projects", "Partner Secrets", "Partner Budgets", "Partner Members", "Organization Partner",
}
HTTP_METHODS = {"get", "post", "put", "patch", "delete"}


def _api_routes(app):
    """(path, methods) of every APIRoute the app serves, through included routers too."""
    if hasattr(routing, "iter_route_contexts"):  # FastAPI >= 0.16x keeps included routers nested and lazy
        contexts = routing.iter_route_contexts(app.routes)
        return [(c.path_format, c.methods) for c in contexts if isinstance(c.original_route, APIRoute)]
    return [(r.path_format, r.methods) for r in app.routes if isinstance(r, APIRoute)]


def _schema(api):
    response = api.get("/v1/openapi.json")
    assert response.status_code == 200, response.text
    return response.json()


def test_openapi_is_served_without_a_credential_with_version_1_0(api):
    schema = _schema(api)

    assert schema["openapi"].startswith("3.")
    assert schema["info"]["version"] == "1.0"


def test_every_route_appears_with_its_methods(api):
    paths = _schema(api)["paths"]
    routes = _api_routes(api.app)

    assert ("/v1/agents", {"GET"}) in routes and len(routes) > 30
    missing = [(method, path) for path, methods in routes for method in methods if method.lower() not in paths.get(path, {})]
    assert missing == []
    assert all(path.startswith("/v1/") for path in paths)


def test_every_operation_is_tagged_with_a_spec_tag(api):
    paths = _schema(api)["paths"]

    used = {
        (method, path): tuple(operation.get("tags", ()))
        for path, operations in paths.items()
        for method, operation in operations.items()
        if method in HTTP_METHODS
    }

    untagged = [key for key, tags in used.items() if not tags]
    foreign = {tag for tags in used.values() for tag in tags} - SPEC_TAGS
    assert untagged == []
    assert foreign == set()


def test_security_schemes_and_per_operation_security(api):
    schema = _schema(api)

    schemes = schema["components"]["securitySchemes"]
    assert schemes["apiKey"] == {
        "type": "http", "scheme": "bearer", "description": "oc_ project key, oc_org_ organization key or oc_partner_ partner key",
    }
    assert schemes["session"] == {"type": "apiKey", "in": "cookie", "name": "credgate_session"}
    operations = {(m, p): op for p, ops in schema["paths"].items() for m, op in ops.items() if m in HTTP_METHODS}
    assert operations[("get", "/v1/health")]["security"] == []
    assert operations[("post", "/v1/auth/email-link")]["security"] == []
    assert operations[("get", "/v1/agents")]["security"] == [{"apiKey": []}, {"session": []}]
    assert operations[("post", "/v1/org/secrets")]["security"] == [{"apiKey": []}, {"session": []}]
    assert "201" in operations[("post", "/v1/org/secrets")]["responses"]


def test_tenant_headers_are_documented_where_they_apply(api):
    paths = _schema(api)["paths"]

    def header_names(method, path):
        return [p["name"] for p in paths[path][method].get("parameters", []) if p["in"] == "header"]

    assert header_names("get", "/v1/agents") == ["X-Project-Id", "X-Organization-Id"]
    assert header_names("post", "/v1/secrets") == ["X-Project-Id", "X-Organization-Id"]
    assert header_names("post", "/v1/org/secrets") == ["X-Organization-Id"]
    assert header_names("get", "/v1/projects") == ["X-Organization-Id"]
    assert header_names("get", "/v1/health") == []
