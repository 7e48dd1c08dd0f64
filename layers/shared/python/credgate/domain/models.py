"""Request and response models of the management API, mirroring the spec's tables and limits."""
from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from credgate.domain.enums import (
    ApprovalStatus,
    PolicyMode,
    RateLimitWindow,
    Role,
    RuleAction,
    Scope,
    SecretMode,
    SecretType,
    ValueSource,
)
from credgate.domain.hosts import validate_host_pattern, validate_path_pattern
from credgate.domain.injection import GENERIC_METHOD_REQUIRED, InjectionConfig

NO_FIELDS_TO_UPDATE = "No fields to update"
IDENTIFIER_MESSAGE = (
    "Identifier must be 1-50 characters, start with a letter or number, "
    "and contain only lowercase letters, numbers, and hyphens"
)
ONEPASSWORD_PROJECT_ONLY = "1Password is only available for project-scoped secrets"
_IDENTIFIER = re.compile(r"[a-z0-9][a-z0-9-]{0,49}")
_OP_REF = re.compile(r"op://[^/\s]+/[^/\s]+(/[^/\s]+){1,2}")


def _identifier(value: str) -> str:
    if not _IDENTIFIER.fullmatch(value):  # fullmatch: "$" would let a trailing newline through
        raise ValueError(IDENTIFIER_MESSAGE)
    return value


def _host_pattern(value: str) -> str:
    return validate_host_pattern(value)


Name = Annotated[str, Field(min_length=1, max_length=255)]
Identifier = Annotated[str, AfterValidator(_identifier)]
HostPattern = Annotated[str, AfterValidator(_host_pattern)]
PathPattern = Annotated[str | None, Field(default=None, max_length=1000), AfterValidator(validate_path_pattern)]
SecretValue = Annotated[str, Field(min_length=1, max_length=10000)]


class Request(BaseModel):
    """A request body: unknown fields are errors, so a typo never silently drops a setting."""

    model_config = ConfigDict(extra="forbid")


class Patch(Request):
    """A partial update: only the fields sent change; `nullable` fields may be cleared with null."""

    empty_message: ClassVar[str] = NO_FIELDS_TO_UPDATE
    nullable: ClassVar[frozenset[str]] = frozenset()

    @model_validator(mode="before")
    @classmethod
    def _not_empty(cls, data: Any) -> Any:
        if isinstance(data, dict):
            if not data:
                raise ValueError(cls.empty_message)
            for name, value in data.items():
                if value is None and name not in cls.nullable and name in cls.model_fields:
                    raise ValueError(f"{name} cannot be null")
        return data

    def changes(self) -> dict[str, Any]:
        return self.model_dump(exclude_unset=True)


# Agents


class AgentCreate(Request):
    name: Name
    identifier: Identifier
    secretMode: SecretMode = SecretMode.ALL


class AgentPatch(Patch):
    name: Name | None = None
    identifier: Identifier | None = None
    secretMode: SecretMode | None = None



class AgentSecrets(Request):
    secretIds: list[str] = Field(max_length=500)


class Agent(BaseModel):
    id: str
    name: str
    identifier: str
    isDefault: bool
    secretMode: SecretMode
    secretIds: list[str]
    createdAt: datetime


class AgentCreated(Agent):
    accessToken: str


class AgentToken(BaseModel):
    id: str
    accessToken: str


class GranularAccessEntry(BaseModel):
    agentId: str
    agentName: str
    connectionId: str
    provider: str
    connectionLabel: str
    policy: dict[str, Any]


# Secrets


class _SecretFields(Request):
    name: Name
    type: SecretType
    hostPattern: HostPattern
    pathPattern: PathPattern = None
    injectionConfig: InjectionConfig = None

    @model_validator(mode="after")
    def _injection_matches_type(self) -> "_SecretFields":
        check_injection_for_type(self.type, self.injectionConfig)
        return self


def check_injection_for_type(secret_type: SecretType, injection: Any) -> None:
    if secret_type is SecretType.GENERIC and injection is None:
        raise ValueError(GENERIC_METHOD_REQUIRED)
    if secret_type is not SecretType.GENERIC and injection is not None:
        raise ValueError(f"injectionConfig is used for generic secrets only; {secret_type.value} secrets are injected by the gateway")


class SecretCreate(_SecretFields):
    """A project secret: an inline value or a 1Password reference."""

    valueSource: ValueSource = ValueSource.INLINE
    value: SecretValue | None = None
    opRef: str | None = None

    @model_validator(mode="after")
    def _source(self) -> "SecretCreate":
        if self.valueSource is ValueSource.INLINE:
            if self.value is None:
                raise ValueError("value is required for inline secrets")
            if self.opRef is not None:
                raise ValueError("opRef is only used with valueSource onepassword")
        else:
            if self.opRef is None or not _OP_REF.fullmatch(self.opRef):
                raise ValueError("opRef must be a 1Password reference such as op://vault/item/field")
            if self.value is not None:
                raise ValueError("value must not be sent with valueSource onepassword")
        return self


