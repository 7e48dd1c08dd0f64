"""The two error shapes for what goes wrong outside any one resource: bad JSON, unknown routes, failures."""
from __future__ import annotations

import logging

import pytest
from fastapi.testclient import TestClient

from credgate.errors import DependencyUnavailable
from credgate.services import agents
from tests.conftest import envelope
from tests.integration.api.helpers import secret_body

INTERNAL = envelope("Internal server error. Retry with exponential backoff.", "api_error")
UNAVAILABLE = envelope("The service is temporarily unavailable. Retry with exponential backoff.", "api_error")


@pytest.fixture
def tolerant_api(api):
    """A client that answers 500s like a real server instead of re-raising them into the test."""
    with TestClient(api.app, raise_server_exceptions=False) as client:
        yield client


def test_invalid_json_body_is_a_flat_400(api, tenant):
    for content in (b"{not json", b'{"name": "x",}', b"", b"\xff"):
        response = api.post(
            "/v1/agents", content=content, headers={**tenant.project_headers, "Content-Type": "application/json"}
        )
        expected = "Request body must be a JSON object" if content == b"" else "Request body is not valid JSON"
        assert (content, response.status_code, response.json()) == (content, 400, {"error": expected})


def test_body_that_is_not_an_object_is_a_flat_400(api, tenant):
    for body in ([], "text", 42, None):
        response = api.post("/v1/agents", json=body, headers=tenant.project_headers)
        assert (body, response.status_code, response.json()) == (body, 400, {"error": "Request body must be a JSON object"})


def test_unknown_route_with_a_valid_key_is_a_404_envelope(api, tenant):
    for path in ("/v1/nothing-here", "/v1/agents/x/y/z", "/v2/agents"):
        response = api.get(path, headers=tenant.project_headers)
        assert (path, response.status_code, response.json()) == (path, 404, envelope("Not found", "not_found_error"))


def test_unknown_route_without_a_credential_is_a_401(api):
    response = api.get("/v1/nothing-here")

    assert response.status_code == 401
    assert response.json() == envelope("Invalid API key or token.", "authentication_error")


def test_wrong_method_on_a_known_route_is_an_envelope(api, tenant):
    response = api.put("/v1/agents", json={}, headers=tenant.project_headers)

    assert response.status_code == 405
    assert response.json() == envelope("Method not allowed", "invalid_request_error")


def test_unexpected_failure_is_a_500_envelope_without_internals(tolerant_api, tenant, monkeypatch, caplog):
    detail = "internal detail " + "xyz"

    def broken(*_args, **_kwargs):
        raise RuntimeError(detail)

    monkeypatch.setattr(agents, "list_agents", broken)
    caplog.set_level(logging.DEBUG)
    monkeypatch.setattr(logging.getLogger("credgate"), "propagate", True)

    response = tolerant_api.get("/v1/agents", headers=tenant.project_headers)

    assert response.status_code == 500
    assert response.json() == INTERNAL
    assert "xyz" not in response.text
    logged = [record for record in caplog.records if record.name == "credgate.api" and record.levelno == logging.ERROR]
    assert logged, "the failure was not logged"
    assert all("xyz" not in record.getMessage() for record in logged)
    assert "RuntimeError" in logged[0].getMessage()


def test_key_service_failure_is_a_500_envelope(api, core, tenant, monkeypatch):
    def unavailable(*_args, **_kwargs):
        raise DependencyUnavailable()

    monkeypatch.setattr(core.keyring, "encrypt", unavailable)

    response = api.post("/v1/secrets", json=secret_body(), headers=tenant.project_headers)

    assert response.status_code == 500
    assert response.json() == UNAVAILABLE
    monkeypatch.undo()
    assert api.get("/v1/secrets", headers=tenant.project_headers).json() == []


def test_store_failure_during_authentication_is_a_500_not_a_401(api, core, tenant, monkeypatch):
    def unavailable(*_args, **_kwargs):
        raise DependencyUnavailable()

    monkeypatch.setattr(core.store, "get", unavailable)

    response = api.get("/v1/agents", headers=tenant.project_headers)

    assert response.status_code == 500
    assert response.json() == UNAVAILABLE


def test_unexpected_failure_during_authentication_is_a_500_envelope(api, core, tenant, monkeypatch):
    def broken(*_args, **_kwargs):
        raise RuntimeError("store exploded xyz")

    monkeypatch.setattr(core.store, "get", broken)

    response = api.get("/v1/agents", headers=tenant.project_headers)

    assert response.status_code == 500
    assert response.json() == INTERNAL
