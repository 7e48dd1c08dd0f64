"""The domain's closed vocabularies. No pydantic here: the authorizer imports this on its cold path."""
from __future__ import annotations

import enum


class Role(str, enum.Enum):
    OWNER = "owner"
    ADMIN = "admin"
    MEMBER = "member"


class SecretType(str, enum.Enum):
    ANTHROPIC = "anthropic"
    OPENAI = "openai"
    GENERIC = "generic"


class ValueSource(str, enum.Enum):
    INLINE = "inline"
    ONEPASSWORD = "onepassword"


class SecretMode(str, enum.Enum):
    ALL = "all"
    SELECTIVE = "selective"


class Scope(str, enum.Enum):
    PROJECT = "project"
    ORGANIZATION = "organization"
    PARTNER = "partner"


class PolicyMode(str, enum.Enum):
    ALLOW = "allow"
    DENY = "deny"


class RuleAction(str, enum.Enum):
    BLOCK = "block"
    MANUAL_APPROVAL = "manual_approval"
    RATE_LIMIT = "rate_limit"
    ALLOW = "allow"


class RateLimitWindow(str, enum.Enum):
    MINUTE = "minute"
    HOUR = "hour"
    DAY = "day"

    @property
    def seconds(self) -> int:
        return {"minute": 60, "hour": 3600, "day": 86400}[self.value]


class ApprovalStatus(str, enum.Enum):
    PENDING = "pending"
    APPROVED = "approved"
    DENIED = "denied"
    EXPIRED = "expired"
