"""Host and path matching: normalization of the request side, compiled matchers for the stored patterns.

Host patterns are exact (`api.example.com`) or a leading `*.` (`*.example.com`: any subdomain depth, never
the apex). Path patterns: `*` or None match every path; `/a/*` matches `/a` and everything below it but not
`/ab`; `/a*` is a plain prefix; a pattern without `*` is exact; a `*` elsewhere matches any run of characters.
"""
from __future__ import annotations

import re
from collections.abc import Callable

PathMatcher = Callable[[str], object]
"""Called with a canonical request path; truthy when the pattern matches. None stands for 'every path'."""

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_PERCENT_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_REPEATED_SLASHES = re.compile(r"//+")
_PORT = re.compile(r":\d*$")


def normalize_host(host: str) -> str:
    """The request host as patterns are stored: lowercase, no trailing dot, no port."""
    host = host.strip().lower()
    if ":" in host:
        if host.startswith("["):
            host = host[: host.find("]") + 1] or host
        elif host.count(":") == 1:
            host = _PORT.sub("", host)
    if host.endswith("."):
        host = host.rstrip(".")
    return host


def request_path(target: str) -> str:
    """The canonical path of a request target, as path patterns are matched against it.

    The query and fragment are dropped. Percent-escapes of unreserved characters are decoded, repeated
    slashes collapsed and dot-segments resolved, as the upstream will most likely read them, so that
    `/%61dmin`, `//admin` or `/x/../admin` cannot step around a rule written for `/admin`.
    """
    path = target.partition("?")[0]
    if "#" in path:
        path = path.partition("#")[0]
    if not path:
        return "/"
    if "%" in path or "//" in path or "/." in path:
        return canonical_path(path)
    return path


def canonical_path(path: str) -> str:
    if "%" in path:
        path = _PERCENT_ESCAPE.sub(_decode_unreserved, path)
    if "//" in path:
        path = _REPEATED_SLASHES.sub("/", path)
    if path.startswith("/") and "/." in path:
        path = _remove_dot_segments(path)
    return path


def _decode_unreserved(escape: re.Match[str]) -> str:
    char = chr(int(escape.group(1), 16))
    return char if char in _UNRESERVED else escape.group(0).upper()


def _remove_dot_segments(path: str) -> str:
    segments = path.split("/")[1:]
    kept: list[str] = []
    for segment in segments:
        if segment == ".":
            continue
        if segment == "..":
            if kept:
                kept.pop()
            continue
        kept.append(segment)
    result = "/" + "/".join(kept)
    if segments[-1] in (".", "..") and not result.endswith("/"):
        result += "/"
    return result


def host_matches(pattern: str, host: str) -> bool:
    """Whether a stored (normalized) host pattern matches a normalized request host."""
    if pattern.startswith("*."):
        return host.endswith(pattern[1:]) and len(host) > len(pattern) - 1
    return host == pattern


def host_specificity(pattern: str) -> tuple[int, int]:
    """Sort key, lower is more specific: exact hosts first, then deeper wildcards before shallower ones."""
    if pattern.startswith("*."):
        return (1, -pattern.count("."))
    return (0, 0)


def compile_path_pattern(pattern: str | None) -> PathMatcher | None:
    """A matcher for a canonical request path; None when the pattern matches every path."""
    if pattern is None or pattern == "*":
        return None
    pattern = canonical_path(pattern)
    star = pattern.find("*")
    if star == -1:
        return pattern.__eq__
    if star == len(pattern) - 1:
        prefix = pattern[:-1]
        if prefix.endswith("/") and len(prefix) > 1:
            parent = prefix[:-1]
            return lambda path: path.startswith(prefix) or path == parent
        return lambda path: path.startswith(prefix)
    if pattern.endswith("/*"):
        regex = _glob(pattern[:-2]) + "(?:/.*)?"
    else:
        regex = _glob(pattern)
    return re.compile(regex, re.DOTALL).fullmatch


def _glob(pattern: str) -> str:
    return ".*".join(re.escape(part) for part in pattern.split("*"))


def path_specificity(pattern: str | None) -> tuple[int, int]:
    """Sort key, lower is more specific: exact paths, then longer literal prefixes, then 'every path'."""
    if pattern is None or pattern == "*":
        return (2, 0)
    if "*" not in pattern:
        return (0, -len(pattern))
    return (1, -len(pattern.replace("*", "")))
