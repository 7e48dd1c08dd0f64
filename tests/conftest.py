"""Fixtures shared by every test layer: a Core on either store, the API over HTTP, tenants."""
from __future__ import annotations

import functools
import os
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterator

import boto3
import moto.kms.models
import pytest
from fastapi.testclient import TestClient
from moto import mock_aws

from credgate.domain.enums import Role
from credgate.keyring.kms import KmsKeyRing
from credgate.keyring.local import LocalKeyRing
from credgate.services import accounts
from credgate.services.agent_setup import ca_certificate_from_store
from credgate.services.core import Core, CredentialKind, Principal
from credgate.settings import CoreSettings
from credgate.store.dynamodb import DynamoItemStore, create_table
from credgate.store.sqlite import SqliteItemStore
from credgate_api.app import create_app
from credgate_api.principals import in_process

AWS_REGION = "us-east-1"


class MovableClock:
    """A clock tests can move forward; the stores read the same time for expiry."""

    def __init__(self) -> None:
        self.moment = datetime.now(timezone.utc)

    def now(self) -> datetime:
        return self.moment

    def time(self) -> float:
        return self.moment.timestamp()

    def advance(self, **delta: float) -> None:
        self.moment += timedelta(**delta)


@dataclass
class Mail:
    to: str
    subject: str
    text: str
    links: list[str]


@dataclass
class RecordingMailer:
    sent: list[Mail] = field(default_factory=list)

    def send(self, to: str, subject: str, text: str, links: list[str]) -> None:
        self.sent.append(Mail(to, subject, text, links))

    def last_link(self, to: str) -> str:
        return next(mail for mail in reversed(self.sent) if mail.to == to).links[0]


FAKE_AWS_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": AWS_REGION,
}


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in FAKE_AWS_ENVIRONMENT.items():
        monkeypatch.setenv(name, value)


@dataclass(frozen=True)
class MockedAws:
    """One moto world per test process: clients and a KMS key made once (moto's key generation is slow)."""

    session: Any
    dynamodb: Any
    kms: Any
    ses: Any
    key_id: str

    def new_table(self) -> str:
        name = f"credgate-{uuid.uuid4().hex[:12]}"
        create_table(self.dynamodb, name)
        return name


# moto makes a fresh RSA key pair for every KMS key, symmetric ones too (~0.1 s each); one per key spec will do.
_reused_private_key = functools.cache(moto.kms.models.generate_private_key)


@pytest.fixture(scope="session")
def mocked_aws() -> Iterator[MockedAws]:
    """moto for the whole test process: tests isolate themselves with their own tables and keys."""
    saved = {name: os.environ.get(name) for name in (*FAKE_AWS_ENVIRONMENT, "AWS_PROFILE", "AWS_ENDPOINT_URL")}
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL"):
        os.environ.pop(name, None)
    os.environ.update(FAKE_AWS_ENVIRONMENT)
    original_key_generator = moto.kms.models.generate_private_key
    moto.kms.models.generate_private_key = _reused_private_key
    session = boto3.session.Session(region_name=AWS_REGION)
    with mock_aws():
        kms = session.client("kms")
        yield MockedAws(
            session=session,
            dynamodb=session.client("dynamodb"),
            kms=kms,
            ses=session.client("ses"),
            key_id=kms.create_key()["KeyMetadata"]["KeyId"],
        )
    moto.kms.models.generate_private_key = original_key_generator
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock()


@pytest.fixture
def mailer() -> RecordingMailer:
    return RecordingMailer()


@pytest.fixture(params=["sqlite", "dynamodb"])
def core(request: pytest.FixtureRequest, tmp_path: Any, clock: MovableClock, mailer: RecordingMailer) -> Core:
    """The same services on SQLite + local key file, and on DynamoDB + KMS (moto; a fresh table per test)."""
    settings = CoreSettings(api_url="http://testserver", app_url="http://testserver")
    if request.param == "sqlite":
        return Core(SqliteItemStore(tmp_path / "db.sqlite", now=clock.time), LocalKeyRing.from_file(tmp_path / "master.key"), mailer, clock, settings)
    aws: MockedAws = request.getfixturevalue("mocked_aws")
    store = DynamoItemStore(aws.dynamodb, aws.new_table(), now=clock.time)
    return Core(store, KmsKeyRing(aws.kms, aws.key_id), mailer, clock, settings)


@pytest.fixture
def api(core: Core) -> Iterator[TestClient]:
    app = create_app(core, in_process(core), ca_certificate=lambda: ca_certificate_from_store(core.store))
    with TestClient(app) as client:
        yield client


@dataclass(frozen=True)
class Tenant:
    """An organization with its owner, default project and agent, and the keys to act on them."""

    user_id: str
    email: str
    organization_id: str
    project_id: str
    agent_id: str
    agent_token: str
    project_key: str
    org_key: str

    @property
    def project_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.project_key}"}

    @property
    def org_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.org_key}"}

    def org_headers_for(self, project_id: str) -> dict[str, str]:
        return {**self.org_headers, "X-Project-Id": project_id}


def make_tenant(core: Core, email: str) -> Tenant:
    user = accounts.ensure_user(core, email)
    created = accounts.create_organization(core, f"{email}'s organization", user["id"])
    org_id, project_id = created.organization["id"], created.project.project["id"]
    org_key, writes = accounts.issue_organization_key(core, org_id)
    core.store.write(*writes)
    owner = Principal(CredentialKind.SESSION, org_id, project_id, user["id"], Role.OWNER)
    return Tenant(
        user_id=user["id"],
        email=email,
        organization_id=org_id,
        project_id=project_id,
        agent_id=created.project.agent["id"],
        agent_token=created.project.agent_token,
        project_key=accounts.project_api_key(core, owner),
        org_key=org_key,
    )


@pytest.fixture
def tenant(core: Core) -> Tenant:
    return make_tenant(core, "owner@alpha.test")


@pytest.fixture
def other_tenant(core: Core) -> Tenant:
    return make_tenant(core, "owner@beta.test")


def sign_in(api: TestClient, mailer: RecordingMailer, email: str) -> None:
    """Sign in through the email link; the client keeps the session cookie."""
    response = api.post("/v1/auth/email-link", json={"email": email})
    assert response.status_code == 202, response.text
    link = mailer.last_link(email)
    callback = api.get(link.removeprefix("http://testserver"), follow_redirects=False)
    assert callback.status_code == 303, callback.text


def envelope(message: str, error_type: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type}}
