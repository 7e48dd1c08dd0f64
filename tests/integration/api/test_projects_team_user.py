"""Projects, Team and User over HTTP: the tenancy a person manages from the dashboard."""
from __future__ import annotations

from fastapi.testclient import TestClient

from credgate.keys import KeyKind, classify, key_hash
from credgate.store import schema
from tests.conftest import envelope
from tests.integration.api.helpers import INSUFFICIENT, NOT_AUTHENTICATED, link_path

UNAUTHENTICATED = envelope(NOT_AUTHENTICATED, "authentication_error")
FORBIDDEN = envelope(INSUFFICIENT, "permission_error")
PROJECT_NOT_FOUND = envelope("Project not found", "not_found_error")
PROJECT_FIELDS = {"id", "name", "isDefault", "createdAt"}


def _new_project(api, tenant, name="Second"):
    response = api.post("/v1/projects", json={"name": name}, headers=tenant.org_headers)
    assert response.status_code == 201, response.text
    return response.json()


# Projects


def test_list_shows_the_default_project(api, tenant):
    response = api.get("/v1/projects", headers=tenant.org_headers)

    assert response.status_code == 200
    [project] = response.json()
    assert set(project) == PROJECT_FIELDS
    assert (project["id"], project["name"], project["isDefault"]) == (tenant.project_id, "Default project", True)


def test_create_answers_201_with_a_non_default_project_and_its_default_agent(api, tenant):
    response = api.post("/v1/projects", json={"name": "Second"}, headers=tenant.org_headers)

    assert response.status_code == 201
    created = response.json()
    assert set(created) == PROJECT_FIELDS
    assert (created["name"], created["isDefault"]) == ("Second", False)
    assert created["id"] != tenant.project_id
    agents = api.get("/v1/agents", headers=tenant.org_headers_for(created["id"])).json()
    assert [(a["identifier"], a["isDefault"]) for a in agents] == [("default", True)]
    assert [p["id"] for p in api.get("/v1/projects", headers=tenant.org_headers).json()] == sorted([tenant.project_id, created["id"]])


def test_get_and_rename_a_project(api, tenant):
    created = _new_project(api, tenant)

    fetched = api.get(f"/v1/projects/{created['id']}", headers=tenant.org_headers)
    renamed = api.patch(f"/v1/projects/{created['id']}", json={"name": "Renamed"}, headers=tenant.org_headers)

    assert (fetched.status_code, fetched.json()) == (200, created)
    assert (renamed.status_code, renamed.json()) == (200, {**created, "name": "Renamed"})


def test_project_name_validation(api, tenant):
    cases = [
        ("POST", "/v1/projects", {"name": ""}, "name: String should have at least 1 character"),
        ("POST", "/v1/projects", {"name": "p" * 256}, "name: String should have at most 255 characters"),
        ("POST", "/v1/projects", {}, "name: Field required"),
        ("PATCH", f"/v1/projects/{tenant.project_id}", {}, "No fields to update"),
        ("PATCH", f"/v1/projects/{tenant.project_id}", {"name": None}, "name cannot be null"),
    ]
    for method, path, body, message in cases:
        response = api.request(method, path, json=body, headers=tenant.org_headers)
        assert (method, body, response.status_code, response.json()) == (method, body, 400, {"error": message})
    assert _new_project(api, tenant, name="p" * 255)["name"] == "p" * 255


def test_default_project_cannot_be_deleted(api, tenant):
    response = api.delete(f"/v1/projects/{tenant.project_id}", headers=tenant.org_headers)

    assert response.status_code == 400
    assert response.json() == envelope("Cannot delete the default project", "invalid_request_error")
    assert api.get("/v1/agents", headers=tenant.project_headers).status_code == 200


def test_deleting_a_project_removes_its_agents_tokens_and_keys(api, core, tenant, owner):
    created = _new_project(api, tenant)
    in_project = {"X-Project-Id": created["id"]}
    project_key = owner.client.get("/v1/user/api-key", headers=in_project).json()["apiKey"]
    agent = api.post("/v1/agents", json={"name": "A", "identifier": "a"}, headers={"Authorization": f"Bearer {project_key}"}).json()
    api.post("/v1/secrets", json={"name": "s", "type": "anthropic", "value": "v" * 20, "hostPattern": "api.anthropic.com"}, headers={"Authorization": f"Bearer {project_key}"})
    assert api.get("/v1/agents", headers={"Authorization": f"Bearer {project_key}"}).status_code == 200

    response = api.delete(f"/v1/projects/{created['id']}", headers=tenant.org_headers)

    assert (response.status_code, response.content) == (204, b"")
    after = api.get("/v1/agents", headers={"Authorization": f"Bearer {project_key}"})
    assert (after.status_code, after.json()) == (401, UNAUTHENTICATED)
    assert core.store.get(schema.credential(key_hash(agent["accessToken"]))) is None
    assert core.store.get(schema.credential(key_hash(project_key))) is None
    assert core.store.query(schema.project(created["id"]).pk) == []
    fetched = api.get(f"/v1/projects/{created['id']}", headers=tenant.org_headers)
    assert (fetched.status_code, fetched.json()) == (404, PROJECT_NOT_FOUND)
    assert [p["id"] for p in api.get("/v1/projects", headers=tenant.org_headers).json()] == [tenant.project_id]
    with_header = api.get("/v1/agents", headers=tenant.org_headers_for(created["id"]))
    assert (with_header.status_code, with_header.json()) == (403, FORBIDDEN)
    again = api.delete(f"/v1/projects/{created['id']}", headers=tenant.org_headers)
    assert (again.status_code, again.json()) == (404, PROJECT_NOT_FOUND)


