"""Users, organizations and projects: the tenancy skeleton every other service hangs from."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from credgate.domain.models import PolicyMode, Project, Role, User
from credgate.errors import ConditionFailed, NotFound, ValidationFailed
from credgate.keys import KeyKind, key_hash, new_id
from credgate.services import credentials
from credgate.services.agents import new_agent_writes
from credgate.services.core import Core, Principal, config_changed
from credgate.services.records import Item, key_item, require
from credgate.store import schema
from credgate.store.ops import Absent, Check, Delete, Equals, Exists, Key, Put, Update, WriteOp

DEFAULT_AGENT_IDENTIFIER = "default"
DEFAULT_AGENT_NAME = "Default agent"
DEFAULT_PROJECT_NAME = "Default project"
_CASCADE_BATCH = 50
# Projects are tombstoned ("deleting") before their items go, so auth stops accepting them at once.
ACTIVE = Equals("status", "active")


# Users


def user_view(item: Item) -> User:
    return User(id=item["id"], email=item["email"], name=item.get("name"), createdAt=item["createdAt"])


def find_user_by_email(core: Core, email: str) -> Item | None:
    pointer = core.store.get(schema.user_email(email))
    return core.store.get(schema.user(pointer["userId"])) if pointer else None


def ensure_user(core: Core, email: str, name: str | None = None) -> Item:
    """The user with this email, created on first sight (email is unique)."""
    existing = find_user_by_email(core, email)
    if existing:
        return existing
    user = key_item(schema.user(new_id("usr")), email=email, name=name, createdAt=core.now_iso())
    user["id"] = user["pk"].removeprefix("USER#")
    try:
        core.store.write(
            Put(user, Absent()),
            Put(key_item(schema.user_email(email), userId=user["id"]), Absent()),
        )
    except ConditionFailed:
        found = find_user_by_email(core, email)  # another request created it first
        if found is None:
            raise
        return found
    return user


def get_user(core: Core, principal: Principal) -> User:
    return user_view(require(core.store, schema.user(principal.user()), "User not found"))


def rename_user(core: Core, principal: Principal, name: str) -> User:
    key = schema.user(principal.user())
    core.store.write(Update(key, set={"name": name}))
    return get_user(core, principal)


# Organizations and projects


@dataclass(frozen=True)
class NewProject:
    project: Item
    agent: Item
    agent_token: str
    writes: list[WriteOp]


def _project_writes(core: Core, org_id: str, name: str) -> NewProject:
    """A project with its default agent, as writes to commit in one transaction."""
    project_id = new_id("prj")
    now = core.now_iso()
    project = key_item(
        schema.project(project_id), id=project_id, organizationId=org_id, name=name, status="active", createdAt=now
    )
    agent = new_agent_writes(core, org_id, project_id, DEFAULT_AGENT_NAME, DEFAULT_AGENT_IDENTIFIER)
    writes: list[WriteOp] = [
        Put(project, Absent()),
        Put(key_item(schema.organization_project(org_id, project_id), projectId=project_id), Absent()),
        *agent.writes,
        Put(key_item(schema.default_agent(project_id), agentId=agent.agent["id"]), Absent()),
    ]
    return NewProject(project, agent.agent, agent.token, writes)


@dataclass(frozen=True)
class NewOrganization:
    organization: Item
    project: NewProject


def create_organization(
    core: Core, name: str, owner_user_id: str | None, extra: dict[str, Any] | None = None
) -> NewOrganization:
    """An organization with its default project and default agent, written atomically."""
    org_id = new_id("org")
    project = _project_writes(core, org_id, DEFAULT_PROJECT_NAME)
    org = key_item(
        schema.organization(org_id),
        id=org_id,
        name=name,
        createdAt=core.now_iso(),
        policyMode=PolicyMode.ALLOW.value,
        defaultProjectId=project.project["id"],
        ownerUserId=owner_user_id,
        **(extra or {}),
    )
    writes: list[WriteOp] = [Put(org, Absent()), *project.writes]
    if owner_user_id:
        writes += membership_writes(core, org_id, owner_user_id, Role.OWNER)
    core.store.write(*writes, *config_changed(core, org_id))
    return NewOrganization(org, project)


def issue_organization_key(core: Core, org_id: str) -> tuple[str, list[WriteOp]]:
    """An organization key (acts as admin): the lookup item plus the organization's record of it."""
    key, issue = credentials.issue(core, KeyKind.ORGANIZATION, organizationId=org_id)
    record = key_item(schema.organization_key(org_id, new_id("key")), keyHash=key_hash(key), createdAt=core.now_iso())
    return key, [issue, Put(record, Absent())]


def membership_writes(core: Core, org_id: str, user_id: str, role: Role) -> list[WriteOp]:
    now = core.now_iso()
    fields = {"organizationId": org_id, "userId": user_id, "role": role.value, "joinedAt": now}
    return [
        Put(key_item(schema.member(org_id, user_id), **fields), Absent()),
        Put(key_item(schema.membership(user_id, org_id), **fields), Absent()),
    ]


def accept_invitation(core: Core, org_id: str, invitation_id: str, user_id: str) -> None:
    """Join the organization with the invited role; a used, revoked or expired invitation does nothing."""
    invitation = core.store.get(schema.invitation(org_id, invitation_id))
    if invitation is None:
        return
    consume = Delete(schema.invitation(org_id, invitation_id), Exists())
    if core.store.get(schema.member(org_id, user_id)) is not None:
        core.store.write(consume)
        return
    try:
        core.store.write(consume, *membership_writes(core, org_id, user_id, Role(invitation["role"])))
    except ConditionFailed:
        pass  # accepted concurrently, or already a member: either way nothing is left to do


