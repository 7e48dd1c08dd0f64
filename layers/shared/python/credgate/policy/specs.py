"""The plain data the gateway's hot path is compiled from: one secret, one policy rule."""
from __future__ import annotations

from dataclasses import dataclass, field

from credgate.domain.injection import InjectionVariant
from credgate.domain.enums import RateLimitWindow, RuleAction, Scope, SecretType

# Lower is more specific: a project's own secret or rule comes before its organization's, then the partner's.
SCOPE_PRECEDENCE: dict[Scope, int] = {Scope.PROJECT: 0, Scope.ORGANIZATION: 1, Scope.PARTNER: 2}


# Evaluation order: the first action with a matching rule decides.
ACTION_PRECEDENCE: dict[RuleAction, int] = {
    RuleAction.BLOCK: 0,
    RuleAction.MANUAL_APPROVAL: 1,
    RuleAction.RATE_LIMIT: 2,
    RuleAction.ALLOW: 3,
}


def _normalized_host_pattern(pattern: str) -> str:
    return pattern.strip().lower().rstrip(".")


def _normalized_path_pattern(pattern: str | None) -> str | None:
    return None if pattern in (None, "", "*") else pattern


@dataclass(frozen=True, slots=True)
class SecretSpec:
    """A stored secret with its decrypted value, as the gateway needs it. The value never appears in repr."""

    id: str
    scope: Scope
    type: SecretType
    host_pattern: str
    path_pattern: str | None
    injection: InjectionVariant | None
    value: str = field(repr=False)
    created_at: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "scope", Scope(self.scope))
        object.__setattr__(self, "type", SecretType(self.type))
        object.__setattr__(self, "host_pattern", _normalized_host_pattern(self.host_pattern))
        object.__setattr__(self, "path_pattern", _normalized_path_pattern(self.path_pattern))
        if self.type is SecretType.GENERIC and self.injection is None:
            raise ValueError(f"generic secret {self.id} has no injection config")
        if self.type is not SecretType.GENERIC and self.injection is not None:
            raise ValueError(f"{self.type.value} secret {self.id} must not carry an injection config")


@dataclass(frozen=True, slots=True)
class RuleSpec:
    """An enabled or disabled policy rule of a project or organization."""

    id: str
    scope: Scope
    name: str
    host_pattern: str
    path_pattern: str | None
    method: str | None
    action: RuleAction
    enabled: bool = True
    agent_id: str | None = None
    rate_limit: int | None = None
    rate_limit_window: RateLimitWindow | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "scope", Scope(self.scope))
        object.__setattr__(self, "action", RuleAction(self.action))
        object.__setattr__(self, "host_pattern", _normalized_host_pattern(self.host_pattern))
        object.__setattr__(self, "path_pattern", _normalized_path_pattern(self.path_pattern))
        method = (self.method or "").strip().upper()
        object.__setattr__(self, "method", None if method in ("", "*") else method)
        if self.rate_limit_window is not None:
            object.__setattr__(self, "rate_limit_window", RateLimitWindow(self.rate_limit_window))
        if self.action is RuleAction.RATE_LIMIT:
            if self.rate_limit is None or self.rate_limit < 1 or self.rate_limit_window is None:
                raise ValueError(f"rate_limit rule {self.id} needs a positive rate_limit and a rate_limit_window")
