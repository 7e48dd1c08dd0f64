from __future__ import annotations

from fastapi import APIRouter, Depends

from credgate.domain.models import OrgSettings, OrgSettingsPatch
from credgate.services import accounts
from credgate.services.core import Core, Principal
from credgate_api.deps import get_core, get_principal

router = APIRouter(prefix="/org/settings", tags=["Organization Settings"])


@router.get("", response_model=OrgSettings)
def get_settings(core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> OrgSettings:
    return OrgSettings(policyMode=accounts.get_policy_mode(core, principal))


@router.patch("", response_model=OrgSettings, summary="Set the policy mode: allow (default) or deny")
def patch_settings(
    body: OrgSettingsPatch, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)
) -> OrgSettings:
    return OrgSettings(policyMode=accounts.set_policy_mode(core, principal, body.policyMode))
