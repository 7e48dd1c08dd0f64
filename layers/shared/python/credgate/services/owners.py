"""The level a secret or rule belongs to: where its items live and what its encryption context says."""
from __future__ import annotations

from dataclasses import dataclass

from credgate.domain.enums import Scope
from credgate.services.core import Principal
from credgate.store import schema
from credgate.store.ops import Key


@dataclass(frozen=True)
class Owner:
    scope: Scope
    partition: str
    context: dict[str, str]
    organization_id: str

    def item_key(self, kind: str, item_id: str) -> Key:
        return schema.owned_item(self.partition, kind, item_id)

    def encryption_context(self, secret_id: str) -> dict[str, str]:
        return {**self.context, "secretId": secret_id}


def project_owner(principal: Principal) -> Owner:
    org_id, project_id = principal.organization(), principal.project()
    return Owner(Scope.PROJECT, schema.project(project_id).pk, {"organizationId": org_id, "projectId": project_id}, org_id)


def organization_owner(principal: Principal) -> Owner:
    org_id = principal.organization()
    return Owner(Scope.ORGANIZATION, schema.organization(org_id).pk, {"organizationId": org_id}, org_id)
