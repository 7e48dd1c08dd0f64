"""The Lambda entry points, driven with real API Gateway HTTP API (payload 2.0) events against moto."""
from __future__ import annotations

import base64
import importlib
import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from moto.core import DEFAULT_ACCOUNT_ID
from moto.ses.models import ses_backends

from credgate.clock import SystemClock
from credgate.keyring.kms import KmsKeyRing
from credgate.mail.ses import SesMailer
from credgate.services.core import Core
from credgate.settings import CoreSettings
from credgate.store import schema
from credgate.store.dynamodb import DynamoItemStore
from tests.conftest import AWS_REGION, MockedAws, envelope, make_tenant

SENDER = "no-reply@credgate.test"
API_URL = "https://abc123.execute-api.us-east-1.amazonaws.com"


class LambdaContext:
    function_name = "credgate-api"
    aws_request_id = "req-1"
    invoked_function_arn = f"arn:aws:lambda:{AWS_REGION}:{DEFAULT_ACCOUNT_ID}:function:credgate-api"


def http_event(method: str, path: str, headers: dict[str, str], body: Any = None, cookies: list[str] | None = None, query: str = "") -> dict[str, Any]:
    raw_body = json.dumps(body) if body is not None else None
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "ANY /v1/{proxy+}",
        "rawPath": path,
        "rawQueryString": query,
        "headers": {"host": "abc123.execute-api.us-east-1.amazonaws.com", "x-forwarded-proto": "https", **{k.lower(): v for k, v in headers.items()}},
        "requestContext": {
            "accountId": DEFAULT_ACCOUNT_ID,
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "203.0.113.9", "userAgent": "pytest"},
            "requestId": "rid",
            "routeKey": "ANY /v1/{proxy+}",
            "stage": "$default",
            "timeEpoch": 0,
        },
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    if raw_body is not None:
        event["body"] = raw_body
        event["headers"]["content-type"] = "application/json"
    return event


def authorizer_event(event: dict[str, Any]) -> dict[str, Any]:
    return {**event, "type": "REQUEST", "routeArn": f"arn:aws:execute-api:{AWS_REGION}:{DEFAULT_ACCOUNT_ID}:abc123/$default/ANY/v1", "identitySource": []}


