"""Project secrets (/v1/secrets) and organization secrets (/v1/org/secrets) over HTTP."""
from __future__ import annotations

from datetime import datetime

from tests.conftest import envelope
from tests.integration.api.helpers import INSUFFICIENT, MISSING, generic_body, secret_body

SECRET_CREATED_FIELDS = {"id", "name", "type", "valueSource", "opRef", "hostPattern", "pathPattern", "createdAt", "preview"}
SECRET_NOT_FOUND = envelope("Secret not found", "not_found_error")
GENERIC_METHOD_REQUIRED = "Header name, parameter name, or URL path template is required for generic secrets"
ONEPASSWORD_PROJECT_ONLY = "1Password is only available for project-scoped secrets"
MASK = "••••••••"
ROUTES = {"project": "/v1/secrets", "organization": "/v1/org/secrets"}


def _headers(tenant, level):
    return tenant.project_headers if level == "project" else tenant.org_headers


def _create(api, tenant, level="project", **fields):
    body = generic_body(**fields) if fields.get("type", "generic") == "generic" else secret_body(**fields)
    response = api.post(ROUTES[level], json=body, headers=_headers(tenant, level))
    assert response.status_code == 201, response.text
    return response.json()


def _flat_errors(api, tenant, cases, body_of, level="project"):
    """POST each case and return (case, status, body) so one assertion shows every mismatch at once."""
    results = []
    for case in cases:
        response = api.post(ROUTES[level], json=body_of(case), headers=_headers(tenant, level))
        results.append((case, response.status_code, response.json()))
    return results


# Create


def test_create_answers_201_with_the_secret_created_fields_and_never_the_value(api, tenant):
    value = "sk-ant-api03-distinctive-0123456789"

    for level in ROUTES:
        response = api.post(ROUTES[level], json=secret_body(value=value, pathPattern="/v1/*"), headers=_headers(tenant, level))

        assert response.status_code == 201
        created = response.json()
        assert SECRET_CREATED_FIELDS <= set(created)
        assert "value" not in created and "valueCiphertext" not in created
        assert value not in response.text
        assert (created["name"], created["type"], created["valueSource"], created["opRef"]) == (
            "Anthropic key", "anthropic", "inline", None,
        )
        assert (created["hostPattern"], created["pathPattern"]) == ("api.anthropic.com", "/v1/*")
        assert created["preview"] == "sk-a…6789"
        assert created["id"].startswith("sec_")
        datetime.fromisoformat(created["createdAt"].replace("Z", "+00:00"))


def test_host_pattern_is_normalized_to_lowercase(api, tenant):
    assert _create(api, tenant, hostPattern="API.Example.COM")["hostPattern"] == "api.example.com"
    assert _create(api, tenant, hostPattern="*.example.com")["hostPattern"] == "*.example.com"


def test_get_and_list_never_show_the_value(api, tenant):
    value = "generic-value-abcdefghijklmnop"
    created = _create(api, tenant, value=value)

    fetched = api.get(f"/v1/secrets/{created['id']}", headers=tenant.project_headers)
    listed = api.get("/v1/secrets", headers=tenant.project_headers)

    assert fetched.status_code == 200
    assert fetched.json() == created
    assert listed.json() == [created]
    assert value not in fetched.text + listed.text


def test_host_pattern_messages(api, tenant):
    cases = {
        "https://api.x.com": "Enter a hostname, not a URL (remove http:// or https://)",
        "http://api.x.com": "Enter a hostname, not a URL (remove http:// or https://)",
        "HTTPS://api.x.com": "Enter a hostname, not a URL (remove http:// or https://)",
        "api.x.com/v1": "Enter a hostname only, not a path (use the path pattern field for paths)",
        "api x.com": "Host pattern must not contain spaces",
        "api.x.com\t": "Host pattern must not contain spaces",
    }

    results = _flat_errors(api, tenant, cases, lambda host: generic_body(hostPattern=host))

    assert results == [(host, 400, {"error": message}) for host, message in cases.items()]


def test_generic_secret_without_an_injection_method_is_refused(api, tenant):
    cases = {"missing": MISSING, "null": None, "empty": {}}

    for level in ROUTES:
        results = _flat_errors(api, tenant, cases, lambda case: generic_body(injectionConfig=cases[case]), level)

        assert results == [(case, 400, {"error": GENERIC_METHOD_REQUIRED}) for case in cases]


