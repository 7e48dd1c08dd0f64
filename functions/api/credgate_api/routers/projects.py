from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from credgate.domain.models import Project, ProjectCreate, ProjectPatch
from credgate.services import accounts
from credgate.services.core import Core, Principal
from credgate_api.deps import get_core, get_principal

router = APIRouter(prefix="/projects", tags=["Projects"])


@router.get("", response_model=list[Project])
def list_projects(core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> list[Project]:
    return accounts.list_projects(core, principal)


@router.post("", response_model=Project, status_code=201, summary="Create a project (with its default agent)")
def create_project(body: ProjectCreate, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> Project:
    return accounts.create_project(core, principal, body.name)


@router.get("/{project_id}", response_model=Project)
def get_project(project_id: str, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> Project:
    return accounts.get_project(core, principal, project_id)


@router.patch("/{project_id}", response_model=Project)
def patch_project(
    project_id: str, body: ProjectPatch, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)
) -> Project:
    return accounts.rename_project(core, principal, project_id, body.name)


@router.delete("/{project_id}", status_code=204, summary="Delete a project and everything in it")
def delete_project(project_id: str, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> Response:
    accounts.delete_project(core, principal, project_id)
    return Response(status_code=204)
