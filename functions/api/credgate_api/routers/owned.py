"""List/create/get/patch/delete routes for a resource owned by a project or an organization.

No `from __future__ import annotations` here: the body types are closure variables FastAPI must see.
"""
from dataclasses import dataclass
from typing import Any, Callable

from fastapi import APIRouter, Depends, Response

from credgate.services.core import Core, Principal
from credgate.services.owners import Owner
from credgate_api.deps import get_core, get_principal


@dataclass(frozen=True)
class OwnedResource:
    """The service functions behind one resource's routes."""

    view: type
    create_body: type
    patch_body: type
    list: Callable[[Core, Principal], list[Any]]
    create: Callable[[Core, Owner, Any], Any]
    get: Callable[[Core, Owner, str], Any]
    update: Callable[[Core, Owner, str, Any], Any]
    delete: Callable[[Core, Owner, str], None]


def owned_router(prefix: str, tag: str, owner_of: Callable[[Principal], Owner], resource: OwnedResource) -> APIRouter:
    router = APIRouter(prefix=prefix, tags=[tag])
    view, create_body, patch_body = resource.view, resource.create_body, resource.patch_body

    @router.get("", response_model=list[view])  # type: ignore[valid-type]
    def list_items(core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> list[Any]:
        return resource.list(core, principal)

    @router.post("", response_model=view, status_code=201)
    def create_item(
        body: create_body,  # type: ignore[valid-type]
        core: Core = Depends(get_core),
        principal: Principal = Depends(get_principal),
    ) -> Any:
        return resource.create(core, owner_of(principal), body)

    @router.get("/{item_id}", response_model=view)
    def get_item(item_id: str, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> Any:
        return resource.get(core, owner_of(principal), item_id)

    @router.patch("/{item_id}", response_model=view)
    def patch_item(
        item_id: str,
        body: patch_body,  # type: ignore[valid-type]
        core: Core = Depends(get_core),
        principal: Principal = Depends(get_principal),
    ) -> Any:
        return resource.update(core, owner_of(principal), item_id, body)

    @router.delete("/{item_id}", status_code=204)
    def delete_item(item_id: str, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> Response:
        resource.delete(core, owner_of(principal), item_id)
        return Response(status_code=204)

    return router
