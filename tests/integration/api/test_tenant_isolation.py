"""One tenant's credentials never reach another tenant's agents, secrets or projects: 404 or 403, never data."""
from __future__ import annotations

import pytest

from tests.conftest import envelope
from tests.integration.api.helpers import INSUFFICIENT, generic_body, secret_body, signed_in

FORBIDDEN = envelope(INSUFFICIENT, "permission_error")


@pytest.fixture
def victim(api, tenant):
    """The tenant's ids, each with something worth stealing behind it."""
    agent = api.post("/v1/agents", json={"name": "Victim", "identifier": "victim"}, headers=tenant.project_headers).json()
    secret = api.post("/v1/secrets", json=secret_body(value="victim-project-value-123"), headers=tenant.project_headers).json()
    org_secret = api.post("/v1/org/secrets", json=generic_body(value="victim-org-value-456"), headers=tenant.org_headers).json()
    project = api.post("/v1/projects", json={"name": "Victim project"}, headers=tenant.org_headers).json()
    return {
        "agent": agent["id"],
        "default agent": tenant.agent_id,
        "secret": secret["id"],
        "org secret": org_secret["id"],
        "project": project["id"],
        "default project": tenant.project_id,
        "names": ("Victim", "victim", "Victim project", tenant.email),
    }


def _attempts(ids):
    """Every route that takes one of the victim's ids, with a harmless but valid body."""
    return [
        ("GET", f"/v1/agents/{ids['agent']}", None),
        ("PATCH", f"/v1/agents/{ids['agent']}", {"name": "Stolen"}),
        ("DELETE", f"/v1/agents/{ids['agent']}", None),
        ("POST", f"/v1/agents/{ids['agent']}/set-default", None),
        ("POST", f"/v1/agents/{ids['agent']}/regenerate-token", None),
        ("PUT", f"/v1/agents/{ids['agent']}/secrets", {"secretIds": []}),
        ("POST", f"/v1/agents/{ids['default agent']}/regenerate-token", None),
        ("GET", f"/v1/secrets/{ids['secret']}", None),
        ("PATCH", f"/v1/secrets/{ids['secret']}", {"value": "attacker-value"}),
        ("DELETE", f"/v1/secrets/{ids['secret']}", None),
        ("GET", f"/v1/secrets/{ids['org secret']}", None),
        ("PATCH", f"/v1/secrets/{ids['org secret']}", {"value": "attacker-value"}),
        ("DELETE", f"/v1/secrets/{ids['org secret']}", None),
        ("GET", f"/v1/org/secrets/{ids['org secret']}", None),
        ("PATCH", f"/v1/org/secrets/{ids['org secret']}", {"value": "attacker-value"}),
        ("DELETE", f"/v1/org/secrets/{ids['org secret']}", None),
        ("GET", f"/v1/projects/{ids['project']}", None),
        ("PATCH", f"/v1/projects/{ids['project']}", {"name": "Stolen"}),
        ("DELETE", f"/v1/projects/{ids['project']}", None),
        ("GET", f"/v1/projects/{ids['default project']}", None),
    ]


def _assert_nothing_reached(api, tenant, victim, headers, allowed_statuses, client=None):
    for method, path, body in _attempts(victim):
        response = (client or api).request(method, path, json=body, headers=headers)
        assert (method, path, response.status_code in allowed_statuses) == (method, path, True), response.text
        assert set(response.json()) == {"error"}, (method, path, response.text)
        assert set(response.json()["error"]) == {"message", "type"}
        for name in victim["names"]:
            assert name not in response.text
    _assert_victim_intact(api, tenant, victim)


def _assert_victim_intact(api, tenant, victim):
    agent = api.get(f"/v1/agents/{victim['agent']}", headers=tenant.project_headers).json()
    assert (agent["name"], agent["isDefault"]) == ("Victim", False)
    secrets = {s["id"]: s for s in api.get("/v1/secrets", headers=tenant.project_headers).json()}
    assert set(secrets) == {victim["secret"], victim["org secret"]}
    assert secrets[victim["secret"]]["preview"] == "vict…-123"
    assert secrets[victim["org secret"]]["preview"] == "vict…-456"
    projects = api.get("/v1/projects", headers=tenant.org_headers).json()
    assert {p["id"]: p["name"] for p in projects}[victim["project"]] == "Victim project"


