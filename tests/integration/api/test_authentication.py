"""Who may call what: API keys by prefix, the project header, roles, and the email-link browser session."""
from __future__ import annotations

import secrets

import pytest
from fastapi.testclient import TestClient

from credgate.services.auth import SESSION_COOKIE
from tests.conftest import envelope
from tests.integration.api.helpers import INSUFFICIENT, NOT_AUTHENTICATED, open_link

UNAUTHENTICATED = envelope(NOT_AUTHENTICATED, "authentication_error")
FORBIDDEN = envelope(INSUFFICIENT, "permission_error")
SESSION_EXPIRED = envelope("Your session has expired. Sign in again.", "authentication_error")
INVALID_LINK = envelope("This sign-in link is invalid or has expired. Request a new one.", "authentication_error")
SESSION_TTL_SECONDS = 7 * 24 * 3600
LINK_TTL_SECONDS = 15 * 60


def _hex() -> str:
    return secrets.token_hex(32)


# API keys


def test_missing_or_invalid_credential_is_rejected(api, tenant):
    authorizations = {
        "none": None,
        "empty": "",
        "bearer only": "Bearer",
        "garbage": "Bearer garbage",
        "basic scheme": "Basic b2NfOmFiYw==",
        "unknown project key": f"Bearer oc_{_hex()}",
        "unknown organization key": f"Bearer oc_org_{_hex()}",
        "one hex digit short": f"Bearer oc_{_hex()[:-1]}",
        "uppercase hex": f"Bearer oc_{_hex().upper()}",
        "valid key, basic scheme": f"Basic {tenant.project_key}",
    }
    for case, authorization in authorizations.items():
        headers = {} if authorization is None else {"Authorization": authorization}

        response = api.get("/v1/agents", headers=headers)

        assert (case, response.status_code, response.json()) == (case, 401, UNAUTHENTICATED)


def test_agent_token_does_not_authenticate_the_management_api(api, tenant):
    response = api.get("/v1/agents", headers={"Authorization": f"Bearer {tenant.agent_token}"})

    assert response.status_code == 401
    assert response.json() == UNAUTHENTICATED


def test_partner_looking_key_nobody_issued_is_rejected(api, tenant):
    response = api.get("/v1/agents", headers={"Authorization": f"Bearer oc_partner_{_hex()}"})

    assert response.status_code == 401
    assert response.json() == UNAUTHENTICATED


def test_project_key_lists_its_own_project(api, tenant):
    response = api.get("/v1/agents", headers=tenant.project_headers)

    assert response.status_code == 200
    assert [agent["id"] for agent in response.json()] == [tenant.agent_id]


def test_project_key_ignores_another_project_header(api, tenant, other_tenant):
    """A project key always acts on its own project (spec: 'always operates on its own project')."""
    response = api.get("/v1/agents", headers={**tenant.project_headers, "X-Project-Id": other_tenant.project_id})

    assert response.status_code == 200
    assert [agent["id"] for agent in response.json()] == [tenant.agent_id]


def test_org_key_without_project_header_is_rejected_on_a_project_endpoint(api, tenant):
    response = api.get("/v1/agents", headers=tenant.org_headers)

    assert response.status_code == 401
    assert response.json() == UNAUTHENTICATED


def test_org_key_with_its_own_project_header_is_accepted(api, tenant):
    response = api.get("/v1/agents", headers=tenant.org_headers_for(tenant.project_id))

    assert response.status_code == 200
    assert [agent["id"] for agent in response.json()] == [tenant.agent_id]


@pytest.mark.parametrize("project", ["other-tenant", "made-up"])
def test_org_key_with_a_foreign_or_unknown_project_header_is_forbidden(api, tenant, other_tenant, project):
    project_id = other_tenant.project_id if project == "other-tenant" else "prj_01doesnotexist0000000000"

    response = api.get("/v1/agents", headers=tenant.org_headers_for(project_id))

    assert response.status_code == 403
    assert response.json() == FORBIDDEN


def test_project_key_cannot_use_organization_wide_routes(api, tenant):
    """Documented decision: a project key is a one-project credential, so /projects and /org are out of reach."""
    for path in ("/v1/projects", "/v1/team/members", "/v1/org/secrets", "/v1/org/settings"):
        response = api.get(path, headers=tenant.project_headers)
        assert (path, response.status_code, response.json()) == (path, 403, FORBIDDEN)


def test_org_key_reaches_organization_routes_without_project_header(api, tenant):
    response = api.get("/v1/org/secrets", headers=tenant.org_headers)

    assert response.status_code == 200
    assert response.json() == []


# Roles


