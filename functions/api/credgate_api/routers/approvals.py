from __future__ import annotations

from fastapi import APIRouter, Depends

from credgate.domain.models import Approval, ApprovalDecision
from credgate.services import approvals
from credgate.services.core import Core, Principal
from credgate_api.deps import get_core, get_principal


def _router(prefix: str, tag: str, whole_organization: bool) -> APIRouter:
    router = APIRouter(prefix=prefix, tags=[tag])

    @router.get("", response_model=list[Approval], summary="Requests the gateway is holding for a decision")
    def list_pending(core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> list[Approval]:
        return approvals.list_pending(core, principal, whole_organization=whole_organization)

    @router.post("/{approval_id}/decision", response_model=Approval, summary="Approve or deny a held request")
    def decide(
        approval_id: str, body: ApprovalDecision, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)
    ) -> Approval:
        return approvals.decide(core, principal, approval_id, body.decision, whole_organization=whole_organization)

    return router


project_router = _router("/approvals", "Approvals", whole_organization=False)
organization_router = _router("/org/approvals", "Organization Approvals", whole_organization=True)
