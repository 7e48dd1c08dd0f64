"""The gateway's in-memory view of agents and projects: warm requests touch neither store nor KMS,
changes are picked up, and decrypted values leave memory when their secret does."""
from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from credgate.domain.models import RuleCreate, SecretCreate, SecretPatch
from credgate.services import agents, rules, secrets
from credgate.services.core import Core, CredentialKind, Principal
from credgate.services.owners import project_owner
from credgate_gateway.tenancy import TenantCache
from tests.conftest import Tenant


class Counting:
    """Wraps a port and counts calls per method."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return attribute(*args, **kwargs)

        return counted

    def total(self) -> int:
        return sum(self.calls.values())


def _owner(tenant: Tenant) -> Principal:
    return Principal(CredentialKind.PROJECT_KEY, tenant.organization_id, tenant.project_id, tenant.user_id)


def _secret(value: str) -> SecretCreate:
    return SecretCreate(name="tool", type="generic", value=value, hostPattern="api.tool.test", injectionConfig={"headerName": "X-Key"})


def test_warm_requests_cost_no_store_or_kms_call(core: Core, tenant: Tenant):
    secrets.create_secret(core, project_owner(_owner(tenant)), _secret("first-value-0123456789"))
    store, keyring = Counting(core.store), Counting(core.keyring)
    cache = TenantCache(dataclasses.replace(core, store=store, keyring=keyring))

    async def scenario() -> None:
        identity = await cache.agent(tenant.agent_token)
        config = await cache.project(identity)
        assert [s.value for s in config.compiled.select_secrets("api.tool.test", "/")] == ["first-value-0123456789"]
        cold = (store.total(), keyring.total())
        for _ in range(100):
            assert await cache.agent(tenant.agent_token) is identity
            assert await cache.project(identity) is config
        assert (store.total(), keyring.total()) == cold

    asyncio.run(scenario())
    cache.close()


def test_reload_after_a_rule_change_decrypts_nothing_and_a_deleted_value_leaves_memory(core: Core, tenant: Tenant):
    owner = project_owner(_owner(tenant))
    kept = secrets.create_secret(core, owner, _secret("kept-value-0123456789"))
    doomed = secrets.create_secret(
        core, owner, SecretCreate(name="other", type="openai", value="sk-doomed-0123456789", hostPattern="api.openai.com")
    )
    keyring = Counting(core.keyring)
    cache = TenantCache(dataclasses.replace(core, keyring=keyring))

    async def load() -> Any:
        await cache.refresh()
        return await cache.project(await cache.agent(tenant.agent_token))

    asyncio.run(load())
    assert keyring.calls.get("decrypt") == 2

    rules.create_rule(core, owner, RuleCreate(name="r", hostPattern="api.tool.test", action="block"))
    config = asyncio.run(load())
    assert keyring.calls.get("decrypt") == 2, "a rule change must not cost KMS calls"
    assert config.compiled.evaluate("api.tool.test", "/", "GET", tenant.agent_id, True).action.value == "block"

    secrets.update_secret(core, owner, kept.id, SecretPatch(value="rotated-value-0123456789"))
    secrets.delete_secret(core, owner, doomed.id)
    config = asyncio.run(load())
    assert keyring.calls.get("decrypt") == 3  # only the rotated value
    remembered = {value for partition in cache._plaintexts.values() for value in partition.values()}
    assert remembered == {"rotated-value-0123456789"}
    assert "sk-doomed-0123456789" not in repr(config)
    cache.close()


def test_a_regenerated_token_is_refused_after_refresh(core: Core, tenant: Tenant):
    cache = TenantCache(core)

    async def scenario() -> None:
        await cache.refresh()
        assert await cache.agent(tenant.agent_token) is not None
        fresh = agents.regenerate_token(core, _owner(tenant), tenant.agent_id).accessToken
        assert await cache.refresh() == 1
        assert await cache.agent(tenant.agent_token) is None
        assert (await cache.agent(fresh)).agent_id == tenant.agent_id
        assert await cache.agent("aoc_" + "0" * 64) is None

    asyncio.run(scenario())
    cache.close()
