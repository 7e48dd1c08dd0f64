"""Turning pydantic's reports into the one message the flat error shape carries."""
from __future__ import annotations

from pydantic import ValidationError
from pydantic_core import ErrorDetails

# Our own validators raise ValueError with the spec's exact message; pydantic prefixes it.
_OWN_MESSAGE_PREFIX = "Value error, "


def error_message(error: ErrorDetails, prefix: str = "") -> str:
    message = error["msg"]
    if error["type"] == "value_error":
        return message.removeprefix(_OWN_MESSAGE_PREFIX)
    location = ".".join(str(part) for part in (prefix, *error["loc"]) if part not in ("", "body"))
    return f"{location}: {message}" if location else message


def first_error_message(error: ValidationError, prefix: str = "") -> str:
    return error_message(error.errors()[0], prefix)