def test_each_injection_variant_is_accepted_and_returned(api, tenant):
    variants = [
        {"headerName": "X-Api-Key"},
        {"headerName": "Authorization", "valueFormat": "Token {value}"},
        {"paramName": "api_key"},
        {"paramName": "key", "paramFormat": "k-{value}"},
        {"pathTemplate": "/bot{value}/"},
        {"pathRegex": "^/v1/(.*)$", "pathReplacement": "/v1/{value}/$1"},
    ]
    for variant in variants:
        created = _create(api, tenant, injectionConfig=variant)
        assert created["injectionConfig"] == variant


def test_bad_injection_configs_are_refused_with_a_clear_message(api, tenant):
    cases = [
        ({"headerName": "X-Key", "color": "red"}, "injectionConfig has unknown field color"),
        ({"headerName": "X-Key", "paramName": "key"}, "injectionConfig must use exactly one method; got headerName and paramName"),
        ({"headerName": "X-Key", "paramFormat": "{value}"}, "injectionConfig field paramFormat cannot be combined with headerName"),
        ({"pathTemplate": "/a/{value}", "pathReplacement": "{value}"}, "injectionConfig field pathReplacement cannot be combined with pathTemplate"),
        ({"valueFormat": "Bearer {value}"}, "injectionConfig.valueFormat needs headerName"),
        ({"headerName": ""}, "injectionConfig.headerName: String should have at least 1 character"),
        ({"paramName": ""}, "injectionConfig.paramName: String should have at least 1 character"),
        ({"headerName": "X Key"}, "headerName must be a valid HTTP header name"),
        ({"headerName": "Host"}, "headerName Host is managed by the gateway and cannot be injected"),
        ({"headerName": "X-Key", "valueFormat": "Bearer"}, "valueFormat must contain {value}"),
        ({"paramName": "key", "paramFormat": "k"}, "paramFormat must contain {value}"),
        ({"pathTemplate": "bot{value}"}, "pathTemplate must start with /"),
        ({"pathTemplate": "/a/{value}/{value}"}, "pathTemplate must contain {value} exactly once"),
        ({"pathTemplate": "/a/b"}, "pathTemplate must contain {value} exactly once"),
        ({"pathRegex": "^/(.*)$", "pathReplacement": "/$1"}, "pathReplacement must contain {value}"),
        ({"pathRegex": "^/(.*)$"}, "injectionConfig.pathReplacement: Field required"),
        ({"pathRegex": "^/(.*)$", "pathReplacement": "/{value}/$2"}, "pathReplacement refers to $2 but pathRegex has 1 capture groups"),
        (
            {"pathRegex": "(", "pathReplacement": "{value}"},
            "pathRegex is not a valid RE2 regular expression (no backreferences or lookaround): missing ): (",
        ),
        (
            {"pathRegex": r"^/(a)\1", "pathReplacement": "{value}"},
            "pathRegex is not a valid RE2 regular expression (no backreferences or lookaround): invalid escape sequence: \\1",
        ),
        ("X-Api-Key", "injectionConfig must be an object or null"),
    ]

    results = _flat_errors(api, tenant, range(len(cases)), lambda i: generic_body(injectionConfig=cases[i][0]))

    assert results == [(i, 400, {"error": message}) for i, (_, message) in enumerate(cases)]


def test_injection_config_is_for_generic_secrets_only(api, tenant):
    response = api.post("/v1/secrets", json=secret_body(injectionConfig={"headerName": "X-Key"}), headers=tenant.project_headers)

    assert response.status_code == 400
    assert response.json() == {
        "error": "injectionConfig is used for generic secrets only; anthropic secrets are injected by the gateway"
    }


def test_onepassword_reference_is_accepted_on_project_secrets_without_a_preview(api, tenant):
    body = secret_body(value=MISSING, valueSource="onepassword", opRef="op://vault/item/field")

    response = api.post("/v1/secrets", json=body, headers=tenant.project_headers)

    assert response.status_code == 201
    created = response.json()
    assert (created["valueSource"], created["opRef"], created["preview"]) == ("onepassword", "op://vault/item/field", None)


def test_onepassword_reference_must_be_well_formed(api, tenant):
    message = "opRef must be a 1Password reference such as op://vault/item/field"
    for op_ref in ("vault/item/field", "op://vault", "op://vault/item/field\n", "op://va ult/item/field"):
        body = secret_body(value=MISSING, valueSource="onepassword", opRef=op_ref)
        response = api.post("/v1/secrets", json=body, headers=tenant.project_headers)
        assert (op_ref, response.status_code, response.json()) == (op_ref, 400, {"error": message})


