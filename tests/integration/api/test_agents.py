"""Agents over HTTP: the token shown once, names and identifiers, the default agent, selective secrets."""
from __future__ import annotations


from credgate.keys import KeyKind, classify, key_hash
from credgate.store import schema
from tests.conftest import envelope
from tests.integration.api.helpers import generic_body, secret_body

IDENTIFIER_MESSAGE = (
    "Identifier must be 1-50 characters, start with a letter or number, and contain only lowercase letters, numbers, and hyphens"
)
AGENT_NOT_FOUND = envelope("Agent not found", "not_found_error")
DUPLICATE = envelope("An agent with this identifier already exists", "invalid_request_error")
AGENT_FIELDS = {"id", "name", "identifier", "isDefault", "secretMode", "secretIds", "createdAt"}


def _create(api, tenant, identifier="builder", name="Builder", **fields):
    response = api.post("/v1/agents", json={"name": name, "identifier": identifier, **fields}, headers=tenant.project_headers)
    assert response.status_code == 201, response.text
    return response.json()


def _agents(api, tenant):
    response = api.get("/v1/agents", headers=tenant.project_headers)
    assert response.status_code == 200
    return response.json()


# Create, read, token shown once


def test_create_returns_the_agent_and_its_token_once(api, tenant):
    response = api.post("/v1/agents", json={"name": "Builder", "identifier": "builder"}, headers=tenant.project_headers)

    assert response.status_code == 201
    created = response.json()
    assert set(created) == AGENT_FIELDS | {"accessToken"}
    assert created["name"] == "Builder"
    assert created["identifier"] == "builder"
    assert created["isDefault"] is False
    assert created["secretMode"] == "all"
    assert created["secretIds"] == []
    assert created["accessToken"].startswith("aoc_")
    assert classify(created["accessToken"]) is KeyKind.AGENT


def test_token_never_appears_again_in_list_or_get(api, tenant):
    created = _create(api, tenant)

    listed = api.get("/v1/agents", headers=tenant.project_headers)
    fetched = api.get(f"/v1/agents/{created['id']}", headers=tenant.project_headers)

    assert [set(agent) for agent in listed.json()] == [AGENT_FIELDS, AGENT_FIELDS]
    assert set(fetched.json()) == AGENT_FIELDS
    assert created["accessToken"] not in listed.text
    assert created["accessToken"] not in fetched.text
    assert fetched.json() == {name: value for name, value in created.items() if name != "accessToken"}


def test_list_shows_the_default_agent_and_new_ones(api, tenant):
    created = _create(api, tenant)

    listed = _agents(api, tenant)

    assert {(agent["id"], agent["identifier"], agent["isDefault"]) for agent in listed} == {
        (tenant.agent_id, "default", True),
        (created["id"], "builder", False),
    }


def test_create_in_selective_mode(api, tenant):
    created = _create(api, tenant, secretMode="selective")

    assert created["secretMode"] == "selective"


def test_org_key_with_project_header_manages_that_projects_agents(api, tenant):
    response = api.post(
        "/v1/agents", json={"name": "CI", "identifier": "ci"}, headers=tenant.org_headers_for(tenant.project_id)
    )

    assert response.status_code == 201
    assert "ci" in [agent["identifier"] for agent in _agents(api, tenant)]


def test_granular_access_is_empty_without_connections(api, tenant):
    response = api.get("/v1/agents/granular-access", headers=tenant.project_headers)

    assert response.status_code == 200
    assert response.json() == []


# Validation


def test_name_length_is_1_to_255(api, tenant):
    assert _create(api, tenant, identifier="long-name", name="n" * 255)["name"] == "n" * 255

    cases = {"": "name: String should have at least 1 character", "n" * 256: "name: String should have at most 255 characters"}
    for name, message in cases.items():
        response = api.post("/v1/agents", json={"name": name, "identifier": "x"}, headers=tenant.project_headers)
        assert (len(name), response.status_code, response.json()) == (len(name), 400, {"error": message})


