from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request, Response

from credgate.domain.models import ContainerConfig
from credgate.errors import DependencyUnavailable
from credgate.services import agent_setup
from credgate.services.core import Core, Principal
from credgate_api.deps import get_core, get_principal

router = APIRouter(tags=["Agent Setup"])


@router.get(
    "/gateway/ca",
    response_class=Response,
    responses={200: {"content": {"application/x-pem-file": {}}}},
    summary="The gateway's CA certificate (PEM): trust it in agent containers",
)
def gateway_ca(request: Request) -> Response:
    pem = request.app.state.ca_certificate()
    if pem is None:
        raise DependencyUnavailable("The gateway has not created its certificate authority yet. Retry shortly.")
    return Response(pem, media_type="application/x-pem-file")


@router.get("/container-config", response_model=ContainerConfig, summary="Environment for an agent container")
def container_config(
    request: Request,
    agent: str | None = Query(default=None, description="agent identifier; the default agent when omitted"),
    core: Core = Depends(get_core),
    principal: Principal = Depends(get_principal),
) -> ContainerConfig:
    return agent_setup.container_config(core, principal, agent, request.app.state.ca_certificate())