def project_view(item: Item, org: Item) -> Project:
    return Project(
        id=item["id"], name=item["name"], isDefault=item["id"] == org.get("defaultProjectId"), createdAt=item["createdAt"]
    )


def _organization(core: Core, org_id: str) -> Item:
    return require(core.store, schema.organization(org_id), "Organization not found")


def _project(core: Core, org_id: str, project_id: str) -> Item:
    project = core.store.get(schema.project(project_id))
    if project is None or project["status"] != "active" or project["organizationId"] != org_id:
        raise NotFound("Project not found")
    return project


def list_projects(core: Core, principal: Principal) -> list[Project]:
    org_id = principal.organization()
    org = _organization(core, org_id)
    links = core.store.query(schema.organization_project(org_id, "").pk, "PROJECT#")
    projects = core.store.get_many([schema.project(link["projectId"]) for link in links])
    live = sorted((p for p in projects if p["status"] == "active"), key=lambda p: p["id"])
    return [project_view(p, org) for p in live]


def create_project(core: Core, principal: Principal, name: str) -> Project:
    principal.require_admin()
    org_id = principal.organization()
    org = _organization(core, org_id)
    new = _project_writes(core, org_id, name)
    core.store.write(*new.writes, *config_changed(core, org_id))
    return project_view(new.project, org)


def get_project(core: Core, principal: Principal, project_id: str) -> Project:
    org_id = principal.organization()
    return project_view(_project(core, org_id, project_id), _organization(core, org_id))


def rename_project(core: Core, principal: Principal, project_id: str, name: str) -> Project:
    principal.require_admin()
    org_id = principal.organization()
    project = _project(core, org_id, project_id)
    core.store.write(Update(schema.project(project_id), set={"name": name}, condition=ACTIVE))
    return project_view({**project, "name": name}, _organization(core, org_id))


def delete_project(core: Core, principal: Principal, project_id: str) -> None:
    """Tombstone first, then remove the project's items in batches; calling it again resumes."""
    principal.require_admin()
    org_id = principal.organization()
    org = _organization(core, org_id)
    if org.get("defaultProjectId") == project_id:
        raise ValidationFailed("Cannot delete the default project")
    project = core.store.get(schema.project(project_id))
    if project is None or project["organizationId"] != org_id:
        raise NotFound("Project not found")
    if project["status"] == "active":
        core.store.write(Update(schema.project(project_id), set={"status": "deleting"}), *config_changed(core, org_id))
    _remove_project_items(core, org_id, project_id)


def _remove_project_items(core: Core, org_id: str, project_id: str) -> None:
    items = [item for item in core.store.query(schema.project(project_id).pk) if item["sk"] != "META"]
    deletes: list[WriteOp] = []
    for item in items:
        deletes.append(Delete(Key(item["pk"], item["sk"])))
        for hashed in (item.get("tokenHash"), item.get("keyHash")):
            if hashed:
                deletes.append(Delete(schema.credential(hashed)))
    for start in range(0, len(deletes), _CASCADE_BATCH):
        core.store.write(*deletes[start : start + _CASCADE_BATCH])
    # The tombstone goes last, so an interrupted delete can be resumed by calling it again.
    core.store.write(Delete(schema.organization_project(org_id, project_id)), Delete(schema.project(project_id)))


# Organization settings


def get_policy_mode(core: Core, principal: Principal) -> PolicyMode:
    return PolicyMode(_organization(core, principal.organization())["policyMode"])


def set_policy_mode(core: Core, principal: Principal, mode: PolicyMode) -> PolicyMode:
    principal.require_admin()
    org_id = principal.organization()
    core.store.write(Update(schema.organization(org_id), set={"policyMode": mode.value}), *config_changed(core, org_id))
    return mode


# The user's project key


def project_api_key(core: Core, principal: Principal) -> str:
    """The caller's key for the current project, issued on first request; the stored copy is encrypted."""
    user_id, project_id, org_id = principal.user(), principal.project(), principal.organization()
    context = credentials.project_key_context(org_id, project_id, user_id)
    pointer = core.store.get(schema.user_project_key(project_id, user_id))
    if pointer is not None:
        return credentials.unseal(core, pointer["keyCiphertext"], context)
    key, issue = credentials.issue(core, KeyKind.PROJECT, organizationId=org_id, projectId=project_id, userId=user_id)
    pointer_item = key_item(
        schema.user_project_key(project_id, user_id),
        keyHash=key_hash(key),
        keyCiphertext=credentials.seal(core, key, context),
        createdAt=core.now_iso(),
    )
    try:
        core.store.write(issue, Put(pointer_item, Absent()), _project_alive(project_id))
    except ConditionFailed:
        return project_api_key(core, principal)  # issued concurrently; show that one
    return key


def regenerate_project_api_key(core: Core, principal: Principal) -> str:
    user_id, project_id, org_id = principal.user(), principal.project(), principal.organization()
    pointer_key = schema.user_project_key(project_id, user_id)
    pointer = core.store.get(pointer_key)
    if pointer is None:
        project_api_key(core, principal)
        pointer = core.store.get(pointer_key)
        assert pointer is not None
    key, issue = credentials.issue(core, KeyKind.PROJECT, organizationId=org_id, projectId=project_id, userId=user_id)
    context = credentials.project_key_context(org_id, project_id, user_id)
    core.store.write(
        credentials.revoke(pointer["keyHash"]),
        issue,
        Update(
            pointer_key,
            set={"keyHash": key_hash(key), "keyCiphertext": credentials.seal(core, key, context), "createdAt": core.now_iso()},
            condition=Equals("keyHash", pointer["keyHash"]),
        ),
    )
    return key


def _project_alive(project_id: str) -> WriteOp:
    return Check(schema.project(project_id), ACTIVE)
