"""Placing secrets into a request: compiled once per secret, applied per request as a plan.

A secret value is only ever inserted as data: no format string, regex template or URL round trip sees it,
so a value such as `$1`, `\\g<0>` or `{value}` stays literal. A value that would change the request's
structure (a line break in a header, a `/` in a path) is refused with InjectionRefused, never mangled.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any
from urllib.parse import quote, unquote

from credgate.domain.injection import (
    VALUE_TOKEN,
    HeaderInjection,
    PathRegexInjection,
    PathTemplateInjection,
    QueryInjection,
)
from credgate.domain.models import SecretType
from credgate.domain.path_regex import compile_path_regex
from credgate.errors import DomainError
from credgate.policy.specs import SecretSpec

Header = tuple[str, str]
CredentialKind = tuple[str, ...]
"""What a secret provides; of each kind at most one secret applies: ("anthropic",), ("openai",),
("header", lowercased name), ("query", name) or ("path",)."""
Slot = tuple[str, ...]
"""A place in the request a secret writes to: ("header", lowercased name), ("query", name) or ("path",)."""

PATH_SLOT: Slot = ("path",)

# C0 controls except tab, DEL, C1 controls, and lone surrogates (not encodable at all).
_UNSAFE_HEADER_CHARS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\ud800-\udfff]")
# RFC 3986 pchar without pct-encoded: unreserved, sub-delims, ":" and "@".
_PATH_VALUE = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@]+")
_REPLACEMENT_TOKEN = re.compile(r"(\{value\}|\$\d+)")
_DOT_SEGMENTS = (".", "..")


class InjectionRefused(DomainError):
    """A secret cannot be placed into the request without breaking it. Names the secret, never its value."""

    status = 502
    type = "api_error"

    def __init__(self, secret_id: str, reason: str) -> None:
        super().__init__(f"Secret {secret_id} cannot be injected: {reason}")
        self.secret_id = secret_id
        self.reason = reason


def credential_kind(spec: SecretSpec) -> CredentialKind:
    injection = spec.injection
    if spec.type is not SecretType.GENERIC:
        return (spec.type.value,)
    if isinstance(injection, HeaderInjection):
        return ("header", injection.headerName.lower())
    if isinstance(injection, QueryInjection):
        return ("query", injection.paramName)
    return PATH_SLOT


class _QueryEdit:
    """Sets one query parameter, leaving every other parameter byte for byte where it was."""

    __slots__ = ("name", "encoded_name", "pair")

    def __init__(self, name: str, encoded_name: str, encoded_value: str) -> None:
        self.name = name
        self.encoded_name = encoded_name
        self.pair = f"{encoded_name}={encoded_value}"

    def apply(self, query: str | None) -> str:
        if not query:
            return self.pair
        if self.encoded_name not in query and self.name not in query and "%" not in query:
            return f"{query}&{self.pair}"
        kept: list[str] = []
        replaced = False
        for parameter in query.split("&"):
            if self._names_this(parameter.partition("=")[0]):
                if not replaced:
                    kept.append(self.pair)
                    replaced = True
            else:
                kept.append(parameter)
        if not replaced:
            return f"{query}&{self.pair}"
        return "&".join(kept)

    def _names_this(self, raw_name: str) -> bool:
        return raw_name == self.encoded_name or raw_name == self.name or ("%" in raw_name and unquote(raw_name) == self.name)


class _PathPrefix:
    """A path template put in front of the request path: `/bot{value}` + `/send` -> `/bot<value>/send`."""

    __slots__ = ("prefix",)

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def apply(self, path: str) -> str:
        if not path.startswith("/"):
            path = "/" + path
        if self.prefix.endswith("/"):
            return self.prefix + path[1:]
        return self.prefix + path


class _PathRewrite:
    """The first match of a regex in the path, replaced by literal text, capture groups and the value."""

    __slots__ = ("secret_id", "regex", "tokens", "check_dot_segments")

    def __init__(
        self, secret_id: str, regex: Any, tokens: tuple[str | int | None, ...], check_dot_segments: bool
    ) -> None:
        self.secret_id = secret_id
        self.regex = regex
        self.tokens = tokens  # str: literal text, int: a capture group, None: the value
        self.check_dot_segments = check_dot_segments

    def apply(self, path: str, value: str) -> str:
        match = self.regex.search(path)
        if match is None:
            return path
        head = path[: match.start()]
        pieces = [head]
        value_spans: list[tuple[int, int]] = []
        length = len(head)
        for token in self.tokens:
            if token is None:
                piece = value
                value_spans.append((length, length + len(value)))
            elif isinstance(token, int):
                piece = match.group(token) or ""
            else:
                piece = token
            pieces.append(piece)
            length += len(piece)
        pieces.append(path[match.end():])
        result = "".join(pieces)
        if self.check_dot_segments:
            for start, end in value_spans:
                if _segment_around(result, start, end) in _DOT_SEGMENTS:
                    raise InjectionRefused(self.secret_id, "the value would form a '.' or '..' path segment")
        return result


def _segment_around(path: str, start: int, end: int) -> str:
    segment_end = path.find("/", end)
    return path[path.rfind("/", 0, start) + 1 : len(path) if segment_end == -1 else segment_end]


class SecretInjection:
    """One secret compiled into what it removes and adds. Holds the value: its repr never shows it."""

    __slots__ = (
        "spec", "kind", "slots", "refusal", "remove_headers", "add_headers", "query", "path_prefix", "path_rewrite", "_value"
    )

    def __init__(self, spec: SecretSpec) -> None:
        self.spec = spec
        self.kind = credential_kind(spec)
        self.refusal: str | None = None
        self.remove_headers: frozenset[str] = frozenset()
        self.add_headers: tuple[Header, ...] = ()
        self.query: _QueryEdit | None = None
        self.path_prefix: _PathPrefix | None = None
        self.path_rewrite: _PathRewrite | None = None
        self._value = spec.value
        slots: set[Slot]
        injection = spec.injection
        if spec.type is SecretType.ANTHROPIC:
            slots = self._header("x-api-key", spec.value, removes=("x-api-key", "authorization"))
        elif spec.type is SecretType.OPENAI:
            slots = self._header("authorization", f"Bearer {spec.value}")
        elif isinstance(injection, HeaderInjection):
            header_value = (injection.valueFormat or VALUE_TOKEN).replace(VALUE_TOKEN, spec.value)
            slots = self._header(injection.headerName, header_value)
        elif isinstance(injection, QueryInjection):
            slots = {("query", injection.paramName)}
            self._compile_query(injection)
        elif isinstance(injection, PathTemplateInjection):
            slots = {PATH_SLOT}
            self._compile_path_template(injection)
        elif isinstance(injection, PathRegexInjection):
            slots = {PATH_SLOT}
            self._compile_path_regex(injection)
        else:
            raise ValueError(f"secret {spec.id} has an unknown injection config")
        if not spec.value:
            self.refusal = "the value is empty"
        self.slots = frozenset(slots)

    def __repr__(self) -> str:
        return f"SecretInjection(id={self.spec.id!r}, kind={self.kind!r})"

    def _header(self, name: str, header_value: str, removes: Iterable[str] = ()) -> set[Slot]:
        removed = {name.lower(), *removes}
        self.remove_headers = frozenset(removed)
        self.add_headers = ((name, header_value),)
        if _UNSAFE_HEADER_CHARS.search(header_value):
            self.refusal = "the header value contains control characters or invalid text"
        return {("header", header_name) for header_name in removed}

    def _compile_query(self, injection: QueryInjection) -> None:
        parameter_value = (injection.paramFormat or VALUE_TOKEN).replace(VALUE_TOKEN, self._value)
        try:
            encoded_name, encoded_value = quote(injection.paramName, safe=""), quote(parameter_value, safe="")
            self.query = _QueryEdit(injection.paramName, encoded_name, encoded_value)
        except UnicodeEncodeError:
            self.refusal = "the value is not valid text"

    def _path_value_refusal(self) -> str | None:
        if self._value and not _PATH_VALUE.fullmatch(self._value):
            return "the value contains characters that are not allowed in a URL path"
        return None

    def _compile_path_template(self, injection: PathTemplateInjection) -> None:
        self.refusal = self._path_value_refusal()
        template = injection.pathTemplate
        at = template.index(VALUE_TOKEN)
        prefix = template[:at] + self._value + template[at + len(VALUE_TOKEN):]
        if self.refusal is None and _segment_around(prefix, at, at + len(self._value)) in _DOT_SEGMENTS:
            self.refusal = "the value would form a '.' or '..' path segment"
        self.path_prefix = _PathPrefix(prefix)

    def _compile_path_regex(self, injection: PathRegexInjection) -> None:
        self.refusal = self._path_value_refusal()
        regex = compile_path_regex(injection.pathRegex)
        tokens: list[str | int | None] = []
        for part in _REPLACEMENT_TOKEN.split(injection.pathReplacement):
            if part == VALUE_TOKEN:
                tokens.append(None)
            elif part.startswith("$") and part[1:].isdigit() and int(part[1:]) <= regex.groups:
                tokens.append(int(part[1:]))
            elif part:
                tokens.append(part)
        check_dot_segments = bool(self._value) and self._value.strip(".") == ""
        self.path_rewrite = _PathRewrite(self.spec.id, regex, tuple(tokens), check_dot_segments)

    def rewrite_path(self, path: str) -> str:
        if self.path_prefix is not None:
            return self.path_prefix.apply(path)
        assert self.path_rewrite is not None
        return self.path_rewrite.apply(path, self._value)


class InjectionPlan:
    """The secrets chosen for one request and how to apply them; `apply` is pure and cheap."""

    __slots__ = ("secrets", "secret_ids", "_refused", "_remove_headers", "_add_headers", "_queries", "_path", "_touches_target")

    def __init__(self, injections: Sequence[SecretInjection]) -> None:
        claimed: set[Slot] = set()
        for injection in injections:
            if claimed & injection.slots:
                raise ValueError(f"secret {injection.spec.id} writes to the same place as another secret of the plan")
            claimed |= injection.slots
        self.secrets: tuple[SecretSpec, ...] = tuple(injection.spec for injection in injections)
        self.secret_ids: tuple[str, ...] = tuple(spec.id for spec in self.secrets)
        self._refused = next((injection for injection in injections if injection.refusal is not None), None)
        self._remove_headers = frozenset().union(*(injection.remove_headers for injection in injections))
        self._add_headers = tuple(header for injection in injections for header in injection.add_headers)
        self._queries = tuple(injection.query for injection in injections if injection.query is not None)
        self._path = next(
            (injection for injection in injections if injection.path_prefix or injection.path_rewrite), None
        )
        self._touches_target = bool(self._queries) or self._path is not None

    @classmethod
    def for_secrets(cls, secrets: Iterable[SecretSpec]) -> "InjectionPlan":
        return cls([SecretInjection(spec) for spec in secrets])

    def __repr__(self) -> str:
        return f"InjectionPlan(secrets={[spec.id for spec in self.secrets]!r})"

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def apply(self, target: str, headers: Sequence[Header]) -> tuple[str, list[Header]]:
        """The request target and headers with every secret of the plan in place (raises InjectionRefused)."""
        if self._refused is not None:
            raise InjectionRefused(self._refused.spec.id, self._refused.refusal or "")
        if self._touches_target:
            target = self._apply_to_target(target)
        if self._remove_headers:
            remove = self._remove_headers
            new_headers = [header for header in headers if header[0].lower() not in remove]
        else:
            new_headers = list(headers)
        new_headers.extend(self._add_headers)
        return target, new_headers

    def _apply_to_target(self, target: str) -> str:
        fragment = ""
        cut = target.find("#")
        if cut != -1:
            target, fragment = target[:cut], target[cut:]
        query: str | None = None
        cut = target.find("?")
        path = target
        if cut != -1:
            path, query = target[:cut], target[cut + 1:]
        if self._path is not None:
            path = self._path.rewrite_path(path)
        for edit in self._queries:
            query = edit.apply(query)
        return path + fragment if query is None else f"{path}?{query}{fragment}"


EMPTY_PLAN = InjectionPlan(())


def apply_injections(target: str, headers: Sequence[Header], secrets: Iterable[SecretSpec]) -> tuple[str, list[Header]]:
    """Compile and apply in one go (for callers off the hot path; the gateway uses CompiledConfig.resolve)."""
    return InjectionPlan.for_secrets(secrets).apply(target, headers)