def test_every_bad_identifier_form_gets_the_identifier_message(api, tenant):
    bad = ["Builder", "-builder", "a" * 51, "my_agent", "", "my agent", "agent.1", "builder\n", "ünïcode"]
    for identifier in bad:
        response = api.post("/v1/agents", json={"name": "x", "identifier": identifier}, headers=tenant.project_headers)
        assert (identifier, response.status_code, response.json()) == (identifier, 400, {"error": IDENTIFIER_MESSAGE})

    assert [agent["identifier"] for agent in _agents(api, tenant)] == ["default"]


def test_identifier_edges_are_accepted(api, tenant):
    for identifier in ("a" * 50, "9", "0-agent", "agent-", "a--b"):
        assert _create(api, tenant, identifier=identifier)["identifier"] == identifier


def test_missing_fields_and_unknown_fields_are_flat_errors(api, tenant):
    cases = [
        ({"name": "x"}, "identifier: Field required"),
        ({"identifier": "x"}, "name: Field required"),
        ({"name": "x", "identifier": "x", "token": "aoc_x"}, "token: Extra inputs are not permitted"),
        ({"name": "x", "identifier": "x", "secretMode": "some"}, "secretMode: Input should be 'all' or 'selective'"),
    ]
    for body, message in cases:
        response = api.post("/v1/agents", json=body, headers=tenant.project_headers)
        assert (body, response.status_code, response.json()) == (body, 400, {"error": message})


def test_duplicate_identifier_is_a_conflict(api, tenant):
    _create(api, tenant, identifier="builder")

    response = api.post("/v1/agents", json={"name": "Other", "identifier": "builder"}, headers=tenant.project_headers)
    default = api.post("/v1/agents", json={"name": "Other", "identifier": "default"}, headers=tenant.project_headers)

    assert response.status_code == 409
    assert response.json() == DUPLICATE
    assert (default.status_code, default.json()) == (409, DUPLICATE)
    assert len(_agents(api, tenant)) == 2


def test_same_identifier_in_another_project_is_fine(api, tenant, other_tenant):
    _create(api, tenant, identifier="builder")

    assert _create(api, other_tenant, identifier="builder")["identifier"] == "builder"


def test_identifier_of_a_deleted_agent_can_be_reused(api, tenant):
    first = _create(api, tenant, identifier="builder")
    assert api.delete(f"/v1/agents/{first['id']}", headers=tenant.project_headers).status_code == 204

    second = _create(api, tenant, identifier="builder")

    assert second["id"] != first["id"]


# Update


def test_patch_renames_and_changes_identifier(api, tenant):
    created = _create(api, tenant)

    response = api.patch(
        f"/v1/agents/{created['id']}", json={"name": "Renamed", "identifier": "renamed"}, headers=tenant.project_headers
    )

    assert response.status_code == 200
    unchanged = {name: value for name, value in created.items() if name != "accessToken"}
    assert response.json() == {**unchanged, "name": "Renamed", "identifier": "renamed"}
    # The old identifier is free again, the new one is taken.
    assert _create(api, tenant, identifier="builder")["identifier"] == "builder"
    taken = api.post("/v1/agents", json={"name": "x", "identifier": "renamed"}, headers=tenant.project_headers)
    assert (taken.status_code, taken.json()) == (409, DUPLICATE)


def test_patch_to_a_taken_identifier_is_a_conflict(api, tenant):
    created = _create(api, tenant)

    response = api.patch(f"/v1/agents/{created['id']}", json={"identifier": "default"}, headers=tenant.project_headers)

    assert response.status_code == 409
    assert response.json() == DUPLICATE
    assert api.get(f"/v1/agents/{created['id']}", headers=tenant.project_headers).json()["identifier"] == "builder"


def test_patch_to_its_own_identifier_is_not_a_conflict(api, tenant):
    created = _create(api, tenant)

    response = api.patch(f"/v1/agents/{created['id']}", json={"identifier": "builder"}, headers=tenant.project_headers)

    assert response.status_code == 200
    assert response.json()["identifier"] == "builder"


