"""InjectionConfig: how a generic secret is placed into a request. Exactly one of four variants."""
from __future__ import annotations

import re
from typing import Annotated, Any, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from credgate.domain.path_regex import compile_path_regex
from credgate.domain.validation import first_error_message

GENERIC_METHOD_REQUIRED = "Header name, parameter name, or URL path template is required for generic secrets"
VALUE_TOKEN = "{value}"

# RFC 9110 token characters.
_HEADER_NAME = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
# Headers the gateway owns: framing, routing and proxy credentials.
_RESERVED_HEADERS = {
    "host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te",
    "trailer", "proxy-authorization", "proxy-authenticate", "proxy-connection",
}
_GROUP_REFERENCE = re.compile(r"\$(\d+)")


class _Variant(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HeaderInjection(_Variant):
    headerName: str = Field(min_length=1)
    valueFormat: str | None = None

    @model_validator(mode="after")
    def _check(self) -> "HeaderInjection":
        if not _HEADER_NAME.match(self.headerName):
            raise ValueError("headerName must be a valid HTTP header name")
        if self.headerName.lower() in _RESERVED_HEADERS:
            raise ValueError(f"headerName {self.headerName} is managed by the gateway and cannot be injected")
        if self.valueFormat is not None and VALUE_TOKEN not in self.valueFormat:
            raise ValueError("valueFormat must contain {value}")
        if self.valueFormat is not None and any(c in self.valueFormat for c in "\r\n\0"):
            raise ValueError("valueFormat must not contain line breaks")
        return self


class QueryInjection(_Variant):
    paramName: str = Field(min_length=1)
    paramFormat: str | None = None

    @model_validator(mode="after")
    def _check(self) -> "QueryInjection":
        if self.paramFormat is not None and VALUE_TOKEN not in self.paramFormat:
            raise ValueError("paramFormat must contain {value}")
        return self


class PathTemplateInjection(_Variant):
    pathTemplate: str

    @model_validator(mode="after")
    def _check(self) -> "PathTemplateInjection":
        if not self.pathTemplate.startswith("/"):
            raise ValueError("pathTemplate must start with /")
        if self.pathTemplate.count(VALUE_TOKEN) != 1:
            raise ValueError("pathTemplate must contain {value} exactly once")
        if any(c.isspace() for c in self.pathTemplate) or "?" in self.pathTemplate or "#" in self.pathTemplate:
            raise ValueError("pathTemplate must be a path without spaces, query string or fragment")
        return self


class PathRegexInjection(_Variant):
    pathRegex: str = Field(min_length=1)
    pathReplacement: str

    @model_validator(mode="after")
    def _check(self) -> "PathRegexInjection":
        groups = compile_path_regex(self.pathRegex).groups
        if VALUE_TOKEN not in self.pathReplacement:
            raise ValueError("pathReplacement must contain {value}")
        for reference in _GROUP_REFERENCE.findall(self.pathReplacement):
            if int(reference) > groups:
                raise ValueError(f"pathReplacement refers to ${reference} but pathRegex has {groups} capture groups")
        return self


InjectionVariant = Union[HeaderInjection, QueryInjection, PathTemplateInjection, PathRegexInjection]

# The key that names each variant, and every key the variant may carry.
_VARIANT_KEYS: dict[str, tuple[type[_Variant], frozenset[str]]] = {
    "headerName": (HeaderInjection, frozenset({"headerName", "valueFormat"})),
    "paramName": (QueryInjection, frozenset({"paramName", "paramFormat"})),
    "pathTemplate": (PathTemplateInjection, frozenset({"pathTemplate"})),
    "pathRegex": (PathRegexInjection, frozenset({"pathRegex", "pathReplacement"})),
}
_ALL_KEYS = frozenset().union(*(keys for _, keys in _VARIANT_KEYS.values()))


def parse_injection_config(raw: Any) -> InjectionVariant | None:
    """Validate a raw injectionConfig into exactly one variant (ValueError with a user-facing message)."""
    if raw is None:
        return None
    if isinstance(raw, _Variant):
        return raw  # type: ignore[return-value]
    if not isinstance(raw, dict):
        raise ValueError("injectionConfig must be an object or null")
    unknown = sorted(set(raw) - _ALL_KEYS)
    if unknown:
        raise ValueError(f"injectionConfig has unknown field {unknown[0]}")
    present = [name for name in _VARIANT_KEYS if name in raw]
    if not present:
        extra = sorted(raw)
        if extra:  # e.g. only valueFormat or pathReplacement: fields of a variant without its key
            owner = next(name for name, (_, keys) in _VARIANT_KEYS.items() if extra[0] in keys)
            raise ValueError(f"injectionConfig.{extra[0]} needs {owner}")
        raise ValueError(GENERIC_METHOD_REQUIRED)
    if len(present) > 1:
        raise ValueError(f"injectionConfig must use exactly one method; got {' and '.join(present)}")
    model, allowed = _VARIANT_KEYS[present[0]]
    mixed = sorted(set(raw) - allowed)
    if mixed:
        raise ValueError(f"injectionConfig field {mixed[0]} cannot be combined with {present[0]}")
    try:
        return model.model_validate(raw)  # type: ignore[return-value]
    except ValidationError as error:
        raise ValueError(first_error_message(error, prefix="injectionConfig")) from None


InjectionConfig = Annotated[InjectionVariant | None, BeforeValidator(parse_injection_config)]


def injection_to_json(config: InjectionVariant | None) -> dict[str, Any] | None:
    return None if config is None else config.model_dump(exclude_none=True)
