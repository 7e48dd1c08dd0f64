"""What the gateway knows about agents and projects, kept in memory and refreshed on change.

After warm-up a request costs no store or KMS round trip: agent identities, compiled
patterns and decrypted secret values come from here. A watcher polls one version item
(strongly consistent) and, when it moves, the versions of the organizations cached
here; whatever changed is dropped and reloaded on its next use. Every change the API
makes writes those versions in the same transaction (services.core.config_changed).
"""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, TypeVar

from credgate.domain.enums import Scope, SecretMode, ValueSource
from credgate.keys import KeyKind, key_hash
from credgate.policy import CompiledConfig, RuleSpec, SecretSpec
from credgate.services.core import GLOBAL_CONFIG_SCOPE, Core
from credgate.services.rules import rule_spec
from credgate.services.secrets import reveal, secret_spec
from credgate.store import schema

log = logging.getLogger("credgate.gateway")
T = TypeVar("T")
_NEGATIVE_CACHE_LIMIT = 10_000


@dataclass(frozen=True, slots=True)
class AgentIdentity:
    agent_id: str
    agent_name: str
    organization_id: str
    project_id: str
    allowed_secret_ids: frozenset[str] | None
    """None: the agent may use every secret of its project (secretMode all)."""


@dataclass(frozen=True, slots=True)
class ProjectConfig:
    organization_id: str
    project_id: str
    compiled: CompiledConfig
    secret_values: tuple[str, ...] = field(repr=False)
    """For scrubbing approval previews: a held request never shows a stored credential."""


@dataclass(slots=True)
class _OrganizationEntry:
    version: str | None
    agents: dict[str, AgentIdentity] = field(default_factory=dict)
    projects: dict[str, ProjectConfig] = field(default_factory=dict)


