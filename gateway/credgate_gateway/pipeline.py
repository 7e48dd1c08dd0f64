"""The request pipeline the proxy engine calls: authenticate agent -> project config -> policy
(block / approval / rate limit) -> pick credentials -> inject -> forward. One JSON log line per request."""
from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass

from credgate.domain.enums import ApprovalStatus, RuleAction
from credgate.policy import InjectionPlan, InjectionRefused, PolicyDecision, RuleSpec, is_llm_host
from credgate.services import approvals
from credgate.services.approvals import HeldRequest
from credgate.store import schema

from credgate_gateway import responses
from credgate_gateway.access_log import AccessLog
from credgate_gateway.proxy import Forward, ProxyRequest, RequestRecord, Respond
from credgate_gateway.tenancy import AgentIdentity, ProjectConfig, TenantCache


PREVIEW_BYTES = 2048
_REDACTED = "[REDACTED]"
# JSON members whose values look like credentials, whatever the agent put there.
_CREDENTIAL_MEMBER = re.compile(
    r'("(?:[^"\\]*(?:key|token|secret|password|passwd|authorization|credential)[^"\\]*)"\s*:\s*)"(?:[^"\\]|\\.)*"',
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class RequestNote:
    """Carried from on_request to the request's log line."""

    injected: tuple[str, ...] = ()
    rule_id: str | None = None


@dataclass(frozen=True)
class PipelineSettings:
    approval_timeout: float = 180.0
    approval_poll_interval: float = 0.5


class CredentialPipeline:
    """Implements the engine's ProxyHooks."""

    def __init__(
        self, tenants: TenantCache, settings: PipelineSettings | None = None, access_log: AccessLog | None = None
    ) -> None:
        self.tenants = tenants
        self.settings = settings or PipelineSettings()
        self.access_log = access_log or AccessLog("credgate-gateway")

    async def authenticate(self, token: str | None) -> AgentIdentity | None:
        return await self.tenants.agent(token)

    def decide_now(self, token: str | None, request: ProxyRequest) -> tuple[AgentIdentity, Forward | Respond] | None:
        """The engine's fast path: warm caches and nothing to count or hold, so nothing to wait for."""
        identity = self.tenants.cached_agent(token)
        if identity is None:
            return None
        config = self.tenants.cached_project(identity)
        if config is None:
            return None
        plan, decision = self._assess(identity, config, request)
        if decision.action is RuleAction.ALLOW:
            return identity, self._inject(plan, decision, request)
        if decision.action is RuleAction.BLOCK:
            return identity, self._blocked(decision, request)
        return None

    async def on_request(self, identity: AgentIdentity, request: ProxyRequest) -> Forward | Respond:
        config = await self.tenants.project(identity)
        plan, decision = self._assess(identity, config, request)
        if decision.action is RuleAction.BLOCK:
            return self._blocked(decision, request)
        if decision.action is RuleAction.MANUAL_APPROVAL:
            refusal = await self._await_approval(decision.rule, identity, config, request)
        elif decision.action is RuleAction.RATE_LIMIT:
            refusal = await self._count(decision.rules, identity, request.host)
        else:
            refusal = None
        if refusal is not None:
            refusal.note = RequestNote(rule_id=decision.rule.id if decision.rule else None)
            return refusal
        return self._inject(plan, decision, request)

    @staticmethod
    def _assess(identity: AgentIdentity, config: ProjectConfig, request: ProxyRequest) -> tuple[InjectionPlan, PolicyDecision]:
        compiled = config.compiled
        host, path = request.host, request.path
        plan = compiled.resolve(host, path, identity.allowed_secret_ids)
        decision = compiled.evaluate(host, path, request.method, identity.agent_id, bool(plan), is_llm_host(host))
        return plan, decision

    @staticmethod
    def _blocked(decision: PolicyDecision, request: ProxyRequest) -> Respond:
        refusal = responses.blocked_by_policy(request.host, decision.rule.name if decision.rule else None)
        refusal.note = RequestNote(rule_id=decision.rule.id if decision.rule else None)
        return refusal

    @staticmethod
    def _inject(plan: InjectionPlan, decision: PolicyDecision, request: ProxyRequest) -> Forward | Respond:
        note = RequestNote(plan.secret_ids, decision.rule.id if decision.rule else None)
        try:
            target, headers = plan.apply(request.target, request.headers)
        except InjectionRefused as error:
            refused = responses.injection_refused(request.host, error.message)
            refused.note = note
            return refused
        return Forward(request.method, target, headers, note=note)

    # rate limits: fixed windows per rule and agent, counted in the store so every task shares them

    async def _count(self, rules: tuple[RuleSpec, ...], identity: AgentIdentity, host: str) -> Respond | None:
        now = time.time()
        exceeded: tuple[RuleSpec, int] | None = None
        for rule in rules:
            window = rule.rate_limit_window.seconds  # type: ignore[union-attr]
            start = int(now // window * window)
            key = schema.rate_window(rule.id, identity.agent_id, start)
            count = await self.tenants.blocking(
                lambda: self.tenants.core.store.increment(key, "count", 1, expires_at=start + window + 60)
            )
            if count > rule.rate_limit and exceeded is None:  # type: ignore[operator]
                exceeded = (rule, max(1, int(start + window - now + 0.999)))
        if exceeded is None:
            return None
        rule, retry_after = exceeded
        return responses.rate_limited(host, rule.name, retry_after)

    # manual approval: hold the request while a person decides

    async def _await_approval(
        self, rule: RuleSpec | None, identity: AgentIdentity, config: ProjectConfig, request: ProxyRequest
    ) -> Respond | None:
        preview = await self._body_preview(request, config)
        core = self.tenants.core
        held = HeldRequest(
            organization_id=identity.organization_id,
            project_id=identity.project_id,
            agent_id=identity.agent_id,
            agent_name=identity.agent_name,
            rule_id=rule.id if rule else None,
            rule_name=rule.name if rule else None,
            method=request.method,
            host=request.host,
            path=request.path,
            body_preview=preview,
        )
        timeout = self.settings.approval_timeout
        approval_id = await self.tenants.blocking(approvals.request_approval, core, held, int(timeout))
        deadline = time.monotonic() + timeout
        status = ApprovalStatus.PENDING
        while status is ApprovalStatus.PENDING and time.monotonic() < deadline:
            await asyncio.sleep(min(self.settings.approval_poll_interval, max(0.0, deadline - time.monotonic())))
            status = await self.tenants.blocking(approvals.current_status, core, identity.organization_id, approval_id)
        if status is ApprovalStatus.PENDING:
            status = await self.tenants.blocking(approvals.expire, core, identity.organization_id, approval_id)
        if status is ApprovalStatus.APPROVED:
            return None
        outcome = "denied" if status is ApprovalStatus.DENIED else "not approved in time"
        return responses.manual_approval_denied(request.host, outcome)

    @staticmethod
    async def _body_preview(request: ProxyRequest, config: ProjectConfig) -> str | None:
        if not request.body.has_body:
            return None
        raw = await request.body.peek(PREVIEW_BYTES)
        text = raw.decode("utf-8", errors="replace")
        for value in config.secret_values:
            text = text.replace(value, _REDACTED)
        text = _CREDENTIAL_MEMBER.sub(lambda match: f'{match.group(1)}"{_REDACTED}"', text)
        if request.body.length is None or request.body.length > len(raw):
            text += "…"
        return text

    def on_complete(self, identity: AgentIdentity | None, record: RequestRecord) -> None:
        self.access_log.write(identity, record)
