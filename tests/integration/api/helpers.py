"""Small helpers for the HTTP-level tests: browser sign-in, joining a tenant, secret request bodies."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from fastapi.testclient import TestClient

from tests.conftest import RecordingMailer, Tenant

NOT_AUTHENTICATED = "Invalid API key or token."
INSUFFICIENT = "Insufficient permissions"


def link_path(link: str) -> str:
    """The path and query of an emailed link, for a TestClient that already knows the host."""
    parts = urlsplit(link)
    return f"{parts.path}?{parts.query}" if parts.query else parts.path


def open_link(client: TestClient, link: str) -> Any:
    return client.get(link_path(link), follow_redirects=False)


@dataclass
class Person:
    """Somebody signed in through the browser: their own client carries the session cookie."""

    client: TestClient
    user_id: str
    email: str


def signed_in(api: TestClient, mailer: RecordingMailer, email: str) -> Person:
    assert api.post("/v1/auth/email-link", json={"email": email}).status_code == 202
    return _open_latest_link(api, mailer, email)


def join(api: TestClient, mailer: RecordingMailer, tenant: Tenant, email: str, role: str) -> Person:
    """Invite `email` into the tenant's organization and accept by opening the emailed link."""
    invited = api.post("/v1/team/invitations", json={"email": email, "role": role}, headers=tenant.org_headers)
    assert invited.status_code == 201, invited.text
    return _open_latest_link(api, mailer, email)


def _open_latest_link(api: TestClient, mailer: RecordingMailer, email: str) -> Person:
    """Open the newest mail's link in a browser of its own (the `api` client stays credential-free)."""
    client = TestClient(api.app)
    assert open_link(client, mailer.last_link(email)).status_code == 303
    user = client.get("/v1/user")
    assert user.status_code == 200, user.text
    return Person(client, user.json()["id"], email)


MISSING: Any = object()


def secret_body(**fields: Any) -> dict[str, Any]:
    """A valid anthropic secret; override or add fields (MISSING removes one)."""
    body: dict[str, Any] = {
        "name": "Anthropic key",
        "type": "anthropic",
        "value": "sk-ant-test-0123456789abcdef",
        "hostPattern": "api.anthropic.com",
    }
    body.update(fields)
    return {name: value for name, value in body.items() if value is not MISSING}


def generic_body(**fields: Any) -> dict[str, Any]:
    """A valid generic secret injected as a header; override or add fields (MISSING removes one)."""
    defaults = {"name": "Generic key", "type": "generic", "hostPattern": "api.example.com", "injectionConfig": {"headerName": "X-Api-Key"}}
    return secret_body(**{**defaults, **fields})