class TenantCache:
    """Agents by token hash and compiled project configs, grouped by organization for invalidation."""

    def __init__(self, core: Core, *, poll_interval: float = 0.5, workers: int = 8) -> None:
        self.core = core
        self.poll_interval = poll_interval
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="credgate-store")
        self._organizations: dict[str, _OrganizationEntry] = {}
        self._agent_org: dict[str, str] = {}
        self._unknown_tokens: set[str] = set()
        self._loading: dict[tuple[str, str], asyncio.Future[Any]] = {}
        self._global_version: str | None = None
        self._plaintexts: dict[str, dict[tuple[str, str], str]] = {}

    async def blocking(self, function: Callable[..., T], *args: Any) -> T:
        """Store and KMS calls block; they run on the cache's threads, never on the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    # agents

    def cached_agent(self, token: str | None) -> AgentIdentity | None:
        """The agent, if this token is known and cached; None otherwise (then ask `agent`)."""
        if not token:
            return None
        hashed = key_hash(token)
        org_id = self._agent_org.get(hashed)
        if org_id is None:
            return None
        entry = self._organizations.get(org_id)
        return entry.agents.get(hashed) if entry is not None else None

    def cached_project(self, identity: AgentIdentity) -> ProjectConfig | None:
        entry = self._organizations.get(identity.organization_id)
        return entry.projects.get(identity.project_id) if entry is not None else None

    async def agent(self, token: str | None) -> AgentIdentity | None:
        if not token or not token.startswith("aoc_"):
            return None
        cached = self.cached_agent(token)
        if cached is not None:
            return cached
        hashed = key_hash(token)
        if hashed in self._unknown_tokens:
            return None
        identity, version = await self._once(("agent", hashed), lambda: self.blocking(self._load_agent, hashed))
        if identity is None:
            if len(self._unknown_tokens) >= _NEGATIVE_CACHE_LIMIT:
                self._unknown_tokens.clear()
            self._unknown_tokens.add(hashed)
            return None
        entry = self._entry(identity.organization_id, version)
        if entry is not None:
            entry.agents[hashed] = identity
            self._agent_org[hashed] = identity.organization_id
        return identity

    def _load_agent(self, hashed: str) -> tuple[AgentIdentity | None, str | None]:
        store = self.core.store
        credential = store.get(schema.credential(hashed))
        if credential is None or credential.get("kind") != KeyKind.AGENT.value:
            return None, None
        org_id, project_id = credential["organizationId"], credential["projectId"]
        version = self._version(org_id)
        project = store.get(schema.project(project_id))
        agent = store.get(schema.agent(project_id, credential["agentId"]))
        if project is None or project["status"] != "active" or agent is None or agent.get("tokenHash") != hashed:
            return None, None
        selective = agent["secretMode"] == SecretMode.SELECTIVE.value
        identity = AgentIdentity(
            agent_id=agent["id"],
            agent_name=agent["name"],
            organization_id=org_id,
            project_id=project_id,
            allowed_secret_ids=frozenset(agent["secretIds"]) if selective else None,
        )
        return identity, version

    # projects

    async def project(self, identity: AgentIdentity) -> ProjectConfig:
        cached = self.cached_project(identity)
        if cached is not None:
            return cached
        config, version = await self._once(
            ("project", identity.project_id),
            lambda: self.blocking(self._load_project, identity.organization_id, identity.project_id),
        )
        entry = self._entry(identity.organization_id, version)
        if entry is not None:
            entry.projects[identity.project_id] = config
        return config

    def _load_project(self, org_id: str, project_id: str) -> tuple[ProjectConfig, str | None]:
        version = self._version(org_id)  # read first: a change during the load leaves this entry stale-marked
        store = self.core.store
        org = store.get(schema.organization(org_id)) or {}
        levels = [
            (Scope.PROJECT, schema.project(project_id).pk, {"organizationId": org_id, "projectId": project_id}),
            (Scope.ORGANIZATION, schema.organization(org_id).pk, {"organizationId": org_id}),
        ]
        secrets: list[SecretSpec] = []
        rules: list[RuleSpec] = []
        for scope, partition, context in levels:
            # 1Password references are resolved by no gateway yet: such secrets are skipped.
            inline = [item for item in store.query(partition, "SECRET#") if item["valueSource"] == ValueSource.INLINE.value]
            values = self._decrypted(partition, context, inline)
            secrets.extend(secret_spec(item, scope, values[item["id"]]) for item in inline)
            rules.extend(rule_spec(item, scope) for item in store.query(partition, "RULE#"))
        compiled = CompiledConfig.build(secrets, rules, org.get("policyMode", "allow"))
        values = tuple(spec.value for spec in secrets)
        return ProjectConfig(org_id, project_id, compiled, values), version

    def _decrypted(self, partition: str, context: dict[str, str], items: list[dict[str, Any]]) -> dict[str, str]:
        """Values by secret id. A ciphertext is decrypted once (reloading after a rule change costs no
        KMS call), and a deleted or replaced value leaves memory at the partition's next load."""
        known = self._plaintexts.get(partition, {})
        current = {
            (item["id"], item["valueCiphertext"]): known.get((item["id"], item["valueCiphertext"]))
            or reveal(self.core, context, item)
            for item in items
        }
        self._plaintexts[partition] = current
        return {secret_id: value for (secret_id, _), value in current.items()}

    # change detection

    def _version(self, scope: str) -> str | None:
        item = self.core.store.get(schema.config_version(scope))
        return item["version"] if item else None

    def _entry(self, org_id: str, version: str | None) -> _OrganizationEntry | None:
        """The organization's entry for data loaded at `version`; None if that data is already stale."""
        entry = self._organizations.get(org_id)
        if entry is None:
            entry = self._organizations[org_id] = _OrganizationEntry(version)
        return entry if entry.version == version else None

    async def _once(self, key: tuple[str, str], load: Callable[[], Awaitable[T]]) -> T:
        """Concurrent requests for the same missing entry share one load."""
        pending = self._loading.get(key)
        if pending is None:
            pending = asyncio.ensure_future(load())
            self._loading[key] = pending
            pending.add_done_callback(lambda _: self._loading.pop(key, None))
        return await asyncio.shield(pending)

    async def refresh(self) -> int:
        """Drop what changed since the last look; returns how many organizations were dropped."""
        current = await self.blocking(self._version, GLOBAL_CONFIG_SCOPE)
        if current == self._global_version:
            return 0
        self._unknown_tokens.clear()
        org_ids = list(self._organizations)
        versions = await self.blocking(self._versions, org_ids)
        dropped = 0
        for org_id in org_ids:
            entry = self._organizations.get(org_id)
            if entry is not None and entry.version != versions.get(org_id):
                self._drop(org_id)
                dropped += 1
        self._global_version = current
        return dropped

    def _versions(self, org_ids: list[str]) -> dict[str, str]:
        items = self.core.store.get_many([schema.config_version(org_id) for org_id in org_ids])
        return {item["sk"]: item["version"] for item in items}

    def _drop(self, org_id: str) -> None:
        entry = self._organizations.pop(org_id, None)
        if entry is not None:
            for hashed in entry.agents:
                self._agent_org.pop(hashed, None)

    async def watch(self) -> None:
        """Runs for the gateway's lifetime: a failed poll is logged and retried, never fatal."""
        while True:
            try:
                await self.refresh()
            except Exception as error:  # noqa: BLE001 - the store may be briefly unreachable
                log.warning("config refresh failed", extra={"error": type(error).__name__})
            await asyncio.sleep(self.poll_interval)

    def close(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)
