from tests.conftest import envelope


def test_project_key_lists_default_agent(api, tenant):
    response = api.get("/v1/agents", headers=tenant.project_headers)
    assert response.status_code == 200
    assert [a["identifier"] for a in response.json()] == ["default"]


def test_missing_key_is_rejected(api, tenant):
    response = api.get("/v1/agents")
    assert response.status_code == 401
    assert response.json() == envelope("Invalid API key or token.", "authentication_error")
