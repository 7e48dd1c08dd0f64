"""A project's secrets and rules compiled for the gateway: built once when config loads, asked per request."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Generic, TypeVar

from credgate.domain.models import PolicyMode
from credgate.policy.injection import EMPTY_PLAN, CredentialKind, InjectionPlan, SecretInjection
from credgate.policy.llm_hosts import is_llm_host
from credgate.policy.matching import (
    PathMatcher,
    compile_path_pattern,
    host_specificity,
    normalize_host,
    path_specificity,
    request_path,
)
from credgate.policy.specs import ACTION_PRECEDENCE, SCOPE_PRECEDENCE, RuleAction, RuleSpec, SecretSpec

_Candidate = TypeVar("_Candidate")
_OLDEST = datetime.min.replace(tzinfo=timezone.utc)
_PLAN_CACHE_SIZE = 1024


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    """What policy says about a request.

    `rule` is the deciding rule (None when no rule matched); `rules` holds every matching rule of the
    deciding action, deciding rule first: for `rate_limit`, each of them is counted separately.
    `default_deny` is set when the organization's deny mode blocked a request no rule allowed.
    """

    action: RuleAction
    rule: RuleSpec | None = None
    rules: tuple[RuleSpec, ...] = ()
    default_deny: bool = False


ALLOWED_WITHOUT_RULE = PolicyDecision(RuleAction.ALLOW)
BLOCKED_BY_DEFAULT_DENY = PolicyDecision(RuleAction.BLOCK, default_deny=True)


class _HostIndex(Generic[_Candidate]):
    """Candidates bucketed by host pattern: a request host reaches its exact bucket and one per parent domain.

    Entries arrive in precedence order, so every bucket is in that order too. For hosts named by an exact
    pattern the list of buckets is precomputed; other hosts walk their parent domains.
    """

    __slots__ = ("_by_exact_host", "_wildcard")

    def __init__(self, entries: Iterable[tuple[str, _Candidate]]) -> None:
        exact: dict[str, list[_Candidate]] = {}
        wildcard: dict[str, list[_Candidate]] = {}
        for pattern, candidate in entries:
            if pattern.startswith("*."):
                wildcard.setdefault(pattern[2:], []).append(candidate)
            else:
                exact.setdefault(pattern, []).append(candidate)
        self._wildcard = {suffix: tuple(bucket) for suffix, bucket in wildcard.items()}
        self._by_exact_host = {host: (tuple(bucket), *self._wildcard_buckets(host)) for host, bucket in exact.items()}

    def buckets(self, host: str) -> tuple[tuple[_Candidate, ...], ...]:
        found = self._by_exact_host.get(host)
        if found is not None:
            return found
        return self._wildcard_buckets(host) if self._wildcard else ()

    def _wildcard_buckets(self, host: str) -> tuple[tuple[_Candidate, ...], ...]:
        found = []
        wildcard = self._wildcard
        dot = host.find(".")
        while dot != -1:
            bucket = wildcard.get(host[dot + 1:])
            if bucket is not None:
                found.append(bucket)
            dot = host.find(".", dot + 1)
        return tuple(found)


class _SecretCandidate:
    __slots__ = ("id", "kind", "rank", "matches_path", "injection", "plan")

    def __init__(self, injection: SecretInjection, rank: int) -> None:
        spec = injection.spec
        self.id = spec.id
        self.kind: CredentialKind = injection.kind
        self.rank = rank
        self.matches_path: PathMatcher | None = compile_path_pattern(spec.path_pattern)
        self.injection = injection
        self.plan = InjectionPlan([injection])

    def __repr__(self) -> str:
        return f"_SecretCandidate(id={self.id!r}, rank={self.rank})"


class _RuleCandidate:
    __slots__ = ("spec", "agent_id", "method", "order", "rank", "matches_path", "decision")

    def __init__(self, spec: RuleSpec, rank: int) -> None:
        self.spec = spec
        self.agent_id = spec.agent_id
        self.method = spec.method
        self.order = ACTION_PRECEDENCE[spec.action]
        self.rank = rank
        self.matches_path: PathMatcher | None = compile_path_pattern(spec.path_pattern)
        self.decision = PolicyDecision(spec.action, spec, (spec,))  # when it is the only matching rule


def secret_precedence_key(spec: SecretSpec) -> tuple:
    """Which of two secrets of one credential kind wins: scope level, host, path, then newest, then id."""
    return (
        SCOPE_PRECEDENCE[spec.scope],
        host_specificity(spec.host_pattern),
        path_specificity(spec.path_pattern),
        -_timestamp(spec.created_at),
        spec.id,
    )


def rule_precedence_key(spec: RuleSpec) -> tuple:
    """Order of matching rules: action, then the most specific rule first (reported as the deciding one)."""
    return (
        ACTION_PRECEDENCE[spec.action],
        SCOPE_PRECEDENCE[spec.scope],
        host_specificity(spec.host_pattern),
        path_specificity(spec.path_pattern),
        spec.method is None,
        spec.agent_id is None,
        spec.id,
    )


def _timestamp(created_at: str | datetime) -> float:
    if isinstance(created_at, str):
        try:
            created_at = datetime.fromisoformat(created_at)
        except ValueError:
            return _OLDEST.timestamp()
    if created_at.tzinfo is None:
        created_at = created_at.replace(tzinfo=timezone.utc)
    return created_at.timestamp()


class CompiledConfig:
    """Everything the gateway asks per request about one project, precomputed.

    Secrets and enabled rules are bucketed by host pattern and pre-sorted by precedence, with path
    patterns compiled and every secret's injection prepared, so a request costs a few dict lookups
    and the path checks of the candidates for its host.
    """

    __slots__ = ("policy_mode", "secrets", "rules", "_secrets_by_host", "_rules_by_host", "_plans")

    def __init__(self, secrets: tuple[SecretSpec, ...], rules: tuple[RuleSpec, ...], policy_mode: PolicyMode) -> None:
        self.policy_mode = PolicyMode(policy_mode)
        self.secrets = secrets
        self.rules = rules
        ranked_secrets = sorted(secrets, key=secret_precedence_key)
        self._secrets_by_host: _HostIndex[_SecretCandidate] = _HostIndex(
            (spec.host_pattern, _SecretCandidate(SecretInjection(spec), rank)) for rank, spec in enumerate(ranked_secrets)
        )
        ranked_rules = sorted((rule for rule in rules if rule.enabled), key=rule_precedence_key)
        self._rules_by_host: _HostIndex[_RuleCandidate] = _HostIndex(
            (spec.host_pattern, _RuleCandidate(spec, rank)) for rank, spec in enumerate(ranked_rules)
        )
        self._plans: dict[tuple[int, ...], InjectionPlan] = {}

    @classmethod
    def build(
        cls, secrets: Iterable[SecretSpec], rules: Iterable[RuleSpec], policy_mode: PolicyMode | str = PolicyMode.ALLOW
    ) -> "CompiledConfig":
        return cls(tuple(secrets), tuple(rules), PolicyMode(policy_mode))

    def __repr__(self) -> str:
        return f"CompiledConfig(secrets={len(self.secrets)}, rules={len(self.rules)}, policy_mode={self.policy_mode.value})"

    def resolve(self, host: str, path: str, allowed_ids: frozenset[str] | None = None) -> InjectionPlan:
        """The secrets to inject into a request and how; `allowed_ids` None means the agent may use all.

        Only allowed secrets compete. Per credential kind the best by precedence wins (scope level, then
        host and path specificity, then newest, then id); a secret writing to a header a better one
        already writes to is left out.
        """
        host = normalize_host(host)
        buckets = self._secrets_by_host.buckets(host)
        if not buckets:
            return EMPTY_PLAN
        canonical = request_path(path)
        best: dict[CredentialKind, _SecretCandidate] = {}
        for bucket in buckets:
            for candidate in bucket:
                if allowed_ids is not None and candidate.id not in allowed_ids:
                    continue
                current = best.get(candidate.kind)
                if current is not None and current.rank < candidate.rank:
                    continue
                matches_path = candidate.matches_path
                if matches_path is not None and not matches_path(canonical):
                    continue
                best[candidate.kind] = candidate
        if not best:
            return EMPTY_PLAN
        if len(best) == 1:
            return next(iter(best.values())).plan
        return self._plan_for(sorted(best.values(), key=_rank))

    def select_secrets(self, host: str, path: str, allowed_ids: frozenset[str] | None = None) -> tuple[SecretSpec, ...]:
        """The secrets `resolve` would inject, best first."""
        return self.resolve(host, path, allowed_ids).secrets

    def _plan_for(self, chosen: list[_SecretCandidate]) -> InjectionPlan:
        key = tuple(candidate.rank for candidate in chosen)
        plan = self._plans.get(key)
        if plan is None:
            kept: list[SecretInjection] = []
            claimed: set = set()
            for candidate in chosen:
                if not claimed & candidate.injection.slots:
                    kept.append(candidate.injection)
                    claimed |= candidate.injection.slots
            plan = InjectionPlan(kept)
            if len(self._plans) >= _PLAN_CACHE_SIZE:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def evaluate(
        self,
        host: str,
        path: str,
        method: str,
        agent_id: str | None,
        credentialed: bool,
        llm_host: bool | None = None,
    ) -> PolicyDecision:
        """The policy decision for a request: block > manual_approval > rate_limit > allow.

        In deny mode a credentialed request to a non-LLM host needs a matching rule that lets it through.
        `llm_host` None means: decide with is_llm_host(host).
        """
        host = normalize_host(host)
        method = method.upper()
        canonical: str | None = None
        best_order = len(ACTION_PRECEDENCE)
        matched: list[_RuleCandidate] = []
        for bucket in self._rules_by_host.buckets(host):
            for candidate in bucket:
                if candidate.order > best_order:
                    break
                if candidate.agent_id is not None and candidate.agent_id != agent_id:
                    continue
                if candidate.method is not None and candidate.method != method:
                    continue
                matches_path = candidate.matches_path
                if matches_path is not None:
                    if canonical is None:
                        canonical = request_path(path)
                    if not matches_path(canonical):
                        continue
                if candidate.order < best_order:
                    best_order = candidate.order
                    matched = [candidate]
                else:
                    matched.append(candidate)
        if matched:
            if len(matched) == 1:
                return matched[0].decision
            matched.sort(key=_rank)
            deciding = matched[0].spec
            return PolicyDecision(deciding.action, deciding, tuple(candidate.spec for candidate in matched))
        if credentialed and self.policy_mode is PolicyMode.DENY:
            if not (is_llm_host(host) if llm_host is None else llm_host):
                return BLOCKED_BY_DEFAULT_DENY
        return ALLOWED_WITHOUT_RULE


def _rank(candidate: _SecretCandidate | _RuleCandidate) -> int:
    return candidate.rank
