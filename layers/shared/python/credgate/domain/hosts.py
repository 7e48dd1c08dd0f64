"""Host and path pattern validation (the syntax; matching lives in credgate.policy)."""
from __future__ import annotations

import re

_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_HOST_PATTERN = re.compile(rf"^(?:\*\.)?{_LABEL}(?:\.{_LABEL})*$")


def validate_host_pattern(value: str) -> str:
    """Normalize a host pattern or raise ValueError with the spec's message."""
    lowered = value.strip().lower()
    if lowered.startswith(("http://", "https://")) or "://" in lowered:
        raise ValueError("Enter a hostname, not a URL (remove http:// or https://)")
    if "/" in value:
        raise ValueError("Enter a hostname only, not a path (use the path pattern field for paths)")
    if any(c.isspace() for c in value):
        raise ValueError("Host pattern must not contain spaces")
    if not value:
        raise ValueError("Host pattern is required")
    if len(lowered) > 253 or not _HOST_PATTERN.match(lowered):
        raise ValueError(
            "Host pattern must be a hostname such as api.example.com, optionally starting with *. for subdomains"
        )
    return lowered


def validate_path_pattern(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    if value != "*" and not value.startswith("/"):
        raise ValueError("Path pattern must be * or start with /")
    if any(c.isspace() for c in value) or "?" in value or "#" in value:
        raise ValueError("Path pattern must be a path without spaces, query string or fragment")
    return value
