"""Team: the organization's members, their roles, and invitations by email link."""
from __future__ import annotations

from datetime import timedelta

from credgate.clock import epoch, from_epoch
from credgate.domain.models import Invitation, InvitationCreate, Member, Role
from credgate.errors import ConditionFailed, Conflict, NotFound, ValidationFailed
from credgate.keys import new_id
from credgate.services import accounts, sessions
from credgate.services.core import Core, Principal, config_changed
from credgate.services.records import Item, key_item
from credgate.store import schema
from credgate.store.ops import Absent, Delete, Equals, Exists, Put, Update, WriteOp

MEMBER_NOT_FOUND = "Member not found"


def _members(core: Core, org_id: str) -> list[Item]:
    return core.store.query(schema.member(org_id, "").pk, "MEMBER#")


def list_members(core: Core, principal: Principal) -> list[Member]:
    members = _members(core, principal.organization())
    users = {u["id"]: u for u in core.store.get_many([schema.user(m["userId"]) for m in members])}
    return [
        Member(
            userId=m["userId"],
            email=users[m["userId"]]["email"],
            name=users[m["userId"]].get("name"),
            role=m["role"],
            joinedAt=m["joinedAt"],
        )
        for m in members
        if m["userId"] in users
    ]


def _invitation_view(item: Item) -> Invitation:
    return Invitation(
        id=item["id"],
        email=item["email"],
        role=item["role"],
        createdAt=item["createdAt"],
        expiresAt=from_epoch(item["expiresAt"]),
    )


def invite(core: Core, principal: Principal, request: InvitationCreate) -> Invitation:
    principal.require_admin()
    org_id = principal.organization()
    existing = accounts.find_user_by_email(core, request.email)
    if existing and core.store.get(schema.member(org_id, existing["id"])):
        raise Conflict("This person is already a member of the organization")
    invitation_id = new_id("inv")
    expires = core.clock.now() + timedelta(seconds=core.settings.invitation_ttl_seconds)
    item = key_item(
        schema.invitation(org_id, invitation_id),
        id=invitation_id,
        email=request.email,
        role=request.role,
        invitedBy=principal.user_id,
        createdAt=core.now_iso(),
        expiresAt=epoch(expires),
    )
    core.store.write(Put(item, Absent()))
    org = core.store.get(schema.organization(org_id)) or {}
    sessions.send_link(
        core,
        request.email,
        None,
        subject=f"You are invited to {org.get('name', 'an organization')} on credgate",
        intro=f"You have been invited to join {org.get('name', 'an organization')} as {request.role}. Open this link to accept:",
        ttl_seconds=core.settings.invitation_ttl_seconds,  # the link lives as long as the invitation it carries
        invitationId=invitation_id,
        organizationId=org_id,
    )
    return _invitation_view(item)


def list_invitations(core: Core, principal: Principal) -> list[Invitation]:
    items = core.store.query(schema.invitation(principal.organization(), "").pk, "INVITE#")
    return [_invitation_view(item) for item in items]


def revoke_invitation(core: Core, principal: Principal, invitation_id: str) -> None:
    principal.require_admin()
    try:
        core.store.write(Delete(schema.invitation(principal.organization(), invitation_id), Exists()))
    except ConditionFailed:
        raise NotFound("Invitation not found") from None


def _member(core: Core, org_id: str, user_id: str) -> Item:
    member = core.store.get(schema.member(org_id, user_id))
    if member is None:
        raise NotFound(MEMBER_NOT_FOUND)
    return member


def change_role(core: Core, principal: Principal, user_id: str, role: str) -> Member:
    principal.require_admin()
    org_id = principal.organization()
    member = _member(core, org_id, user_id)
    if member["role"] == Role.OWNER.value:
        raise ValidationFailed("The owner's role cannot be changed")
    not_owner = Equals("role", member["role"])
    core.store.write(
        Update(schema.member(org_id, user_id), set={"role": role}, condition=not_owner),
        Update(schema.membership(user_id, org_id), set={"role": role}),
    )
    return next(m for m in list_members(core, principal) if m.userId == user_id)


def remove_member(core: Core, principal: Principal, user_id: str) -> None:
    """Remove a member and revoke their project keys in this organization's projects."""
    principal.require_admin()
    org_id = principal.organization()
    member = _member(core, org_id, user_id)
    if member["role"] == Role.OWNER.value:
        raise ValidationFailed("The owner cannot be removed")
    writes: list[WriteOp] = [
        Delete(schema.member(org_id, user_id), Equals("role", member["role"])),
        Delete(schema.membership(user_id, org_id)),
    ]
    for link in core.store.query(schema.organization_project(org_id, "").pk, "PROJECT#"):
        pointer = core.store.get(schema.user_project_key(link["projectId"], user_id))
        if pointer:
            writes += [Delete(schema.user_project_key(link["projectId"], user_id)), Delete(schema.credential(pointer["keyHash"]))]
    try:
        core.store.write(*writes, *config_changed(core, org_id))
    except ConditionFailed:
        raise NotFound(MEMBER_NOT_FOUND) from None