def test_unknown_project_is_not_found(api, tenant):
    for method, body in (("GET", None), ("PATCH", {"name": "x"}), ("DELETE", None)):
        response = api.request(method, "/v1/projects/prj_01unknown0000000000000000", json=body, headers=tenant.org_headers)
        assert (method, response.status_code, response.json()) == (method, 404, PROJECT_NOT_FOUND)


def test_member_can_list_projects_but_not_change_them(api, tenant, member):
    listed = member.client.get("/v1/projects")
    created = member.client.post("/v1/projects", json={"name": "Nope"})
    renamed = member.client.patch(f"/v1/projects/{tenant.project_id}", json={"name": "Nope"})

    assert [p["id"] for p in listed.json()] == [tenant.project_id]
    assert (created.status_code, created.json()) == (403, FORBIDDEN)
    assert (renamed.status_code, renamed.json()) == (403, FORBIDDEN)


# Team


def test_members_list_shows_the_owner(api, tenant):
    response = api.get("/v1/team/members", headers=tenant.org_headers)

    assert response.status_code == 200
    [owner] = response.json()
    assert set(owner) == {"userId", "email", "name", "role", "joinedAt"}
    assert (owner["userId"], owner["email"], owner["role"]) == (tenant.user_id, tenant.email, "owner")


def test_invitation_is_emailed_and_accepted_through_its_link(api, mailer, tenant):
    response = api.post("/v1/team/invitations", json={"email": "New@Alpha.test", "role": "admin"}, headers=tenant.org_headers)

    assert response.status_code == 201
    invitation = response.json()
    assert set(invitation) == {"id", "email", "role", "createdAt", "expiresAt"}
    assert (invitation["email"], invitation["role"]) == ("new@alpha.test", "admin")
    assert [mail.to for mail in mailer.sent] == ["new@alpha.test"]
    assert mailer.sent[0].links[0].startswith("http://testserver/v1/auth/callback?token=")
    assert [i["id"] for i in api.get("/v1/team/invitations", headers=tenant.org_headers).json()] == [invitation["id"]]

    with TestClient(api.app) as browser:
        assert browser.get(link_path(mailer.sent[0].links[0]), follow_redirects=False).status_code == 303
        me = browser.get("/v1/user").json()

    members = {m["email"]: m for m in api.get("/v1/team/members", headers=tenant.org_headers).json()}
    assert set(members) == {tenant.email, "new@alpha.test"}
    assert (members["new@alpha.test"]["userId"], members["new@alpha.test"]["role"]) == (me["id"], "admin")
    assert api.get("/v1/team/invitations", headers=tenant.org_headers).json() == []


def test_invitation_validation(api, tenant, member):
    cases = [
        ({"email": "x@alpha.test", "role": "owner"}, "role: Input should be 'admin' or 'member'"),
        ({"email": "nobody", "role": "member"}, "Enter a valid email address"),
        ({"email": "x@alpha.test"}, "role: Field required"),
    ]
    for body, message in cases:
        response = api.post("/v1/team/invitations", json=body, headers=tenant.org_headers)
        assert (body, response.status_code, response.json()) == (body, 400, {"error": message})
    again = api.post("/v1/team/invitations", json={"email": member.email, "role": "admin"}, headers=tenant.org_headers)
    assert (again.status_code, again.json()) == (
        409, envelope("This person is already a member of the organization", "invalid_request_error")
    )


