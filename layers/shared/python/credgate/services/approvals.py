"""Manual approvals: the gateway holds a request while a person approves or denies it."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from credgate.clock import epoch, from_epoch
from credgate.domain.enums import ApprovalStatus
from credgate.domain.models import Approval
from credgate.errors import ConditionFailed, Conflict, Gone, NotFound
from credgate.keys import new_id
from credgate.services.core import Core, Principal
from credgate.services.records import Item, key_item
from credgate.store import schema
from credgate.store.ops import Absent, Equals, Put, Update

APPROVAL_NOT_FOUND = "Approval request not found"
# Decided and expired requests stay visible for a day, then the store's TTL removes them.
_RETENTION_SECONDS = 24 * 3600


@dataclass(frozen=True)
class HeldRequest:
    """What a person sees when deciding: never headers, and a body preview with credentials removed."""

    organization_id: str
    project_id: str
    agent_id: str
    agent_name: str | None
    rule_id: str | None
    rule_name: str | None
    method: str
    host: str
    path: str
    body_preview: str | None


def approval_view(item: Item, now_epoch: int) -> Approval:
    status = item["status"]
    if status == ApprovalStatus.PENDING.value and item["holdUntil"] < now_epoch:
        status = ApprovalStatus.EXPIRED.value
    return Approval(
        id=item["id"],
        status=status,
        projectId=item["projectId"],
        agentId=item["agentId"],
        agentName=item.get("agentName"),
        ruleId=item.get("ruleId"),
        ruleName=item.get("ruleName"),
        method=item["method"],
        host=item["host"],
        path=item["path"],
        bodyPreview=item.get("bodyPreview"),
        createdAt=item["createdAt"],
        expiresAt=from_epoch(item["holdUntil"]),
        decidedAt=item.get("decidedAt"),
        decidedBy=item.get("decidedBy"),
    )


def request_approval(core: Core, held: HeldRequest, hold_seconds: int) -> str:
    approval_id = new_id("apr")
    hold_until = epoch(core.clock.now() + timedelta(seconds=hold_seconds))
    item = key_item(
        schema.approval(held.organization_id, approval_id),
        id=approval_id,
        status=ApprovalStatus.PENDING.value,
        organizationId=held.organization_id,
        projectId=held.project_id,
        agentId=held.agent_id,
        agentName=held.agent_name,
        ruleId=held.rule_id,
        ruleName=held.rule_name,
        method=held.method,
        host=held.host,
        path=held.path,
        bodyPreview=held.body_preview,
        createdAt=core.now_iso(),
        holdUntil=hold_until,
        expiresAt=hold_until + _RETENTION_SECONDS,
    )
    core.store.write(Put(item, Absent()))
    return approval_id


def current_status(core: Core, org_id: str, approval_id: str) -> ApprovalStatus:
    item = core.store.get(schema.approval(org_id, approval_id))
    if item is None:
        return ApprovalStatus.EXPIRED
    return ApprovalStatus(approval_view(item, epoch(core.clock.now())).status)


def expire(core: Core, org_id: str, approval_id: str) -> ApprovalStatus:
    """The gateway gave up waiting: record it, unless a decision landed at the last moment."""
    try:
        core.store.write(
            Update(
                schema.approval(org_id, approval_id),
                set={"status": ApprovalStatus.EXPIRED.value},
                condition=Equals("status", ApprovalStatus.PENDING.value),
            )
        )
    except ConditionFailed:
        return current_status(core, org_id, approval_id)
    return ApprovalStatus.EXPIRED


def list_pending(core: Core, principal: Principal, *, whole_organization: bool) -> list[Approval]:
    org_id = principal.organization()
    now = epoch(core.clock.now())
    views = [approval_view(item, now) for item in core.store.query(schema.approval(org_id, "").pk, "APPROVAL#")]
    return [
        view
        for view in views
        if view.status is ApprovalStatus.PENDING and (whole_organization or view.projectId == principal.project())
    ]


def decide(core: Core, principal: Principal, approval_id: str, decision: str, *, whole_organization: bool) -> Approval:
    org_id = principal.organization()
    key = schema.approval(org_id, approval_id)
    item = core.store.get(key)
    if item is None or (not whole_organization and item["projectId"] != principal.project()):
        raise NotFound(APPROVAL_NOT_FOUND)
    now = epoch(core.clock.now())
    view = approval_view(item, now)
    if view.status is ApprovalStatus.EXPIRED:
        raise Gone("Approval request has expired")
    if view.status is not ApprovalStatus.PENDING:
        raise Conflict(f"Approval request was already {view.status.value}")
    status = ApprovalStatus.APPROVED if decision == "approve" else ApprovalStatus.DENIED
    fields = {"status": status.value, "decidedAt": core.now_iso(), "decidedBy": principal.user_id or principal.kind.value}
    try:
        core.store.write(Update(key, set=fields, condition=Equals("status", ApprovalStatus.PENDING.value)))
    except ConditionFailed:
        return decide(core, principal, approval_id, decision, whole_organization=whole_organization)
    return approval_view({**item, **fields}, now)
