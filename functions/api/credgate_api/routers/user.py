from __future__ import annotations

from fastapi import APIRouter, Depends

from credgate.domain.models import ApiKey, User, UserPatch
from credgate.services import accounts
from credgate.services.core import Core, Principal
from credgate_api.deps import get_core, get_principal

router = APIRouter(tags=["User"])


@router.get("/user", response_model=User)
def get_user(core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> User:
    return accounts.get_user(core, principal)


@router.patch("/user", response_model=User)
def patch_user(body: UserPatch, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> User:
    return accounts.rename_user(core, principal, body.name)


@router.get("/user/api-key", response_model=ApiKey, summary="The caller's project key for the current project")
def get_api_key(core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> ApiKey:
    return ApiKey(apiKey=accounts.project_api_key(core, principal))


@router.post("/user/api-key/regenerate", response_model=ApiKey, summary="Replace the project key; the old one stops working")
def regenerate_api_key(core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> ApiKey:
    return ApiKey(apiKey=accounts.regenerate_project_api_key(core, principal))