def test_role_change_and_removal(api, tenant, member):
    promoted = api.patch(f"/v1/team/members/{member.user_id}", json={"role": "admin"}, headers=tenant.org_headers)

    assert promoted.status_code == 200
    assert (promoted.json()["userId"], promoted.json()["role"]) == (member.user_id, "admin")
    assert member.client.get("/v1/org/settings").status_code == 200  # admins reach organization routes

    removed = api.delete(f"/v1/team/members/{member.user_id}", headers=tenant.org_headers)

    assert (removed.status_code, removed.content) == (204, b"")
    assert [m["userId"] for m in api.get("/v1/team/members", headers=tenant.org_headers).json()] == [tenant.user_id]
    after = member.client.get("/v1/org/settings")
    assert (after.status_code, after.json()) == (403, envelope("You are not a member of any organization", "permission_error"))


def test_owner_role_cannot_be_changed_and_owner_cannot_be_removed(api, tenant, owner):
    changed = api.patch(f"/v1/team/members/{tenant.user_id}", json={"role": "member"}, headers=tenant.org_headers)
    removed = owner.client.delete(f"/v1/team/members/{tenant.user_id}")

    assert (changed.status_code, changed.json()) == (400, envelope("The owner's role cannot be changed", "invalid_request_error"))
    assert (removed.status_code, removed.json()) == (400, envelope("The owner cannot be removed", "invalid_request_error"))
    [remaining] = api.get("/v1/team/members", headers=tenant.org_headers).json()
    assert (remaining["userId"], remaining["role"]) == (tenant.user_id, "owner")


def test_unknown_member_is_not_found(api, tenant, other_tenant):
    for user_id in ("usr_01unknown0000000000000000", other_tenant.user_id):
        changed = api.patch(f"/v1/team/members/{user_id}", json={"role": "admin"}, headers=tenant.org_headers)
        removed = api.delete(f"/v1/team/members/{user_id}", headers=tenant.org_headers)
        assert (changed.status_code, changed.json()) == (404, envelope("Member not found", "not_found_error"))
        assert (removed.status_code, removed.json()) == (404, envelope("Member not found", "not_found_error"))


def test_removed_members_project_key_stops_working(api, tenant, member):
    member_key = member.client.get("/v1/user/api-key", headers={"X-Project-Id": tenant.project_id}).json()["apiKey"]
    assert api.get("/v1/agents", headers={"Authorization": f"Bearer {member_key}"}).status_code == 200

    assert api.delete(f"/v1/team/members/{member.user_id}", headers=tenant.org_headers).status_code == 204

    response = api.get("/v1/agents", headers={"Authorization": f"Bearer {member_key}"})
    assert (response.status_code, response.json()) == (401, UNAUTHENTICATED)


def test_member_role_cannot_manage_the_team(api, tenant, member):
    invited = member.client.post("/v1/team/invitations", json={"email": "x@alpha.test", "role": "member"})
    promoted = member.client.patch(f"/v1/team/members/{member.user_id}", json={"role": "admin"})
    removed = member.client.delete(f"/v1/team/members/{tenant.user_id}")

    for response in (invited, promoted, removed):
        assert (response.status_code, response.json()) == (403, FORBIDDEN)
    listed = member.client.get("/v1/team/members")
    assert listed.status_code == 200
    assert {m["role"] for m in listed.json()} == {"owner", "member"}


def test_revoked_invitation_link_no_longer_joins(api, mailer, tenant):
    invitation = api.post("/v1/team/invitations", json={"email": "late@alpha.test", "role": "member"}, headers=tenant.org_headers).json()
    assert api.delete(f"/v1/team/invitations/{invitation['id']}", headers=tenant.org_headers).status_code == 204

    with TestClient(api.app) as browser:
        browser.get(link_path(mailer.last_link("late@alpha.test")), follow_redirects=False)

    assert [m["email"] for m in api.get("/v1/team/members", headers=tenant.org_headers).json()] == [tenant.email]


def test_invitation_link_lives_as_long_as_the_invitation(api, mailer, clock, tenant):
    """An invitee may open the link hours later (sign-in links last 15 minutes; invitations 7 days)."""
    invitation = api.post("/v1/team/invitations", json={"email": "slow@alpha.test", "role": "member"}, headers=tenant.org_headers).json()
    clock.advance(days=3)

    with TestClient(api.app) as browser:
        opened = browser.get(link_path(mailer.last_link("slow@alpha.test")), follow_redirects=False)

    assert opened.status_code == 303
    members = {m["email"]: m["role"] for m in api.get("/v1/team/members", headers=tenant.org_headers).json()}
    assert members == {tenant.email: "owner", "slow@alpha.test": "member"}
    assert invitation["expiresAt"] > invitation["createdAt"]


