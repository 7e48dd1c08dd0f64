from __future__ import annotations

from credgate.domain.models import Rule, RuleCreate, RulePatch
from credgate.services import rules
from credgate.services.owners import organization_owner, project_owner
from credgate_api.routers.owned import OwnedResource, owned_router


def _resource(owner_of) -> OwnedResource:  # type: ignore[no-untyped-def]
    return OwnedResource(
        view=Rule,
        create_body=RuleCreate,
        patch_body=RulePatch,
        list=lambda core, principal: rules.list_rules(core, owner_of(principal)),
        create=rules.create_rule,
        get=rules.get_rule,
        update=rules.update_rule,
        delete=rules.delete_rule,
    )


project_router = owned_router("/rules", "Rules", project_owner, _resource(project_owner))
organization_router = owned_router("/org/rules", "Organization Rules", organization_owner, _resource(organization_owner))