def test_onepassword_is_refused_on_organization_secrets(api, tenant):
    bodies = [
        secret_body(value=MISSING, valueSource="onepassword", opRef="op://vault/item/field"),
        secret_body(valueSource="onepassword"),
        secret_body(opRef="op://vault/item/field"),
    ]
    for body in bodies:
        response = api.post("/v1/org/secrets", json=body, headers=tenant.org_headers)
        assert (body, response.status_code, response.json()) == (body, 400, {"error": ONEPASSWORD_PROJECT_ONLY})

    assert api.get("/v1/org/secrets", headers=tenant.org_headers).json() == []


def test_inline_secret_needs_a_value(api, tenant):
    for level, message in (("project", "value is required for inline secrets"), ("organization", "value: Field required")):
        response = api.post(ROUTES[level], json=secret_body(value=MISSING), headers=_headers(tenant, level))
        assert (level, response.status_code, response.json()) == (level, 400, {"error": message})


def test_limits_on_name_value_and_path_pattern(api, tenant):
    accepted = [
        secret_body(name="n" * 255),
        secret_body(value="v" * 10000),
        secret_body(value="v"),
        secret_body(pathPattern="/" + "p" * 999),
    ]
    refused = [
        (secret_body(name="n" * 256), "name: String should have at most 255 characters"),
        (secret_body(name=""), "name: String should have at least 1 character"),
        (secret_body(value="v" * 10001), "value: String should have at most 10000 characters"),
        (secret_body(value=""), "value: String should have at least 1 character"),
        (secret_body(pathPattern="/" + "p" * 1000), "pathPattern: String should have at most 1000 characters"),
    ]
    for level in ROUTES:
        for body in accepted:
            response = api.post(ROUTES[level], json=body, headers=_headers(tenant, level))
            assert (level, response.status_code) == (level, 201), response.text
        for body, message in refused:
            response = api.post(ROUTES[level], json=body, headers=_headers(tenant, level))
            assert (level, response.status_code, response.json()) == (level, 400, {"error": message})


def test_preview_shows_at_most_the_first_and_last_four_characters(api, tenant):
    cases = {
        "abcdEFGHwxyz": "abcd…wxyz",  # 12 characters: the shortest value with a preview
        "abcdEFGHIJKLMNOPwxyz": "abcd…wxyz",
        "abcdEFGwxyz": MASK,  # 11 characters
        "a": MASK,
    }
    for value, expected in cases.items():
        created = _create(api, tenant, type="anthropic", value=value)
        assert (value, created["preview"]) == (value, expected)


# Update and delete


def test_patch_changes_fields_and_a_new_value_changes_the_preview(api, tenant):
    for level in ROUTES:
        created = _create(api, tenant, level, value="first-value-0000-aaaa")
        url = f"{ROUTES[level]}/{created['id']}"

        response = api.patch(
            url,
            json={"name": "Renamed", "value": "second-value-1111-bbbb", "hostPattern": "api.other.com", "pathPattern": "/v2/*"},
            headers=_headers(tenant, level),
        )

        assert response.status_code == 200
        updated = response.json()
        assert (updated["name"], updated["hostPattern"], updated["pathPattern"], updated["preview"]) == (
            "Renamed", "api.other.com", "/v2/*", "seco…bbbb",
        )
        assert "second-value-1111-bbbb" not in response.text
        assert api.get(url, headers=_headers(tenant, level)).json() == updated


def test_patch_can_switch_the_injection_method_and_clear_the_path_pattern(api, tenant):
    created = _create(api, tenant, pathPattern="/v1/*")

    response = api.patch(
        f"/v1/secrets/{created['id']}",
        json={"injectionConfig": {"paramName": "key"}, "pathPattern": None},
        headers=tenant.project_headers,
    )

    assert response.status_code == 200
    assert (response.json()["injectionConfig"], response.json()["pathPattern"]) == ({"paramName": "key"}, None)


