"""The credential pipeline's two paths agree: what decide_now answers without waiting is what
authenticate + on_request answer, and it declines whatever needs a wait (cold caches, counts, holds)."""
from __future__ import annotations

import asyncio
from typing import Any

from credgate.domain.models import RuleCreate, SecretCreate
from credgate.services import rules, secrets
from credgate.services.core import Core, CredentialKind, Principal
from credgate.services.owners import project_owner
from credgate_gateway.pipeline import CredentialPipeline
from credgate_gateway.proxy import Forward, ProxyRequest, Respond
from credgate_gateway.tenancy import TenantCache
from tests.conftest import Tenant

HOST = "api.tool.test"


class NoBody:
    has_body = False
    length = None

    async def peek(self, max_bytes: int) -> bytes:
        return b""


def _request(path: str, method: str = "GET") -> ProxyRequest:
    return ProxyRequest("https", HOST, 443, method, path, [("accept", "*/*"), ("x-key", "agent-placeholder")], ("127.0.0.1", 1), NoBody(), True)


def _setup(core: Core, tenant: Tenant) -> CredentialPipeline:
    owner = project_owner(Principal(CredentialKind.PROJECT_KEY, tenant.organization_id, tenant.project_id, tenant.user_id))
    secrets.create_secret(core, owner, SecretCreate(name="tool", type="generic", value="tool-secret-0123456789", hostPattern=HOST, injectionConfig={"headerName": "X-Key"}))
    rules.create_rule(core, owner, RuleCreate(name="no deletes", hostPattern=HOST, method="DELETE", action="block"))
    rules.create_rule(core, owner, RuleCreate(name="counted", hostPattern=HOST, pathPattern="/counted", action="rate_limit", rateLimit=5, rateLimitWindow="minute"))
    rules.create_rule(core, owner, RuleCreate(name="held", hostPattern=HOST, pathPattern="/held", action="manual_approval"))
    return CredentialPipeline(TenantCache(core))


def _outcome(decision: Forward | Respond) -> Any:
    if isinstance(decision, Forward):
        return ("forward", decision.target, [value for name, value in decision.headers if name.lower() == "x-key"])
    return ("respond", decision.status, decision.error)


def test_cold_caches_are_left_to_the_awaited_path(core, tenant):
    pipeline = _setup(core, tenant)
    assert pipeline.decide_now(tenant.agent_token, _request("/v1/x")) is None
    assert pipeline.decide_now(None, _request("/v1/x")) is None
    pipeline.tenants.close()


def test_warm_decisions_match_the_awaited_path_and_waits_are_declined(core, tenant):
    pipeline = _setup(core, tenant)

    async def awaited(request: ProxyRequest) -> Any:
        identity = await pipeline.authenticate(tenant.agent_token)
        return _outcome(await pipeline.on_request(identity, request))

    allowed, blocked = _request("/v1/x"), _request("/v1/x", "DELETE")
    expected = asyncio.run(awaited(allowed)), asyncio.run(awaited(blocked))
    assert expected == (("forward", "/v1/x", ["tool-secret-0123456789"]), ("respond", 403, "blocked_by_policy"))

    now = [pipeline.decide_now(tenant.agent_token, request) for request in (allowed, blocked)]
    assert [identity.agent_id for identity, _ in now] == [tenant.agent_id, tenant.agent_id]
    assert tuple(_outcome(decision) for _, decision in now) == expected
    assert pipeline.decide_now(tenant.agent_token, _request("/counted")) is None  # counted in the store
    assert pipeline.decide_now(tenant.agent_token, _request("/held")) is None  # held for a person
    pipeline.tenants.close()
