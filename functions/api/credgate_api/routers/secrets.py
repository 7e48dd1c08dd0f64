from __future__ import annotations

from credgate.domain.models import OrgSecretCreate, Secret, SecretCreate, SecretPatch
from credgate.services import secrets
from credgate.services.owners import organization_owner, project_owner
from credgate_api.routers.owned import OwnedResource, owned_router


def _resource(create_body: type, lister) -> OwnedResource:  # type: ignore[no-untyped-def]
    return OwnedResource(
        view=Secret,
        create_body=create_body,
        patch_body=SecretPatch,
        list=lister,
        create=secrets.create_secret,
        get=secrets.get_secret,
        update=secrets.update_secret,
        delete=secrets.delete_secret,
    )


project_router = owned_router("/secrets", "Secrets", project_owner, _resource(SecretCreate, secrets.list_secrets))
organization_router = owned_router(
    "/org/secrets", "Organization Secrets", organization_owner, _resource(OrgSecretCreate, secrets.list_organization_secrets)
)
