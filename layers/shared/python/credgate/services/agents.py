"""Agents: the identities whose tokens route traffic through the gateway."""
from __future__ import annotations

from dataclasses import dataclass

from credgate.domain.models import Agent, AgentCreate, AgentCreated, AgentToken, GranularAccessEntry, SecretMode
from credgate.errors import ConditionFailed, Conflict, NotFound, ValidationFailed
from credgate.keys import KeyKind, key_hash, new_id
from credgate.services import credentials
from credgate.services.core import Core, Principal, config_changed
from credgate.services.records import Item, key_item
from credgate.services.secrets import visible_secret_ids
from credgate.store import schema
from credgate.store.ops import Absent, Check, Delete, Equals, Exists, Put, Update, WriteOp

AGENT_NOT_FOUND = "Agent not found"
DUPLICATE_IDENTIFIER = "An agent with this identifier already exists"


@dataclass(frozen=True)
class NewAgent:
    agent: Item
    token: str
    writes: list[WriteOp]


def new_agent_writes(
    core: Core, org_id: str, project_id: str, name: str, identifier: str, secret_mode: SecretMode = SecretMode.ALL
) -> NewAgent:
    """An agent, its identifier reservation and its token, as writes for one transaction."""
    agent_id = new_id("agt")
    token, issue = credentials.issue(
        core, KeyKind.AGENT, organizationId=org_id, projectId=project_id, agentId=agent_id
    )
    agent = key_item(
        schema.agent(project_id, agent_id),
        id=agent_id,
        organizationId=org_id,
        projectId=project_id,
        name=name,
        identifier=identifier,
        secretMode=secret_mode.value,
        secretIds=[],
        tokenHash=key_hash(token),
        tokenCiphertext=credentials.seal(core, token, credentials.agent_token_context(org_id, project_id, agent_id)),
        createdAt=core.now_iso(),
    )
    writes: list[WriteOp] = [
        Put(agent, Absent()),
        Put(key_item(schema.agent_identifier(project_id, identifier), agentId=agent_id), Absent()),
        issue,
    ]
    return NewAgent(agent, token, writes)


def agent_view(item: Item, default_agent_id: str | None, existing_secret_ids: set[str]) -> Agent:
    return Agent(
        id=item["id"],
        name=item["name"],
        identifier=item["identifier"],
        isDefault=item["id"] == default_agent_id,
        secretMode=item["secretMode"],
        # A deleted secret's id may linger in the assignment; it no longer means anything.
        secretIds=[secret_id for secret_id in item["secretIds"] if secret_id in existing_secret_ids],
        createdAt=item["createdAt"],
    )


def _default_agent_id(core: Core, project_id: str) -> str | None:
    pointer = core.store.get(schema.default_agent(project_id))
    return pointer["agentId"] if pointer else None


def _agent(core: Core, project_id: str, agent_id: str) -> Item:
    item = core.store.get(schema.agent(project_id, agent_id))
    if item is None:
        raise NotFound(AGENT_NOT_FOUND)
    return item


def list_agents(core: Core, principal: Principal) -> list[Agent]:
    project_id = principal.project()
    items = core.store.query(schema.agent(project_id, "").pk, "AGENT#")
    default = _default_agent_id(core, project_id)
    existing = visible_secret_ids(core, principal)
    return [agent_view(item, default, existing) for item in items]


def get_agent(core: Core, principal: Principal, agent_id: str) -> Agent:
    project_id = principal.project()
    item = _agent(core, project_id, agent_id)
    return agent_view(item, _default_agent_id(core, project_id), visible_secret_ids(core, principal))


def default_agent(core: Core, principal: Principal) -> Item:
    project_id = principal.project()
    default = _default_agent_id(core, project_id)
    if default is None:
        raise NotFound(AGENT_NOT_FOUND)
    return _agent(core, project_id, default)


def find_agent_by_identifier(core: Core, principal: Principal, identifier: str) -> Item:
    project_id = principal.project()
    pointer = core.store.get(schema.agent_identifier(project_id, identifier))
    if pointer is None:
        raise NotFound(AGENT_NOT_FOUND)
    return _agent(core, project_id, pointer["agentId"])


def create_agent(core: Core, principal: Principal, request: AgentCreate) -> AgentCreated:
    project_id, org_id = principal.project(), principal.organization()
    new = new_agent_writes(core, org_id, project_id, request.name, request.identifier, request.secretMode)
    try:
        core.store.write(*new.writes, *config_changed(core, org_id))
    except ConditionFailed as failure:
        if failure.index == 1:
            raise Conflict(DUPLICATE_IDENTIFIER) from None
        raise
    view = agent_view(new.agent, _default_agent_id(core, project_id), set())
    return AgentCreated(**view.model_dump(), accessToken=new.token)


def update_agent(core: Core, principal: Principal, agent_id: str, changes: dict) -> Agent:
    project_id, org_id = principal.project(), principal.organization()
    agent = _agent(core, project_id, agent_id)
    writes: list[WriteOp] = []
    new_identifier = changes.get("identifier")
    if new_identifier is not None and new_identifier != agent["identifier"]:
        writes += [
            Put(key_item(schema.agent_identifier(project_id, new_identifier), agentId=agent_id), Absent()),
            Delete(schema.agent_identifier(project_id, agent["identifier"]), Equals("agentId", agent_id)),
        ]
    fields = {name: getattr(value, "value", value) for name, value in changes.items()}
    writes.append(Update(schema.agent(project_id, agent_id), set=fields, condition=Equals("identifier", agent["identifier"])))
    try:
        core.store.write(*writes, *config_changed(core, org_id))
    except ConditionFailed as failure:
        if new_identifier is not None and failure.index == 0:
            raise Conflict(DUPLICATE_IDENTIFIER) from None
        raise
    return get_agent(core, principal, agent_id)