def test_patch_validates_like_create(api, tenant):
    cases = [
        ({}, "No fields to update"),
        ({"name": ""}, "name: String should have at least 1 character"),
        ({"name": "n" * 256}, "name: String should have at most 255 characters"),
        ({"identifier": "Bad_Id"}, IDENTIFIER_MESSAGE),
        ({"name": None}, "name cannot be null"),
        ({"isDefault": True}, "isDefault: Extra inputs are not permitted"),
    ]
    for body, message in cases:
        response = api.patch(f"/v1/agents/{tenant.agent_id}", json=body, headers=tenant.project_headers)
        assert (body, response.status_code, response.json()) == (body, 400, {"error": message})


# Delete and the default agent


def test_delete_removes_the_agent_and_its_token(api, core, tenant):
    created = _create(api, tenant)

    response = api.delete(f"/v1/agents/{created['id']}", headers=tenant.project_headers)

    assert response.status_code == 204
    assert response.content == b""
    assert api.get(f"/v1/agents/{created['id']}", headers=tenant.project_headers).json() == AGENT_NOT_FOUND
    assert core.store.get(schema.credential(key_hash(created["accessToken"]))) is None


def test_default_agent_cannot_be_deleted(api, tenant):
    response = api.delete(f"/v1/agents/{tenant.agent_id}", headers=tenant.project_headers)

    assert response.status_code == 400
    assert response.json() == envelope("Cannot delete the default agent", "invalid_request_error")
    assert [agent["id"] for agent in _agents(api, tenant)] == [tenant.agent_id]


def test_set_default_on_the_default_agent_is_refused(api, tenant):
    response = api.post(f"/v1/agents/{tenant.agent_id}/set-default", headers=tenant.project_headers)

    assert response.status_code == 400
    assert response.json() == envelope("Agent is already the default", "invalid_request_error")


def test_set_default_moves_the_default_and_frees_the_old_one(api, tenant):
    created = _create(api, tenant)

    response = api.post(f"/v1/agents/{created['id']}/set-default", headers=tenant.project_headers)

    assert response.status_code == 200
    assert response.json()["id"] == created["id"]
    assert response.json()["isDefault"] is True
    assert [agent["id"] for agent in _agents(api, tenant) if agent["isDefault"]] == [created["id"]]
    assert api.delete(f"/v1/agents/{tenant.agent_id}", headers=tenant.project_headers).status_code == 204
    refused = api.delete(f"/v1/agents/{created['id']}", headers=tenant.project_headers)
    assert (refused.status_code, refused.json()) == (400, envelope("Cannot delete the default agent", "invalid_request_error"))


# Tokens


def test_regenerate_token_replaces_the_credential(api, core, tenant):
    old = tenant.agent_token

    response = api.post(f"/v1/agents/{tenant.agent_id}/regenerate-token", headers=tenant.project_headers)

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"id", "accessToken"}
    assert body["id"] == tenant.agent_id
    assert classify(body["accessToken"]) is KeyKind.AGENT
    assert body["accessToken"] != old
    assert core.store.get(schema.credential(key_hash(old))) is None
    new = core.store.get(schema.credential(key_hash(body["accessToken"])))
    assert new is not None
    assert (new["kind"], new["agentId"], new["projectId"]) == ("agent", tenant.agent_id, tenant.project_id)
    assert body["accessToken"] not in api.get(f"/v1/agents/{tenant.agent_id}", headers=tenant.project_headers).text


# Selective secrets


def test_assign_project_and_organization_secrets(api, tenant):
    project_secret = api.post("/v1/secrets", json=secret_body(), headers=tenant.project_headers).json()
    org_secret = api.post("/v1/org/secrets", json=generic_body(), headers=tenant.org_headers).json()

    response = api.put(
        f"/v1/agents/{tenant.agent_id}/secrets",
        json={"secretIds": [project_secret["id"], org_secret["id"], project_secret["id"]]},
        headers=tenant.project_headers,
    )

    assert response.status_code == 200
    assert response.json()["secretMode"] == "selective"
    assert response.json()["secretIds"] == [project_secret["id"], org_secret["id"]]
    fetched = api.get(f"/v1/agents/{tenant.agent_id}", headers=tenant.project_headers).json()
    assert fetched["secretIds"] == [project_secret["id"], org_secret["id"]]


