"""The container of ports the services receive, and the caller they act for."""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING

from credgate.clock import iso
from credgate.domain.enums import Role
from credgate.errors import Forbidden, ValidationFailed
from credgate.keys import new_token
from credgate.ports import Clock, ItemStore, KeyRing, Mailer
from credgate.store import schema
from credgate.store.ops import Put

if TYPE_CHECKING:  # settings pull in pydantic, which the authorizer's cold start does without
    from credgate.settings import CoreSettings

GLOBAL_CONFIG_SCOPE = "GLOBAL"


@dataclass(frozen=True)
class Core:
    store: ItemStore
    keyring: KeyRing
    mailer: Mailer
    clock: Clock
    settings: "CoreSettings"

    def now_iso(self) -> str:
        return iso(self.clock.now())


class CredentialKind(str, enum.Enum):
    PROJECT_KEY = "project_key"
    ORGANIZATION_KEY = "organization_key"
    PARTNER_KEY = "partner_key"
    SESSION = "session"


@dataclass(frozen=True)
class Principal:
    """Who is calling and in which tenant context; built only by authenticate()."""

    kind: CredentialKind
    organization_id: str | None = None
    project_id: str | None = None
    user_id: str | None = None
    role: Role | None = None
    partner_id: str | None = None
    credential_hash: str | None = None

    @property
    def is_admin(self) -> bool:
        return self.role in (Role.OWNER, Role.ADMIN)

    def require_admin(self) -> None:
        if not self.is_admin:
            raise Forbidden()

    def project(self) -> str:
        if self.project_id is None:
            raise ValidationFailed("X-Project-Id header is required")
        return self.project_id

    def organization(self) -> str:
        if self.organization_id is None:
            raise Forbidden()
        return self.organization_id

    def user(self) -> str:
        if self.user_id is None:
            raise Forbidden("This endpoint needs a user credential: a project key or a dashboard session")
        return self.user_id


def config_changed(core: Core, scope: str) -> list[Put]:
    """Write ops that tell every gateway task that `scope`'s configuration changed.

    Included in the same transaction as the change itself, so a change is never
    visible in the store without the gateway learning of it.
    """
    version = new_token()
    return [
        Put({**_version_key(scope), "version": version}),
        Put({**_version_key(GLOBAL_CONFIG_SCOPE), "version": version}),
    ]


def _version_key(scope: str) -> dict[str, str]:
    key = schema.config_version(scope)
    return {"pk": key.pk, "sk": key.sk}