@pytest.fixture
def cloud(monkeypatch: pytest.MonkeyPatch, mocked_aws: MockedAws) -> dict[str, Any]:
    table = mocked_aws.new_table()
    mocked_aws.ses.verify_email_identity(EmailAddress=SENDER)
    env = {
        "CREDGATE_TABLE_NAME": table,
        "CREDGATE_KMS_KEY_ID": mocked_aws.key_id,
        "CREDGATE_API_URL": API_URL,
        "CREDGATE_APP_URL": API_URL,
        "CREDGATE_MAIL_FROM": SENDER,
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    authorizer = importlib.reload(importlib.import_module("credgate_authorizer.handler"))
    api = importlib.reload(importlib.import_module("credgate_api.handler"))
    core = Core(
        DynamoItemStore(mocked_aws.dynamodb, table),
        KmsKeyRing(mocked_aws.kms, mocked_aws.key_id),
        SesMailer(mocked_aws.ses, SENDER),
        SystemClock(),
        CoreSettings(api_url=API_URL, app_url=API_URL),
    )
    return {"authorizer": authorizer, "api": api, "core": core}


def invoke(cloud: dict[str, Any], method: str, path: str, headers: dict[str, str] | None = None, body: Any = None, cookies: list[str] | None = None, query: str = "") -> dict[str, Any]:
    """What API Gateway does: run the authorizer, then the API with the authorizer's context."""
    event = http_event(method, path, headers or {}, body, cookies, query)
    decision = cloud["authorizer"].handler(authorizer_event(event), LambdaContext())
    assert decision["isAuthorized"] is True  # API Gateway must never answer with its own body
    event["requestContext"]["authorizer"] = {"lambda": decision["context"]}
    return cloud["api"].handler(event, LambdaContext())


def body_of(response: dict[str, Any]) -> Any:
    raw = response["body"]
    if response.get("isBase64Encoded"):
        raw = base64.b64decode(raw)
    return json.loads(raw) if raw else None


def test_missing_credential_gets_the_spec_envelope_not_api_gateways_body(cloud):
    response = invoke(cloud, "GET", "/v1/agents")
    assert response["statusCode"] == 401
    assert body_of(response) == envelope("Invalid API key or token.", "authentication_error")


def test_health_is_public(cloud):
    response = invoke(cloud, "GET", "/v1/health")
    assert response["statusCode"] == 200
    assert body_of(response) == {"status": "ok"}


def test_project_key_creates_and_lists_secrets_on_dynamodb_and_kms(cloud):
    tenant = make_tenant(cloud["core"], "owner@lambda.test")
    headers = {"Authorization": f"Bearer {tenant.project_key}"}
    created = invoke(
        cloud,
        "POST",
        "/v1/secrets",
        headers,
        {"name": "stripe", "type": "generic", "value": "sk_live_lambda_0123456789", "hostPattern": "api.stripe.com", "injectionConfig": {"headerName": "Authorization", "valueFormat": "Bearer {value}"}},
    )
    assert created["statusCode"] == 201, created
    assert "sk_live_lambda_0123456789" not in created["body"]
    listed = invoke(cloud, "GET", "/v1/secrets", headers)
    assert [secret["name"] for secret in body_of(listed)] == ["stripe"]
    stored = cloud["core"].store.get(schema.owned_item(schema.project(tenant.project_id).pk, "SECRET", body_of(created)["id"]))
    assert stored["valueCiphertext"].startswith("cgv1:")


def test_org_key_without_project_header_is_rejected(cloud):
    tenant = make_tenant(cloud["core"], "owner@lambda.test")
    response = invoke(cloud, "GET", "/v1/agents", {"Authorization": f"Bearer {tenant.org_key}"})
    assert response["statusCode"] == 401
    assert body_of(response) == envelope("Invalid API key or token.", "authentication_error")
    ok = invoke(cloud, "GET", "/v1/agents", {"Authorization": f"Bearer {tenant.org_key}", "X-Project-Id": tenant.project_id})
    assert ok["statusCode"] == 200


def test_member_role_is_refused_on_org_routes_with_the_spec_message(cloud):
    tenant = make_tenant(cloud["core"], "owner@lambda.test")
    invited = invoke(cloud, "POST", "/v1/team/invitations", {"Authorization": f"Bearer {tenant.org_key}"}, {"email": "member@lambda.test", "role": "member"})
    assert invited["statusCode"] == 201, invited
    cookie = _open_latest_link(cloud, "member@lambda.test")
    response = invoke(cloud, "GET", "/v1/org/settings", cookies=[cookie])
    assert response["statusCode"] == 403
    assert body_of(response) == envelope("Insufficient permissions", "permission_error")


def _open_latest_link(cloud: dict[str, Any], email: str) -> str:
    """Read the link SES sent, open it through API Gateway, return the session cookie it set."""
    sent = ses_backends[DEFAULT_ACCOUNT_ID][AWS_REGION].sent_messages
    message = next(m for m in reversed(sent) if email in m.destinations["ToAddresses"])
    link = next(word for word in message.body.split() if "/v1/auth/callback?token=" in word)
    parts = urlsplit(link)
    response = invoke(cloud, "GET", parts.path, query=parts.query)
    assert response["statusCode"] == 303, response
    assert parse_qs(parts.query)["token"]
    (cookie,) = response["cookies"]
    assert "HttpOnly" in cookie and "Secure" in cookie and "SameSite=lax" in cookie
    return cookie.split(";")[0]


def test_email_link_sign_in_through_api_gateway_sets_a_secure_session(cloud):
    sent = invoke(cloud, "POST", "/v1/auth/email-link", body={"email": "new.person@lambda.test"})
    assert sent["statusCode"] == 202
    cookie = _open_latest_link(cloud, "new.person@lambda.test")
    me = invoke(cloud, "GET", "/v1/user", cookies=[cookie])
    assert me["statusCode"] == 200
    assert body_of(me)["email"] == "new.person@lambda.test"


def test_store_failure_in_the_authorizer_becomes_a_retryable_500_envelope(cloud, monkeypatch):
    tenant = make_tenant(cloud["core"], "owner@lambda.test")
    monkeypatch.setenv("CREDGATE_TABLE_NAME", "no-such-table")
    authorizer = importlib.reload(cloud["authorizer"])
    cloud = {**cloud, "authorizer": authorizer}
    response = invoke(cloud, "GET", "/v1/agents", {"Authorization": f"Bearer {tenant.project_key}"})
    assert response["statusCode"] == 500
    assert body_of(response)["error"]["type"] == "api_error"