def test_assign_nothing_is_selective_with_no_secrets(api, tenant):
    response = api.put(f"/v1/agents/{tenant.agent_id}/secrets", json={"secretIds": []}, headers=tenant.project_headers)

    assert response.status_code == 200
    assert (response.json()["secretMode"], response.json()["secretIds"]) == ("selective", [])


def test_assign_unknown_or_foreign_secrets_is_refused(api, tenant, other_tenant):
    own = api.post("/v1/secrets", json=secret_body(), headers=tenant.project_headers).json()
    foreign = api.post("/v1/secrets", json=secret_body(), headers=other_tenant.project_headers).json()
    foreign_org = api.post("/v1/org/secrets", json=secret_body(), headers=other_tenant.org_headers).json()

    for secret_ids in ([own["id"], "sec_01unknown0000000000000000"], [foreign["id"]], [foreign_org["id"]]):
        response = api.put(f"/v1/agents/{tenant.agent_id}/secrets", json={"secretIds": secret_ids}, headers=tenant.project_headers)
        assert (secret_ids, response.status_code, response.json()) == (
            secret_ids,
            400,
            envelope("One or more secrets not found", "invalid_request_error"),
        )

    assert api.get(f"/v1/agents/{tenant.agent_id}", headers=tenant.project_headers).json()["secretMode"] == "all"


def test_secret_of_another_project_in_the_same_organization_is_refused(api, core, tenant):
    second = api.post("/v1/projects", json={"name": "Second"}, headers=tenant.org_headers).json()
    in_second = api.post("/v1/secrets", json=secret_body(), headers=tenant.org_headers_for(second["id"])).json()

    response = api.put(
        f"/v1/agents/{tenant.agent_id}/secrets", json={"secretIds": [in_second["id"]]}, headers=tenant.project_headers
    )

    assert response.status_code == 400
    assert response.json() == envelope("One or more secrets not found", "invalid_request_error")


def test_deleted_secret_leaves_the_agents_selection(api, tenant):
    secret = api.post("/v1/secrets", json=secret_body(), headers=tenant.project_headers).json()
    api.put(f"/v1/agents/{tenant.agent_id}/secrets", json={"secretIds": [secret["id"]]}, headers=tenant.project_headers)

    assert api.delete(f"/v1/secrets/{secret['id']}", headers=tenant.project_headers).status_code == 204

    agent = api.get(f"/v1/agents/{tenant.agent_id}", headers=tenant.project_headers).json()
    assert agent["secretIds"] == []
    again = api.put(f"/v1/agents/{tenant.agent_id}/secrets", json={"secretIds": agent["secretIds"]}, headers=tenant.project_headers)
    assert again.status_code == 200


# Unknown agents


def test_unknown_agent_is_not_found_on_every_agent_route(api, tenant, other_tenant):
    routes = [
        ("GET", "/v1/agents/{id}", None),
        ("PATCH", "/v1/agents/{id}", {"name": "x"}),
        ("DELETE", "/v1/agents/{id}", None),
        ("POST", "/v1/agents/{id}/set-default", None),
        ("POST", "/v1/agents/{id}/regenerate-token", None),
        ("PUT", "/v1/agents/{id}/secrets", {"secretIds": []}),
    ]
    for agent_id in ("agt_01unknown0000000000000000", other_tenant.agent_id):
        for method, path, body in routes:
            response = api.request(method, path.format(id=agent_id), json=body, headers=tenant.project_headers)
            assert (method, path, response.status_code, response.json()) == (method, path, 404, AGENT_NOT_FOUND)