def test_another_tenants_project_key_reaches_none_of_the_ids(api, tenant, other_tenant, victim):
    _assert_nothing_reached(api, tenant, victim, other_tenant.project_headers, {403, 404})


def test_another_tenants_org_key_reaches_none_of_the_ids(api, tenant, other_tenant, victim):
    _assert_nothing_reached(api, tenant, victim, other_tenant.org_headers_for(other_tenant.project_id), {403, 404})


def test_another_tenants_owner_session_reaches_none_of_the_ids(api, mailer, tenant, other_tenant, victim):
    intruder = signed_in(api, mailer, other_tenant.email)
    intruder.client.headers["X-Project-Id"] = other_tenant.project_id

    _assert_nothing_reached(api, tenant, victim, {}, {403, 404}, client=intruder.client)


def test_unknown_and_foreign_ids_look_the_same(api, tenant, other_tenant, victim):
    """No existence oracle: another tenant's id answers exactly like a made-up one."""
    pairs = [
        (f"/v1/agents/{victim['agent']}", "/v1/agents/agt_01unknown0000000000000000"),
        (f"/v1/secrets/{victim['secret']}", "/v1/secrets/sec_01unknown0000000000000000"),
    ]
    for foreign, unknown in pairs:
        a = api.get(foreign, headers=other_tenant.project_headers)
        b = api.get(unknown, headers=other_tenant.project_headers)
        assert (a.status_code, a.json()) == (b.status_code, b.json())
    foreign = api.get(f"/v1/projects/{victim['project']}", headers=other_tenant.org_headers)
    unknown = api.get("/v1/projects/prj_01unknown0000000000000000", headers=other_tenant.org_headers)
    assert (foreign.status_code, foreign.json()) == (unknown.status_code, unknown.json()) == (
        404, envelope("Project not found", "not_found_error")
    )


def test_listings_never_contain_the_other_tenants_items(api, tenant, other_tenant, victim):
    listings = [
        api.get("/v1/agents", headers=other_tenant.project_headers),
        api.get("/v1/secrets", headers=other_tenant.project_headers),
        api.get("/v1/org/secrets", headers=other_tenant.org_headers),
        api.get("/v1/projects", headers=other_tenant.org_headers),
        api.get("/v1/team/members", headers=other_tenant.org_headers),
        api.get("/v1/team/invitations", headers=other_tenant.org_headers),
        api.get("/v1/agents/granular-access", headers=other_tenant.project_headers),
    ]
    assert [response.status_code for response in listings] == [200] * len(listings)
    everything = " ".join(response.text for response in listings)
    for key in ("agent", "default agent", "secret", "org secret", "project", "default project"):
        assert victim[key] not in everything
    for name in victim["names"]:
        assert name not in everything
    assert [a["id"] for a in listings[0].json()] == [other_tenant.agent_id]
    assert listings[1].json() == listings[2].json() == []
    assert [p["id"] for p in listings[3].json()] == [other_tenant.project_id]
    assert [m["email"] for m in listings[4].json()] == [other_tenant.email]


@pytest.mark.parametrize("project", ["default", "created"])
def test_org_key_with_the_other_tenants_project_header_is_forbidden(api, tenant, other_tenant, victim, project):
    project_id = tenant.project_id if project == "default" else victim["project"]
    headers = other_tenant.org_headers_for(project_id)

    for method, path in (("GET", "/v1/agents"), ("GET", "/v1/secrets"), ("GET", "/v1/user/api-key"), ("GET", "/v1/org/secrets")):
        response = api.request(method, path, headers=headers)
        assert (path, response.status_code, response.json()) == (path, 403, FORBIDDEN)


def test_session_cannot_pick_another_organization_by_header(api, mailer, tenant, other_tenant):
    intruder = signed_in(api, mailer, other_tenant.email)

    by_org = intruder.client.get("/v1/org/secrets", headers={"X-Organization-Id": tenant.organization_id})
    by_project = intruder.client.get("/v1/agents", headers={"X-Project-Id": tenant.project_id})

    assert (by_org.status_code, by_org.json()) == (403, FORBIDDEN)
    assert (by_project.status_code, by_project.json()) == (403, FORBIDDEN)