def test_session_without_project_header_is_asked_for_one_on_a_project_endpoint(api, owner):
    response = owner.client.get("/v1/agents")

    assert response.status_code == 400
    assert response.json() == envelope("X-Project-Id header is required", "invalid_request_error")


def test_session_with_its_project_header_reaches_the_project(api, owner, tenant):
    response = owner.client.get("/v1/agents", headers={"X-Project-Id": tenant.project_id})

    assert response.status_code == 200
    assert [agent["id"] for agent in response.json()] == [tenant.agent_id]


def test_session_with_another_tenants_project_header_is_forbidden(api, owner, other_tenant):
    response = owner.client.get("/v1/agents", headers={"X-Project-Id": other_tenant.project_id})

    assert response.status_code == 403
    assert response.json() == FORBIDDEN


def test_member_session_cannot_use_admin_organization_routes(api, member):
    for method, path in (("GET", "/v1/org/secrets"), ("GET", "/v1/org/settings"), ("PATCH", "/v1/org/settings")):
        response = member.client.request(method, path, json={"policyMode": "deny"} if method == "PATCH" else None)
        assert (path, response.status_code, response.json()) == (path, 403, FORBIDDEN)


def test_owner_session_uses_admin_organization_routes(api, owner):
    response = owner.client.get("/v1/org/settings")

    assert response.status_code == 200
    assert response.json() == {"policyMode": "allow"}


def test_member_may_read_app_permissions_of_the_organization(api, member):
    """GET /org/rules/permissions/{provider} is member-readable: not 403 (the route itself is not built yet)."""
    response = member.client.get("/v1/org/rules/permissions/x")

    assert response.status_code == 404
    assert response.json() == envelope("Not found", "not_found_error")


def test_member_may_not_write_app_permissions_of_the_organization(api, member):
    response = member.client.patch("/v1/org/rules/permissions/x", json={})

    assert response.status_code == 403
    assert response.json() == FORBIDDEN


# Email-link sign-in and the session cookie


def _cookie_attributes(set_cookie: str) -> tuple[str, set[str]]:
    name_value, *attributes = [part.strip() for part in set_cookie.split(";")]
    return name_value, set(attributes)


def test_email_link_request_sends_one_mail_with_a_callback_link(api, mailer, tenant):
    response = api.post("/v1/auth/email-link", json={"email": tenant.email})

    assert response.status_code == 202
    assert response.json() == {"status": "sent"}
    assert len(mailer.sent) == 1
    mail = mailer.sent[0]
    assert mail.to == tenant.email
    assert len(mail.links) == 1
    assert mail.links[0].startswith("http://testserver/v1/auth/callback?token=")
    assert mail.links[0] in mail.text


def test_email_is_normalized_before_the_link_is_sent(api, mailer, tenant):
    response = api.post("/v1/auth/email-link", json={"email": "  Owner@Alpha.TEST "})

    assert response.status_code == 202
    assert [mail.to for mail in mailer.sent] == [tenant.email]


def test_callback_sets_an_httponly_lax_session_cookie_without_secure_over_http(api, mailer, tenant):
    api.post("/v1/auth/email-link", json={"email": tenant.email})

    response = open_link(api, mailer.last_link(tenant.email))

    assert response.status_code == 303
    assert response.headers["location"] == "http://testserver/"
    name_value, attributes = _cookie_attributes(response.headers["set-cookie"])
    name, _, value = name_value.partition("=")
    assert name == SESSION_COOKIE and len(value) >= 32
    assert attributes == {"HttpOnly", "SameSite=lax", "Path=/", f"Max-Age={SESSION_TTL_SECONDS}"}


def test_callback_over_https_marks_the_session_cookie_secure(api, mailer, tenant):
    with TestClient(api.app, base_url="https://testserver") as browser:
        browser.post("/v1/auth/email-link", json={"email": tenant.email})

        response = open_link(browser, mailer.last_link(tenant.email))

    assert response.status_code == 303
    _, attributes = _cookie_attributes(response.headers["set-cookie"])
    assert attributes == {"HttpOnly", "SameSite=lax", "Path=/", f"Max-Age={SESSION_TTL_SECONDS}", "Secure"}


def test_callback_behind_a_tls_terminating_proxy_marks_the_cookie_secure(api, mailer, tenant):
    api.post("/v1/auth/email-link", json={"email": tenant.email})
    link = mailer.last_link(tenant.email).removeprefix("http://testserver")

    response = api.get(link, headers={"X-Forwarded-Proto": "https"}, follow_redirects=False)

    assert response.status_code == 303
    assert "Secure" in _cookie_attributes(response.headers["set-cookie"])[1]


