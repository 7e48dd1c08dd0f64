"""The local run contract: first start bootstraps, restart reuses, both listeners answer."""
from __future__ import annotations

import json
import stat

import httpx
import pytest

pytestmark = pytest.mark.e2e

BOOTSTRAP_FIELDS = {
    "apiUrl", "gatewayUrl", "email", "userId", "organizationId", "projectId",
    "projectApiKey", "orgApiKey", "agentId", "agentToken", "caCertPath",
}


def test_first_start_writes_a_private_bootstrap_file_with_working_keys(serve_factory):
    serve = serve_factory()
    bootstrap = serve.bootstrap
    assert set(bootstrap) == BOOTSTRAP_FIELDS
    assert stat.S_IMODE((serve.data_dir / "bootstrap.json").stat().st_mode) == 0o600
    assert bootstrap["apiUrl"] == serve.api_url
    assert bootstrap["gatewayUrl"] == f"http://127.0.0.1:{serve.gateway_port}"
    assert bootstrap["projectApiKey"].startswith("oc_") and not bootstrap["projectApiKey"].startswith("oc_org_")
    assert bootstrap["orgApiKey"].startswith("oc_org_")
    assert bootstrap["agentToken"].startswith("aoc_")

    agents = httpx.get(f"{serve.api_url}/v1/agents", headers={"Authorization": f"Bearer {bootstrap['projectApiKey']}"})
    assert agents.status_code == 200
    assert [(a["id"], a["identifier"], a["isDefault"]) for a in agents.json()] == [(bootstrap["agentId"], "default", True)]
    org = httpx.get(f"{serve.api_url}/v1/org/settings", headers={"Authorization": f"Bearer {bootstrap['orgApiKey']}"})
    assert org.json() == {"policyMode": "allow"}


def test_restart_reuses_the_same_account_keys_and_data(serve_factory, tmp_path):
    first = serve_factory()
    before = first.bootstrap
    headers = {"Authorization": f"Bearer {before['projectApiKey']}"}
    created = httpx.post(
        f"{first.api_url}/v1/secrets",
        headers=headers,
        json={"name": "openai", "type": "openai", "value": "sk-restart-0123456789", "hostPattern": "api.openai.com"},
    )
    assert created.status_code == 201
    assert first.stop() == 0

    second = serve_factory(data_dir=first.data_dir)
    after = second.bootstrap
    for field in ("userId", "organizationId", "projectId", "projectApiKey", "orgApiKey", "agentId", "agentToken", "caCertPath"):
        assert after[field] == before[field], field
    listed = httpx.get(f"{second.api_url}/v1/secrets", headers=headers)
    assert [s["id"] for s in listed.json()] == [created.json()["id"]]


def test_sign_in_email_lands_in_the_outbox_and_its_link_opens_a_session(serve_factory):
    serve = serve_factory()
    sent = httpx.post(f"{serve.api_url}/v1/auth/email-link", json={"email": "owner@credgate.local"})
    assert sent.status_code == 202
    (mail,) = [json.loads(path.read_text()) for path in (serve.data_dir / "outbox").glob("*.json")]
    assert set(mail) == {"to", "subject", "text", "links"}
    assert mail["to"] == "owner@credgate.local"
    (link,) = mail["links"]
    assert link.startswith(f"{serve.api_url}/v1/auth/callback?token=")
    assert link in mail["text"]

    opened = httpx.get(link, follow_redirects=False)
    assert opened.status_code == 303
    cookie = opened.cookies["credgate_session"]
    me = httpx.get(f"{serve.api_url}/v1/user", cookies={"credgate_session": cookie})
    assert me.status_code == 200
    assert me.json()["id"] == serve.bootstrap["userId"]
