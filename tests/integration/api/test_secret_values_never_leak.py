"""Secret values are write-only: no response, header, log record, mail or stored byte ever holds one."""
from __future__ import annotations

import logging
import secrets
from pathlib import Path

import pytest

from credgate.store import schema
from tests.integration.api.helpers import generic_body, secret_body


def _canary(label: str) -> str:
    return f"canary-{label}-{secrets.token_hex(16)}"


@pytest.fixture
def all_logs(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> pytest.LogCaptureFixture:
    """Every record of every logger, at DEBUG, including credgate's (which production keeps off the root)."""
    monkeypatch.setattr(logging.getLogger("credgate"), "propagate", True)
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="credgate")
    return caplog


class RecordingClient:
    """Sends requests through the TestClient and keeps every response for inspection."""

    def __init__(self, api) -> None:
        self.api = api
        self.responses: list = []

    def __call__(self, method: str, path: str, **kwargs):
        response = self.api.request(method, path, **kwargs)
        self.responses.append(response)
        return response


def _log_text(record: logging.LogRecord) -> str:
    parts = [record.getMessage(), repr(record.args), repr(vars(record))]
    if record.exc_info:
        parts.append(logging.Formatter().formatException(record.exc_info))
    return "\n".join(parts)


def _stored_text(core, tenant) -> str:
    """Everything the store holds for the tenant, read back through the port (both adapters)."""
    items = core.store.query(schema.project(tenant.project_id).pk) + core.store.query(schema.organization(tenant.organization_id).pk)
    return repr(items)


def _database_bytes(tmp_path: Path) -> bytes:
    return b"".join(path.read_bytes() for path in tmp_path.glob("db.sqlite*"))


def test_secret_values_appear_nowhere(api, core, tenant, mailer, all_logs, tmp_path, request):
    send = RecordingClient(api)
    project_headers, org_headers = tenant.project_headers, tenant.org_headers
    values = {label: _canary(label) for label in ("project", "project-new", "org", "org-new", "invalid-host", "too-long", "bad-json", "bad-patch")}

    # Project secret: create, list, get, change the value, delete.
    created = send("POST", "/v1/secrets", json=generic_body(value=values["project"]), headers=project_headers)
    assert created.status_code == 201
    project_secret = created.json()["id"]
    send("GET", "/v1/secrets", headers=project_headers)
    send("GET", f"/v1/secrets/{project_secret}", headers=project_headers)
    assert send("PATCH", f"/v1/secrets/{project_secret}", json={"value": values["project-new"]}, headers=project_headers).status_code == 200
    stored_project_secret = core.store.get(schema.Key(schema.project(tenant.project_id).pk, f"SECRET#{project_secret}"))

    # Organization secret: the same cycle.
    created = send("POST", "/v1/org/secrets", json=secret_body(value=values["org"]), headers=org_headers)
    assert created.status_code == 201
    org_secret = created.json()["id"]
    send("GET", "/v1/org/secrets", headers=org_headers)
    send("GET", "/v1/secrets", headers=project_headers)
    send("GET", f"/v1/org/secrets/{org_secret}", headers=org_headers)
    assert send("PATCH", f"/v1/org/secrets/{org_secret}", json={"value": values["org-new"]}, headers=org_headers).status_code == 200
    stored_org_secret = core.store.get(schema.Key(schema.organization(tenant.organization_id).pk, f"SECRET#{org_secret}"))

    # Failing validations with a value in the body.
    assert send("POST", "/v1/secrets", json=secret_body(value=values["invalid-host"], hostPattern="https://x.com"), headers=project_headers).status_code == 400
    assert send("POST", "/v1/org/secrets", json=secret_body(value=values["too-long"] * 250), headers=org_headers).status_code == 400
    bad_json = ('{"name": "x", "type": "anthropic", "value": "%s", ' % values["bad-json"]).encode()
    assert send("POST", "/v1/secrets", content=bad_json, headers={**project_headers, "Content-Type": "application/json"}).status_code == 400
    assert send("PATCH", f"/v1/secrets/{project_secret}", json={"value": values["bad-patch"], "hostPattern": "a b"}, headers=project_headers).status_code == 400
    assert send("PATCH", "/v1/secrets/sec_01unknown0000000000000000", json={"value": values["bad-patch"]}, headers=project_headers).status_code == 404

    # An agent, whose token is shown once and must not be logged or stored in plaintext either.
    agent = send("POST", "/v1/agents", json={"name": "Leaky", "identifier": "leaky"}, headers=project_headers)
    assert agent.status_code == 201
    agent_token = agent.json()["accessToken"]
    send("GET", "/v1/agents", headers=project_headers)

    stored = _stored_text(core, tenant)
    assert send("DELETE", f"/v1/secrets/{project_secret}", headers=project_headers).status_code == 204
    assert send("DELETE", f"/v1/org/secrets/{org_secret}", headers=org_headers).status_code == 204

    # Only ciphertext was stored.
    for item in (stored_project_secret, stored_org_secret):
        assert item["valueCiphertext"].startswith("cgv1:")
    assert "valueCiphertext" in stored

    responses = "\n".join(r.text + repr(r.headers.raw) for r in send.responses)
    logs = "\n".join(_log_text(record) for record in all_logs.records)
    mail = repr(mailer.sent)
    database = _database_bytes(tmp_path) if request.node.callspec.params["core"] == "sqlite" else b""
    assert any(record.name == "credgate.api" for record in all_logs.records), "the request log was not captured"
    if request.node.callspec.params["core"] == "sqlite":
        assert b"cgv1:" in database, "not reading the store's database file"
    for label, value in values.items():
        assert value not in responses, label
        assert value not in logs, label
        assert value not in mail, label
        assert value not in stored, label
        assert value.encode() not in database, label
    for label, credential in (("agent token", agent_token), ("project key", tenant.project_key), ("org key", tenant.org_key)):
        assert credential not in logs, label
        assert credential not in stored, label
        assert credential.encode() not in database, label
    assert agent_token in agent.text  # shown once, in the create response only
    assert sum(agent_token in r.text for r in send.responses) == 1