def delete_agent(core: Core, principal: Principal, agent_id: str) -> None:
    project_id, org_id = principal.project(), principal.organization()
    agent = _agent(core, project_id, agent_id)
    default = _default_agent_id(core, project_id)
    if default == agent_id:
        raise ValidationFailed("Cannot delete the default agent")
    try:
        core.store.write(
            Delete(schema.agent(project_id, agent_id), Exists()),
            Delete(schema.agent_identifier(project_id, agent["identifier"])),
            credentials.revoke(agent["tokenHash"]),
            # The default may not have moved to this agent since we looked.
            Check(schema.default_agent(project_id), Equals("agentId", default)),
            *config_changed(core, org_id),
        )
    except ConditionFailed as failure:
        if failure.index == 3:
            raise ValidationFailed("Cannot delete the default agent") from None
        raise NotFound(AGENT_NOT_FOUND) from None


def set_default_agent(core: Core, principal: Principal, agent_id: str) -> Agent:
    project_id, org_id = principal.project(), principal.organization()
    _agent(core, project_id, agent_id)
    default = _default_agent_id(core, project_id)
    if default == agent_id:
        raise ValidationFailed("Agent is already the default")
    try:
        core.store.write(
            Check(schema.agent(project_id, agent_id), Exists()),
            Update(schema.default_agent(project_id), set={"agentId": agent_id}, condition=Equals("agentId", default)),
            *config_changed(core, org_id),
        )
    except ConditionFailed as failure:
        if failure.index == 0:
            raise NotFound(AGENT_NOT_FOUND) from None
        raise Conflict("The default agent changed while this request ran; retry") from None
    return get_agent(core, principal, agent_id)


def regenerate_token(core: Core, principal: Principal, agent_id: str) -> AgentToken:
    """A new token; the old one stops working at once (the gateway learns of it within seconds)."""
    project_id, org_id = principal.project(), principal.organization()
    agent = _agent(core, project_id, agent_id)
    token, issue = credentials.issue(core, KeyKind.AGENT, organizationId=org_id, projectId=project_id, agentId=agent_id)
    sealed = credentials.seal(core, token, credentials.agent_token_context(org_id, project_id, agent_id))
    try:
        core.store.write(
            credentials.revoke(agent["tokenHash"]),
            issue,
            Update(
                schema.agent(project_id, agent_id),
                set={"tokenHash": key_hash(token), "tokenCiphertext": sealed},
                condition=Equals("tokenHash", agent["tokenHash"]),
            ),
            *config_changed(core, org_id),
        )
    except ConditionFailed:
        raise Conflict("The token was regenerated by another request; retry") from None
    return AgentToken(id=agent_id, accessToken=token)


def agent_token(core: Core, principal: Principal, agent: Item) -> str:
    """The agent's current token, from its encrypted copy (for the owner's container config)."""
    context = credentials.agent_token_context(principal.organization(), principal.project(), agent["id"])
    return credentials.unseal(core, agent["tokenCiphertext"], context)


def assign_secrets(core: Core, principal: Principal, agent_id: str, secret_ids: list[str]) -> Agent:
    """Selective mode: the agent gets only these secrets (project or organization secrets of its project)."""
    project_id, org_id = principal.project(), principal.organization()
    _agent(core, project_id, agent_id)
    wanted = list(dict.fromkeys(secret_ids))
    if not set(wanted) <= visible_secret_ids(core, principal):
        raise ValidationFailed("One or more secrets not found")
    try:
        core.store.write(
            Update(
                schema.agent(project_id, agent_id),
                set={"secretIds": wanted, "secretMode": SecretMode.SELECTIVE.value},
            ),
            *config_changed(core, org_id),
        )
    except ConditionFailed:
        raise NotFound(AGENT_NOT_FOUND) from None
    return get_agent(core, principal, agent_id)


def granular_access(core: Core, principal: Principal) -> list[GranularAccessEntry]:
    """Agent-to-connection assignments that carry a non-empty policy; unrestricted ones are omitted."""
    project_id = principal.project()
    partition = schema.agent(project_id, "").pk
    grants = [grant for grant in core.store.query(partition, "GRANT#") if grant.get("policy")]
    if not grants:
        return []
    agents = {item["id"]: item for item in core.store.query(partition, "AGENT#")}
    connections = {item["id"]: item for item in core.store.query(partition, "CONNECTION#")}
    entries = []
    for grant in grants:
        agent, connection = agents.get(grant["agentId"]), connections.get(grant["connectionId"])
        if agent and connection:
            entries.append(
                GranularAccessEntry(
                    agentId=agent["id"],
                    agentName=agent["name"],
                    connectionId=connection["id"],
                    provider=connection["provider"],
                    connectionLabel=connection["label"],
                    policy=grant["policy"],
                )
            )
    return entries
