from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from credgate.domain.models import Invitation, InvitationCreate, Member, MemberRolePatch
from credgate.services import team
from credgate.services.core import Core, Principal
from credgate_api.deps import get_core, get_principal

router = APIRouter(prefix="/team", tags=["Team"])


@router.get("/members", response_model=list[Member])
def list_members(core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> list[Member]:
    return team.list_members(core, principal)


@router.patch("/members/{user_id}", response_model=Member, summary="Change a member's role (not the owner's)")
def change_role(
    user_id: str, body: MemberRolePatch, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)
) -> Member:
    return team.change_role(core, principal, user_id, body.role)


@router.delete("/members/{user_id}", status_code=204, summary="Remove a member (not the owner)")
def remove_member(user_id: str, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> Response:
    team.remove_member(core, principal, user_id)
    return Response(status_code=204)


@router.get("/invitations", response_model=list[Invitation])
def list_invitations(core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> list[Invitation]:
    return team.list_invitations(core, principal)


@router.post("/invitations", response_model=Invitation, status_code=201, summary="Invite by email link")
def invite(body: InvitationCreate, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> Invitation:
    return team.invite(core, principal, body)


@router.delete("/invitations/{invitation_id}", status_code=204)
def revoke_invitation(
    invitation_id: str, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)
) -> Response:
    team.revoke_invitation(core, principal, invitation_id)
    return Response(status_code=204)
