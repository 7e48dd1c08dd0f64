"""Policy rules at project and organization level (block, manual approval, rate limit, allow)."""
from __future__ import annotations

from typing import Any

from credgate.domain.enums import RuleAction, Scope
from credgate.domain.models import Rule, RuleCreate, RulePatch
from credgate.errors import ConditionFailed, NotFound, ValidationFailed
from credgate.keys import new_id
from credgate.policy import RuleSpec
from credgate.services.core import Core, config_changed
from credgate.services.owners import Owner
from credgate.services.records import Item, key_item
from credgate.store import schema
from credgate.store.ops import Absent, Delete, Exists, Put, Update

RULE_NOT_FOUND = "Policy rule not found"
RATE_CONFIG_REQUIRED = "Rate limit rules require a rate limit and window"
_RATE_FIELDS = ("rateLimit", "rateLimitWindow")


def rule_view(item: Item, scope: Scope) -> Rule:
    return Rule(
        id=item["id"],
        name=item["name"],
        hostPattern=item["hostPattern"],
        pathPattern=item.get("pathPattern"),
        method=item.get("method"),
        action=item["action"],
        enabled=item["enabled"],
        agentId=item.get("agentId"),
        rateLimit=item.get("rateLimit"),
        rateLimitWindow=item.get("rateLimitWindow"),
        scope=scope,
        createdAt=item["createdAt"],
        updatedAt=item["updatedAt"],
    )


def rule_spec(item: Item, scope: Scope) -> RuleSpec:
    """The stored rule as the gateway's policy evaluation takes it."""
    return RuleSpec(
        id=item["id"],
        scope=scope,
        name=item["name"],
        host_pattern=item["hostPattern"],
        path_pattern=item.get("pathPattern"),
        method=item.get("method"),
        action=item["action"],
        enabled=item["enabled"],
        agent_id=item.get("agentId"),
        rate_limit=item.get("rateLimit"),
        rate_limit_window=item.get("rateLimitWindow"),
    )


def _stored(fields: dict[str, Any]) -> dict[str, Any]:
    """Enum values as strings, and rate fields only where the action uses them."""
    stored = {name: getattr(value, "value", value) for name, value in fields.items()}
    if stored.get("action") not in (None, RuleAction.RATE_LIMIT.value):
        stored.update(rateLimit=None, rateLimitWindow=None)
    return stored


def _check_agent(core: Core, owner: Owner, agent_id: str | None) -> None:
    if agent_id is None:
        return
    if owner.scope is not Scope.PROJECT:
        raise ValidationFailed("agentId is only available on project rules")
    project_id = owner.context["projectId"]
    if core.store.get(schema.agent(project_id, agent_id)) is None:
        raise ValidationFailed("agentId does not name an agent of this project")


def _rule(core: Core, owner: Owner, rule_id: str) -> Item:
    item = core.store.get(owner.item_key("RULE", rule_id))
    if item is None:
        raise NotFound(RULE_NOT_FOUND)
    return item


def list_rules(core: Core, owner: Owner) -> list[Rule]:
    return [rule_view(item, owner.scope) for item in core.store.query(owner.partition, "RULE#")]


def get_rule(core: Core, owner: Owner, rule_id: str) -> Rule:
    return rule_view(_rule(core, owner, rule_id), owner.scope)


def create_rule(core: Core, owner: Owner, request: RuleCreate) -> Rule:
    _check_agent(core, owner, request.agentId)
    rule_id = new_id("rul")
    now = core.now_iso()
    item = key_item(
        owner.item_key("RULE", rule_id), id=rule_id, createdAt=now, updatedAt=now, **_stored(request.model_dump())
    )
    core.store.write(Put(item, Absent()), *config_changed(core, owner.organization_id))
    return rule_view(item, owner.scope)


def update_rule(core: Core, owner: Owner, rule_id: str, patch: RulePatch) -> Rule:
    item = _rule(core, owner, rule_id)
    changes = patch.changes()
    merged = {**item, **_stored(changes)}
    if merged["action"] == RuleAction.RATE_LIMIT.value and any(merged.get(name) is None for name in _RATE_FIELDS):
        raise ValidationFailed(RATE_CONFIG_REQUIRED)
    if "agentId" in changes:
        _check_agent(core, owner, changes["agentId"])
    fields = {**_stored(changes), "updatedAt": core.now_iso()}
    if merged["action"] != RuleAction.RATE_LIMIT.value:
        fields.update(rateLimit=None, rateLimitWindow=None)
    try:
        core.store.write(Update(owner.item_key("RULE", rule_id), set=fields), *config_changed(core, owner.organization_id))
    except ConditionFailed:
        raise NotFound(RULE_NOT_FOUND) from None
    return rule_view({**item, **fields}, owner.scope)


def delete_rule(core: Core, owner: Owner, rule_id: str) -> None:
    try:
        core.store.write(Delete(owner.item_key("RULE", rule_id), Exists()), *config_changed(core, owner.organization_id))
    except ConditionFailed:
        raise NotFound(RULE_NOT_FOUND) from None