def test_patch_validation_messages(api, tenant):
    created = _create(api, tenant)
    cases = [
        ({}, {"error": "No fields to update"}),
        ({"hostPattern": "https://api.x.com"}, {"error": "Enter a hostname, not a URL (remove http:// or https://)"}),
        ({"name": ""}, {"error": "name: String should have at least 1 character"}),
        ({"value": "v" * 10001}, {"error": "value: String should have at most 10000 characters"}),
        ({"name": None}, {"error": "name cannot be null"}),
        ({"injectionConfig": {"pathTemplate": "x"}}, {"error": "pathTemplate must start with /"}),
        ({"type": "openai"}, {"error": "type: Extra inputs are not permitted"}),
    ]
    for body, error in cases:
        response = api.patch(f"/v1/secrets/{created['id']}", json=body, headers=tenant.project_headers)
        assert (body, response.status_code, response.json()) == (body, 400, error)


def test_patch_cannot_remove_the_injection_method_of_a_generic_secret(api, tenant):
    created = _create(api, tenant)

    response = api.patch(f"/v1/secrets/{created['id']}", json={"injectionConfig": None}, headers=tenant.project_headers)

    assert response.status_code == 400
    assert response.json() == envelope(GENERIC_METHOD_REQUIRED, "invalid_request_error")


def test_delete_removes_the_secret(api, tenant):
    for level in ROUTES:
        created = _create(api, tenant, level)
        url = f"{ROUTES[level]}/{created['id']}"

        response = api.delete(url, headers=_headers(tenant, level))

        assert (response.status_code, response.content) == (204, b"")
        assert api.get(url, headers=_headers(tenant, level)).json() == SECRET_NOT_FOUND
        assert api.delete(url, headers=_headers(tenant, level)).json() == SECRET_NOT_FOUND


def test_unknown_secret_is_not_found(api, tenant):
    for level in ROUTES:
        url = f"{ROUTES[level]}/sec_01unknown0000000000000000"
        for method, body in (("GET", None), ("PATCH", {"name": "x"}), ("DELETE", None)):
            response = api.request(method, url, json=body, headers=_headers(tenant, level))
            assert (level, method, response.status_code, response.json()) == (level, method, 404, SECRET_NOT_FOUND)


# The project's view of organization secrets


def test_project_listing_shows_its_own_and_the_organizations_secrets(api, tenant):
    own = _create(api, tenant, "project", name="Own")
    inherited = _create(api, tenant, "organization", name="Inherited")

    listed = api.get("/v1/secrets", headers=tenant.project_headers).json()

    assert {(s["id"], s["scope"], s["readOnly"]) for s in listed} == {
        (own["id"], "project", False),
        (inherited["id"], "organization", True),
    }
    assert api.get("/v1/org/secrets", headers=tenant.org_headers).json() == [
        {**inherited, "scope": "organization", "readOnly": False}
    ]


def test_organization_secret_is_read_only_in_the_project_view(api, tenant):
    inherited = _create(api, tenant, "organization")
    url = f"/v1/secrets/{inherited['id']}"

    patched = api.patch(url, json={"name": "Hijacked"}, headers=tenant.project_headers)
    deleted = api.delete(url, headers=tenant.project_headers)

    assert (patched.status_code, patched.json()) == (404, SECRET_NOT_FOUND)
    assert (deleted.status_code, deleted.json()) == (404, SECRET_NOT_FOUND)
    assert api.get(f"/v1/org/secrets/{inherited['id']}", headers=tenant.org_headers).json()["name"] == inherited["name"]


def test_organization_secrets_need_the_admin_role(api, tenant, member, owner):
    forbidden = envelope(INSUFFICIENT, "permission_error")

    as_member = member.client.post("/v1/org/secrets", json=secret_body())
    member_list = member.client.get("/v1/org/secrets")
    with_project_key = api.post("/v1/org/secrets", json=secret_body(), headers=tenant.project_headers)
    with_org_key = api.post("/v1/org/secrets", json=secret_body(), headers=tenant.org_headers)
    as_owner = owner.client.post("/v1/org/secrets", json=secret_body())

    assert (as_member.status_code, as_member.json()) == (403, forbidden)
    assert (member_list.status_code, member_list.json()) == (403, forbidden)
    assert (with_project_key.status_code, with_project_key.json()) == (403, forbidden)
    assert with_org_key.status_code == 201
    assert as_owner.status_code == 201
    assert len(api.get("/v1/org/secrets", headers=tenant.org_headers).json()) == 2


def test_member_session_sees_organization_secrets_read_only_in_a_project(api, tenant, member):
    inherited = _create(api, tenant, "organization")

    listed = member.client.get("/v1/secrets", headers={"X-Project-Id": tenant.project_id})

    assert listed.status_code == 200
    assert [(s["id"], s["readOnly"]) for s in listed.json()] == [(inherited["id"], True)]
