"""Rules, Organization Rules, Approvals and Organization Approvals through HTTP, on both stores."""
from __future__ import annotations

import pytest

from credgate.services import approvals
from credgate.services.approvals import HeldRequest
from tests.conftest import envelope

RULE = {"name": "no deletes", "hostPattern": "api.github.com", "action": "block", "method": "DELETE"}


@pytest.fixture(params=["project", "organization"])
def rules_route(request, tenant):
    """The same behaviour on /rules (project key) and /org/rules (organization key)."""
    if request.param == "project":
        return "/v1/rules", tenant.project_headers
    return "/v1/org/rules", tenant.org_headers


def test_rule_crud_round_trip(api, rules_route):
    path, headers = rules_route
    created = api.post(path, headers=headers, json=RULE)
    assert created.status_code == 201, created.text
    rule = created.json()
    assert rule | {"id": None, "createdAt": None, "updatedAt": None} == {
        "id": None, "name": "no deletes", "hostPattern": "api.github.com", "pathPattern": None, "method": "DELETE",
        "action": "block", "enabled": True, "agentId": None, "rateLimit": None, "rateLimitWindow": None,
        "scope": "project" if path == "/v1/rules" else "organization", "createdAt": None, "updatedAt": None,
    }
    assert api.get(f"{path}/{rule['id']}", headers=headers).json() == rule
    patched = api.patch(f"{path}/{rule['id']}", headers=headers, json={"enabled": False})
    assert patched.status_code == 200 and patched.json()["enabled"] is False
    assert [r["id"] for r in api.get(path, headers=headers).json()] == [rule["id"]]
    assert api.delete(f"{path}/{rule['id']}", headers=headers).status_code == 204
    assert api.get(path, headers=headers).json() == []


def test_rate_limit_rule_needs_both_rate_fields(api, rules_route):
    path, headers = rules_route
    for partial in ({}, {"rateLimit": 10}, {"rateLimitWindow": "minute"}):
        response = api.post(path, headers=headers, json={**RULE, "action": "rate_limit", **partial})
        assert response.status_code == 400
        assert response.json() == {"error": "rateLimit and rateLimitWindow are required when action is rate_limit"}
    ok = api.post(path, headers=headers, json={**RULE, "action": "rate_limit", "rateLimit": 10, "rateLimitWindow": "hour"})
    assert ok.status_code == 201
    assert (ok.json()["rateLimit"], ok.json()["rateLimitWindow"]) == (10, "hour")


def test_update_that_leaves_a_rate_limit_rule_without_rate_config_is_refused(api, rules_route):
    path, headers = rules_route
    blocking = api.post(path, headers=headers, json=RULE).json()
    response = api.patch(f"{path}/{blocking['id']}", headers=headers, json={"action": "rate_limit"})
    assert response.status_code == 400
    assert response.json() == envelope("Rate limit rules require a rate limit and window", "invalid_request_error")

    limited = api.post(path, headers=headers, json={**RULE, "action": "rate_limit", "rateLimit": 5, "rateLimitWindow": "minute"}).json()
    response = api.patch(f"{path}/{limited['id']}", headers=headers, json={"rateLimit": None})
    assert response.json() == envelope("Rate limit rules require a rate limit and window", "invalid_request_error")
    switched = api.patch(f"{path}/{limited['id']}", headers=headers, json={"action": "allow"})
    assert switched.status_code == 200
    assert (switched.json()["rateLimit"], switched.json()["rateLimitWindow"]) == (None, None)


def test_empty_patch_and_unknown_rule(api, rules_route):
    path, headers = rules_route
    rule = api.post(path, headers=headers, json=RULE).json()
    empty = api.patch(f"{path}/{rule['id']}", headers=headers, json={})
    assert empty.status_code == 400
    assert empty.json() == {"error": "At least one field must be provided"}
    for method in ("get", "delete"):
        missing = getattr(api, method)(f"{path}/rul_missing", headers=headers)
        assert missing.status_code == 404
        assert missing.json() == envelope("Policy rule not found", "not_found_error")
    missing = api.patch(f"{path}/rul_missing", headers=headers, json={"enabled": True})
    assert missing.json() == envelope("Policy rule not found", "not_found_error")


