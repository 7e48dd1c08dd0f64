"""Secrets (project) and Organization Secrets: the same routes over two owners.

No `from __future__ import annotations` here: the body type is a closure variable FastAPI must see.
"""

from typing import Callable

from fastapi import APIRouter, Depends, Response

from credgate.domain.models import OrgSecretCreate, Secret, SecretCreate, SecretPatch
from credgate.services import secrets
from credgate.services.core import Core, Principal
from credgate.services.secrets import SecretOwner
from credgate_api.deps import get_core, get_principal


def _router(
    prefix: str,
    tag: str,
    owner_of: Callable[[Principal], SecretOwner],
    create_model: type[SecretCreate] | type[OrgSecretCreate],
    lister: Callable[[Core, Principal], list[Secret]],
) -> APIRouter:
    router = APIRouter(prefix=prefix, tags=[tag])

    @router.get("", response_model=list[Secret], summary="List secrets (never their values)")
    def list_secrets(core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> list[Secret]:
        return lister(core, principal)

    @router.post("", response_model=Secret, status_code=201, summary="Create a secret; the value is write-only")
    def create_secret(
        body: create_model,  # type: ignore[valid-type]
        core: Core = Depends(get_core),
        principal: Principal = Depends(get_principal),
    ) -> Secret:
        return secrets.create_secret(core, owner_of(principal), body)

    @router.get("/{secret_id}", response_model=Secret)
    def get_secret(secret_id: str, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> Secret:
        return secrets.get_secret(core, owner_of(principal), secret_id)

    @router.patch("/{secret_id}", response_model=Secret)
    def patch_secret(
        secret_id: str, body: SecretPatch, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)
    ) -> Secret:
        return secrets.update_secret(core, owner_of(principal), secret_id, body)

    @router.delete("/{secret_id}", status_code=204)
    def delete_secret(secret_id: str, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> Response:
        secrets.delete_secret(core, owner_of(principal), secret_id)
        return Response(status_code=204)

    return router


project_router = _router("/secrets", "Secrets", secrets.project_owner, SecretCreate, secrets.list_secrets)
organization_router = _router(
    "/org/secrets", "Organization Secrets", secrets.organization_owner, OrgSecretCreate, secrets.list_organization_secrets
)