class OrgSecretCreate(_SecretFields):
    valueSource: ValueSource = ValueSource.INLINE
    value: SecretValue | None = None

    @model_validator(mode="before")
    @classmethod
    def _inline_only(cls, data: Any) -> Any:
        if isinstance(data, dict) and (data.get("valueSource") == ValueSource.ONEPASSWORD.value or "opRef" in data):
            raise ValueError(ONEPASSWORD_PROJECT_ONLY)
        return data

    @model_validator(mode="after")
    def _value_required(self) -> "OrgSecretCreate":
        if self.value is None:
            raise ValueError("value: Field required")
        return self


class SecretPatch(Patch):
    nullable: ClassVar[frozenset[str]] = frozenset({"pathPattern", "injectionConfig"})

    name: Name | None = None
    value: SecretValue | None = None
    opRef: str | None = None
    hostPattern: HostPattern | None = None
    pathPattern: PathPattern = None
    injectionConfig: InjectionConfig = None



class Secret(BaseModel):
    id: str
    name: str
    type: SecretType
    valueSource: ValueSource
    opRef: str | None = None
    hostPattern: str
    pathPattern: str | None
    injectionConfig: dict[str, Any] | None
    preview: str | None
    scope: Scope
    readOnly: bool
    createdAt: datetime
    updatedAt: datetime


# Organization, projects, team, user


class OrgSettings(BaseModel):
    policyMode: PolicyMode


class OrgSettingsPatch(Patch):
    policyMode: PolicyMode


class ProjectCreate(Request):
    name: Name


class ProjectPatch(Patch):
    name: Name


class Project(BaseModel):
    id: str
    name: str
    isDefault: bool
    createdAt: datetime


class Member(BaseModel):
    userId: str
    email: str
    name: str | None
    role: Role
    joinedAt: datetime


class InvitationCreate(Request):
    email: Annotated[str, Field(min_length=3, max_length=254)]
    role: Literal["admin", "member"]

    @field_validator("email")
    @classmethod
    def _email(cls, value: str) -> str:
        return normalize_email(value)


class Invitation(BaseModel):
    id: str
    email: str
    role: Role
    createdAt: datetime
    expiresAt: datetime


class MemberRolePatch(Request):
    role: Literal["admin", "member"]


class User(BaseModel):
    id: str
    email: str
    name: str | None
    createdAt: datetime


class UserPatch(Patch):
    name: Name


class ApiKey(BaseModel):
    apiKey: str


class EmailLinkRequest(Request):
    email: Annotated[str, Field(min_length=3, max_length=254)]
    redirectTo: str | None = Field(default=None, max_length=2000)

    @field_validator("email")
    @classmethod
    def _email(cls, value: str) -> str:
        return normalize_email(value)


_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def normalize_email(value: str) -> str:
    email = value.strip().lower()
    if not _EMAIL.match(email):
        raise ValueError("Enter a valid email address")
    return email


# Policy rules and approvals

RATE_FIELDS_REQUIRED = "rateLimit and rateLimitWindow are required when action is rate_limit"
_METHOD = re.compile(r"^[A-Z]{1,20}$")


def _method(value: str | None) -> str | None:
    if value is None or value.strip() in ("", "*"):
        return None
    method = value.strip().upper()
    if not _METHOD.match(method):
        raise ValueError("method must be an HTTP method such as GET or POST, or * for any")
    return method


Method = Annotated[str | None, AfterValidator(_method)]
RateLimit = Annotated[int, Field(ge=1, le=1_000_000)]


class RuleCreate(Request):
    name: Name
    hostPattern: HostPattern
    pathPattern: PathPattern = None
    method: Method = None
    action: RuleAction
    enabled: bool = True
    agentId: str | None = None
    rateLimit: RateLimit | None = None
    rateLimitWindow: RateLimitWindow | None = None

    @model_validator(mode="after")
    def _rate_fields(self) -> "RuleCreate":
        if self.action is RuleAction.RATE_LIMIT and (self.rateLimit is None or self.rateLimitWindow is None):
            raise ValueError(RATE_FIELDS_REQUIRED)
        return self


class RulePatch(Patch):
    empty_message: ClassVar[str] = "At least one field must be provided"
    nullable: ClassVar[frozenset[str]] = frozenset({"pathPattern", "method", "agentId", "rateLimit", "rateLimitWindow"})

    name: Name | None = None
    hostPattern: HostPattern | None = None
    pathPattern: PathPattern = None
    method: Method = None
    action: RuleAction | None = None
    enabled: bool | None = None
    agentId: str | None = None
    rateLimit: RateLimit | None = None
    rateLimitWindow: RateLimitWindow | None = None



class Rule(BaseModel):
    id: str
    name: str
    hostPattern: str
    pathPattern: str | None
    method: str | None
    action: RuleAction
    enabled: bool
    agentId: str | None
    rateLimit: int | None
    rateLimitWindow: RateLimitWindow | None
    scope: Scope
    createdAt: datetime
    updatedAt: datetime


class Approval(BaseModel):
    id: str
    status: ApprovalStatus
    projectId: str
    agentId: str
    agentName: str | None
    ruleId: str | None
    ruleName: str | None
    method: str
    host: str
    path: str
    bodyPreview: str | None
    createdAt: datetime
    expiresAt: datetime
    decidedAt: datetime | None = None
    decidedBy: str | None = None


class ApprovalDecision(Request):
    decision: Literal["approve", "deny"]


class ContainerConfig(BaseModel):
    agentId: str
    identifier: str
    gatewayUrl: str
    caCertPath: str
    env: dict[str, str]
    caCert: str
