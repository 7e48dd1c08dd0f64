"""Tenant-written path regexes run on the gateway's hot path, shared by every tenant: they are RE2
(linear time, so no pattern can stall the gateway), not Python's backtracking `re`."""
from __future__ import annotations

from typing import Any

import re2

MAX_LENGTH = 1000
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a bad pattern is the caller's 400, not a line on stderr


def compile_path_regex(pattern: str) -> Any:
    """The compiled pattern, or ValueError with a message for the API."""
    if len(pattern) > MAX_LENGTH:
        raise ValueError(f"pathRegex must be at most {MAX_LENGTH} characters")
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as error:
        detail = error.args[0].decode() if error.args and isinstance(error.args[0], bytes) else str(error)
        raise ValueError(
            f"pathRegex is not a valid RE2 regular expression (no backreferences or lookaround): {detail}"
        ) from None