def test_rule_validation_messages(api, tenant):
    headers = tenant.project_headers
    cases = [
        ({**RULE, "hostPattern": "https://api.github.com"}, "Enter a hostname, not a URL (remove http:// or https://)"),
        ({**RULE, "action": "explode"}, None),
        ({**RULE, "method": "GE T"}, "method must be an HTTP method such as GET or POST, or * for any"),
        ({**RULE, "agentId": "agt_nope"}, None),
    ]
    for body, message in cases:
        response = api.post("/v1/rules", headers=headers, json=body)
        assert response.status_code == 400, body
        if message:
            assert response.json() == {"error": message}
    assert api.post("/v1/rules", headers=headers, json={**RULE, "agentId": "agt_nope"}).json() == envelope(
        "agentId does not name an agent of this project", "invalid_request_error"
    )
    scoped = api.post("/v1/rules", headers=headers, json={**RULE, "agentId": tenant.agent_id})
    assert scoped.status_code == 201 and scoped.json()["agentId"] == tenant.agent_id


def test_project_rules_and_org_rules_are_separate_and_tenant_scoped(api, tenant, other_tenant):
    project_rule = api.post("/v1/rules", headers=tenant.project_headers, json=RULE).json()
    org_rule = api.post("/v1/org/rules", headers=tenant.org_headers, json=RULE).json()
    assert [r["id"] for r in api.get("/v1/rules", headers=tenant.project_headers).json()] == [project_rule["id"]]
    assert [r["id"] for r in api.get("/v1/org/rules", headers=tenant.org_headers).json()] == [org_rule["id"]]
    assert api.get(f"/v1/rules/{project_rule['id']}", headers=other_tenant.project_headers).status_code == 404
    assert api.delete(f"/v1/org/rules/{org_rule['id']}", headers=other_tenant.org_headers).status_code == 404
    assert api.get("/v1/org/rules", headers=other_tenant.org_headers).json() == []


def _hold(core, tenant, hold_seconds: int = 180) -> str:
    return approvals.request_approval(
        core,
        HeldRequest(tenant.organization_id, tenant.project_id, tenant.agent_id, "Default agent", None, "needs a human",
                    "POST", "api.github.com", "/repos/x/issues", '{"title": "hi"}'),
        hold_seconds,
    )


def test_pending_approval_is_listed_and_decided_once(api, core, tenant):
    approval_id = _hold(core, tenant)
    pending = api.get("/v1/approvals", headers=tenant.project_headers).json()
    assert [(a["id"], a["status"], a["method"], a["host"], a["path"], a["bodyPreview"]) for a in pending] == [
        (approval_id, "pending", "POST", "api.github.com", "/repos/x/issues", '{"title": "hi"}')
    ]
    assert [a["id"] for a in api.get("/v1/org/approvals", headers=tenant.org_headers).json()] == [approval_id]

    decided = api.post(f"/v1/approvals/{approval_id}/decision", headers=tenant.project_headers, json={"decision": "approve"})
    assert decided.status_code == 200 and decided.json()["status"] == "approved"
    assert approvals.current_status(core, tenant.organization_id, approval_id).value == "approved"
    again = api.post(f"/v1/approvals/{approval_id}/decision", headers=tenant.project_headers, json={"decision": "deny"})
    assert again.status_code == 409
    assert api.get("/v1/approvals", headers=tenant.project_headers).json() == []


def test_org_approvals_decide_and_unknown_or_expired_requests(api, core, clock, tenant, other_tenant):
    approval_id = _hold(core, tenant, hold_seconds=60)
    denied = api.post(f"/v1/org/approvals/{approval_id}/decision", headers=tenant.org_headers, json={"decision": "deny"})
    assert denied.json()["status"] == "denied"

    unknown = api.post("/v1/approvals/apr_missing/decision", headers=tenant.project_headers, json={"decision": "approve"})
    assert unknown.status_code == 404
    assert unknown.json() == envelope("Approval request not found", "not_found_error")
    foreign = _hold(core, other_tenant)
    assert api.post(f"/v1/approvals/{foreign}/decision", headers=tenant.project_headers, json={"decision": "approve"}).status_code == 404

    late = _hold(core, tenant, hold_seconds=60)
    clock.advance(seconds=61)
    expired = api.post(f"/v1/approvals/{late}/decision", headers=tenant.project_headers, json={"decision": "approve"})
    assert expired.status_code == 410
    assert expired.json() == envelope("Approval request has expired", "invalid_request_error")
    bad = api.post(f"/v1/approvals/{late}/decision", headers=tenant.project_headers, json={"decision": "maybe"})
    assert bad.status_code == 400