def test_session_from_the_link_reaches_the_user_endpoint(api, mailer, tenant):
    api.post("/v1/auth/email-link", json={"email": tenant.email})
    open_link(api, mailer.last_link(tenant.email))

    response = api.get("/v1/user")

    assert response.status_code == 200
    assert response.json()["id"] == tenant.user_id
    assert response.json()["email"] == tenant.email


def test_sign_in_link_works_only_once(api, mailer, tenant):
    api.post("/v1/auth/email-link", json={"email": tenant.email})
    link = mailer.last_link(tenant.email)
    assert open_link(api, link).status_code == 303

    with TestClient(api.app) as second_browser:
        response = open_link(second_browser, link)

    assert response.status_code == 401
    assert response.json() == INVALID_LINK


def test_expired_sign_in_link_is_rejected(api, mailer, clock, tenant):
    api.post("/v1/auth/email-link", json={"email": tenant.email})
    clock.advance(seconds=LINK_TTL_SECONDS + 1)

    response = open_link(api, mailer.last_link(tenant.email))

    assert response.status_code == 401
    assert response.json() == INVALID_LINK
    assert "set-cookie" not in response.headers


def test_sign_in_link_just_before_expiry_still_works(api, mailer, clock, tenant):
    api.post("/v1/auth/email-link", json={"email": tenant.email})
    clock.advance(seconds=LINK_TTL_SECONDS - 5)

    assert open_link(api, mailer.last_link(tenant.email)).status_code == 303


def test_made_up_sign_in_token_is_rejected(api):
    response = api.get("/v1/auth/callback?token=not-a-real-token", follow_redirects=False)

    assert response.status_code == 401
    assert response.json() == INVALID_LINK


def test_logout_ends_the_session_for_the_old_cookie_value(api, mailer, tenant):
    api.post("/v1/auth/email-link", json={"email": tenant.email})
    open_link(api, mailer.last_link(tenant.email))
    session = api.cookies[SESSION_COOKIE]

    logout = api.post("/v1/auth/logout")
    api.cookies.clear()
    replayed = api.get("/v1/user", headers={"Cookie": f"{SESSION_COOKIE}={session}"})

    assert logout.status_code == 204
    assert SESSION_COOKIE in logout.headers["set-cookie"] and "Max-Age=0" in logout.headers["set-cookie"]
    assert replayed.status_code == 401
    assert replayed.json() == SESSION_EXPIRED


def test_session_expires_after_seven_days(api, mailer, clock, tenant):
    api.post("/v1/auth/email-link", json={"email": tenant.email})
    open_link(api, mailer.last_link(tenant.email))
    clock.advance(seconds=SESSION_TTL_SECONDS - 60)
    assert api.get("/v1/user").status_code == 200

    clock.advance(seconds=120)
    response = api.get("/v1/user")

    assert response.status_code == 401
    assert response.json() == SESSION_EXPIRED


def test_made_up_session_cookie_is_rejected(api):
    response = api.get("/v1/user", headers={"Cookie": f"{SESSION_COOKIE}=forged"})

    assert response.status_code == 401
    assert response.json() == SESSION_EXPIRED


@pytest.mark.parametrize("redirect", ["/settings", "http://testserver/projects"])
def test_redirect_within_the_app_is_followed_after_sign_in(api, mailer, tenant, redirect):
    api.post("/v1/auth/email-link", json={"email": tenant.email, "redirectTo": redirect})

    response = open_link(api, mailer.last_link(tenant.email))

    assert response.status_code == 303
    assert response.headers["location"] == "http://testserver" + redirect.removeprefix("http://testserver")


def test_redirect_to_another_origin_is_refused(api, mailer, tenant):
    refused = envelope("redirectTo must be a path or a URL of this application", "invalid_request_error")
    for redirect in ("https://evil.example/", "//evil.example/path", "http://testserver.evil.example/", "https://testserver/", "/\\evil.example", "javascript:alert(1)"):
        response = api.post("/v1/auth/email-link", json={"email": tenant.email, "redirectTo": redirect})

        assert (redirect, response.status_code, response.json()) == (redirect, 400, refused)
    assert mailer.sent == []


def test_invalid_email_is_a_flat_validation_error(api, mailer):
    cases = {
        "": "email: String should have at least 3 characters",
        "not-an-email": "Enter a valid email address",
        "a@b": "Enter a valid email address",
        "two@@example.com": "Enter a valid email address",
        "sp ace@example.com": "Enter a valid email address",
    }
    for email, message in cases.items():
        response = api.post("/v1/auth/email-link", json={"email": email})

        assert (email, response.status_code, response.json()) == (email, 400, {"error": message})
    assert mailer.sent == []
