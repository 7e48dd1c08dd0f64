from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from credgate.domain.models import Agent, AgentCreate, AgentCreated, AgentPatch, AgentSecrets, AgentToken, GranularAccessEntry
from credgate.services import agents
from credgate.services.core import Core, Principal
from credgate_api.deps import get_core, get_principal

router = APIRouter(tags=["Agents"])


@router.get("/agents", response_model=list[Agent])
def list_agents(core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> list[Agent]:
    return agents.list_agents(core, principal)


@router.post("/agents", response_model=AgentCreated, status_code=201, summary="Create an agent; the token is shown once")
def create_agent(body: AgentCreate, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> AgentCreated:
    return agents.create_agent(core, principal, body)


@router.get("/agents/granular-access", response_model=list[GranularAccessEntry])
def granular_access(core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> list[GranularAccessEntry]:
    return agents.granular_access(core, principal)


@router.get("/agents/{agent_id}", response_model=Agent)
def get_agent(agent_id: str, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> Agent:
    return agents.get_agent(core, principal, agent_id)


@router.patch("/agents/{agent_id}", response_model=Agent)
def patch_agent(
    agent_id: str, body: AgentPatch, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)
) -> Agent:
    return agents.update_agent(core, principal, agent_id, body.changes())


@router.delete("/agents/{agent_id}", status_code=204)
def delete_agent(agent_id: str, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> Response:
    agents.delete_agent(core, principal, agent_id)
    return Response(status_code=204)


@router.post("/agents/{agent_id}/set-default", response_model=Agent)
def set_default(agent_id: str, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> Agent:
    return agents.set_default_agent(core, principal, agent_id)


@router.post("/agents/{agent_id}/regenerate-token", response_model=AgentToken)
def regenerate_token(agent_id: str, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)) -> AgentToken:
    return agents.regenerate_token(core, principal, agent_id)


@router.put("/agents/{agent_id}/secrets", response_model=Agent, summary="Selective mode: the agent gets only these secrets")
def assign_secrets(
    agent_id: str, body: AgentSecrets, core: Core = Depends(get_core), principal: Principal = Depends(get_principal)
) -> Agent:
    return agents.assign_secrets(core, principal, agent_id, body.secretIds)
