"""Fixtures for the HTTP-level tests: the tenant's owner and a member, each signed in through the browser flow."""
from __future__ import annotations

from typing import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.conftest import RecordingMailer, Tenant
from tests.integration.api.helpers import Person, join, signed_in


@pytest.fixture
def owner(api: TestClient, mailer: RecordingMailer, tenant: Tenant) -> Iterator[Person]:
    """The tenant's owner, signed in through the email link."""
    person = signed_in(api, mailer, tenant.email)
    yield person
    person.client.close()


@pytest.fixture
def member(api: TestClient, mailer: RecordingMailer, tenant: Tenant) -> Iterator[Person]:
    """A `member`-role user of the tenant's organization, signed in by accepting the invitation."""
    person = join(api, mailer, tenant, "member@alpha.test", "member")
    yield person
    person.client.close()
