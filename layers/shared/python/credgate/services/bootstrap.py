"""First start of a self-hosted install: the owner, their organization, project, agent and keys."""
from __future__ import annotations

from dataclasses import dataclass

from credgate.domain.enums import Role
from credgate.services import accounts, credentials
from credgate.services.agents import agent_token
from credgate.services.core import Core, CredentialKind, Principal
from credgate.services.records import key_item, require
from credgate.store import schema
from credgate.store.ops import Absent, Key, Put

_MARKER = Key("LOCAL", "BOOTSTRAP")


@dataclass(frozen=True)
class Bootstrap:
    email: str
    user_id: str
    organization_id: str
    project_id: str
    project_api_key: str
    org_api_key: str
    agent_id: str
    agent_token: str


def _org_key_context(org_id: str) -> dict[str, str]:
    return {"organizationId": org_id, "purpose": "bootstrap-org-key"}


def ensure_local_install(core: Core, owner_email: str) -> Bootstrap:
    """Create the local owner's tenancy once; later starts read it back (keys from their encrypted copies)."""
    marker = core.store.get(_MARKER)
    if marker is None:
        user = accounts.ensure_user(core, owner_email, name="Owner")
        created = accounts.create_organization(core, "Local organization", user["id"])
        org_id = created.organization["id"]
        org_key, writes = accounts.issue_organization_key(core, org_id)
        marker = key_item(
            _MARKER,
            userId=user["id"],
            organizationId=org_id,
            projectId=created.project.project["id"],
            orgKeyCiphertext=credentials.seal(core, org_key, _org_key_context(org_id)),
        )
        core.store.write(*writes, Put(marker, Absent()))
    org_id, project_id, user_id = marker["organizationId"], marker["projectId"], marker["userId"]
    owner = Principal(CredentialKind.SESSION, org_id, project_id, user_id, Role.OWNER)
    # The project's current default agent: the owner may have replaced the first one.
    default = require(core.store, schema.default_agent(project_id), "Default agent not found")
    agent = require(core.store, schema.agent(project_id, default["agentId"]), "Default agent not found")
    user = require(core.store, schema.user(user_id), "User not found")
    return Bootstrap(
        email=user["email"],
        user_id=user_id,
        organization_id=org_id,
        project_id=project_id,
        project_api_key=accounts.project_api_key(core, owner),
        org_api_key=credentials.unseal(core, marker["orgKeyCiphertext"], _org_key_context(org_id)),
        agent_id=agent["id"],
        agent_token=agent_token(core, owner, agent),
    )
