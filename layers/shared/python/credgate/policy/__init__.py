"""The gateway's hot-path logic over plain data: host/path matching, secret selection, policy, injection."""
from credgate.policy.config import (
    ALLOWED_WITHOUT_RULE,
    BLOCKED_BY_DEFAULT_DENY,
    CompiledConfig,
    PolicyDecision,
    rule_precedence_key,
    secret_precedence_key,
)
from credgate.policy.injection import (
    CredentialKind,
    InjectionPlan,
    InjectionRefused,
    SecretInjection,
    apply_injections,
    credential_kind,
)
from credgate.policy.llm_hosts import LLM_HOSTS, is_llm_host
from credgate.policy.matching import (
    compile_path_pattern,
    host_matches,
    normalize_host,
    request_path,
)
from credgate.policy.specs import RateLimitWindow, RuleAction, RuleSpec, SecretSpec

__all__ = [
    "ALLOWED_WITHOUT_RULE",
    "BLOCKED_BY_DEFAULT_DENY",
    "LLM_HOSTS",
    "CompiledConfig",
    "CredentialKind",
    "InjectionPlan",
    "InjectionRefused",
    "PolicyDecision",
    "RateLimitWindow",
    "RuleAction",
    "RuleSpec",
    "SecretInjection",
    "SecretSpec",
    "apply_injections",
    "compile_path_pattern",
    "credential_kind",
    "host_matches",
    "is_llm_host",
    "normalize_host",
    "request_path",
    "rule_precedence_key",
    "secret_precedence_key",
]