def test_expired_invitation_link_no_longer_joins(api, mailer, clock, tenant):
    api.post("/v1/team/invitations", json={"email": "late@alpha.test", "role": "member"}, headers=tenant.org_headers)
    clock.advance(days=7, seconds=1)

    with TestClient(api.app) as browser:
        opened = browser.get(link_path(mailer.last_link("late@alpha.test")), follow_redirects=False)

    assert opened.status_code == 401
    assert [m["email"] for m in api.get("/v1/team/members", headers=tenant.org_headers).json()] == [tenant.email]
    assert api.get("/v1/team/invitations", headers=tenant.org_headers).json() == []


def test_person_in_two_organizations_picks_one_by_header(api, mailer, tenant, other_tenant):
    """Silent in the spec: a session of a person in several organizations names one with X-Organization-Id."""
    invited = api.post("/v1/team/invitations", json={"email": other_tenant.email, "role": "member"}, headers=tenant.org_headers)
    assert invited.status_code == 201

    with TestClient(api.app) as browser:
        assert browser.get(link_path(mailer.last_link(other_tenant.email)), follow_redirects=False).status_code == 303
        unnamed = browser.get("/v1/org/settings")
        own = browser.get("/v1/org/settings", headers={"X-Organization-Id": other_tenant.organization_id})
        joined = browser.get("/v1/org/settings", headers={"X-Organization-Id": tenant.organization_id})
        by_project = browser.get("/v1/agents", headers={"X-Project-Id": tenant.project_id})

    assert (unnamed.status_code, unnamed.json()) == (400, envelope("X-Organization-Id header is required", "invalid_request_error"))
    assert (own.status_code, own.json()) == (200, {"policyMode": "allow"})
    assert (joined.status_code, joined.json()) == (403, FORBIDDEN)  # a member there, not an admin
    assert [a["id"] for a in by_project.json()] == [tenant.agent_id]


# User


def test_get_and_rename_the_user(api, tenant):
    fetched = api.get("/v1/user", headers=tenant.project_headers)
    renamed = api.patch("/v1/user", json={"name": "Ada"}, headers=tenant.project_headers)
    longest = api.patch("/v1/user", json={"name": "n" * 255}, headers=tenant.project_headers)

    assert fetched.status_code == 200
    assert set(fetched.json()) == {"id", "email", "name", "createdAt"}
    assert (fetched.json()["id"], fetched.json()["email"], fetched.json()["name"]) == (tenant.user_id, tenant.email, None)
    assert (renamed.status_code, renamed.json()) == (200, {**fetched.json(), "name": "Ada"})
    assert (longest.status_code, longest.json()["name"]) == (200, "n" * 255)


def test_user_name_validation(api, tenant):
    cases = [
        ({"name": ""}, "name: String should have at least 1 character"),
        ({"name": "n" * 256}, "name: String should have at most 255 characters"),
        ({}, "No fields to update"),
        ({"email": "x@y.z"}, "name: Field required"),
    ]
    for body, message in cases:
        response = api.patch("/v1/user", json=body, headers=tenant.project_headers)
        assert (body, response.status_code, response.json()) == (body, 400, {"error": message})


def test_api_key_is_the_callers_project_key(api, tenant, owner):
    with_key = api.get("/v1/user/api-key", headers=tenant.project_headers)
    with_session = owner.client.get("/v1/user/api-key", headers={"X-Project-Id": tenant.project_id})

    assert (with_key.status_code, with_key.json()) == (200, {"apiKey": tenant.project_key})
    assert (with_session.status_code, with_session.json()) == (200, {"apiKey": tenant.project_key})


def test_regenerate_api_key_replaces_the_old_one(api, tenant):
    response = api.post("/v1/user/api-key/regenerate", headers=tenant.project_headers)

    assert response.status_code == 200
    new_key = response.json()["apiKey"]
    assert classify(new_key) is KeyKind.PROJECT and new_key != tenant.project_key
    old = api.get("/v1/agents", headers=tenant.project_headers)
    assert (old.status_code, old.json()) == (401, UNAUTHENTICATED)
    new_headers = {"Authorization": f"Bearer {new_key}"}
    assert api.get("/v1/agents", headers=new_headers).status_code == 200
    assert api.get("/v1/user/api-key", headers=new_headers).json() == {"apiKey": new_key}


def test_org_key_has_no_user(api, tenant):
    needs_user = envelope("This endpoint needs a user credential: a project key or a dashboard session", "permission_error")
    for method, path, headers in (
        ("GET", "/v1/user", tenant.org_headers),
        ("PATCH", "/v1/user", tenant.org_headers),
        ("GET", "/v1/user/api-key", tenant.org_headers_for(tenant.project_id)),
        ("POST", "/v1/user/api-key/regenerate", tenant.org_headers_for(tenant.project_id)),
    ):
        response = api.request(method, path, json={"name": "x"} if method == "PATCH" else None, headers=headers)
        assert (method, path, response.status_code, response.json()) == (method, path, 403, needs_user)
