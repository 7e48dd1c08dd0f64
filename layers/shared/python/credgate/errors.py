"""Domain exceptions. The API maps them to the spec's envelope in exactly one place."""
from __future__ import annotations


class DomainError(Exception):
    """Base for errors a caller may see. `message` is shown verbatim, so it never holds a secret."""

    status = 400
    type = "invalid_request_error"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ValidationFailed(DomainError):
    """A service-level validation failure (400, envelope)."""


class Unauthenticated(DomainError):
    status = 401
    type = "authentication_error"

    def __init__(self, message: str = "Invalid API key or token.") -> None:
        super().__init__(message)


class Forbidden(DomainError):
    status = 403
    type = "permission_error"

    def __init__(self, message: str = "Insufficient permissions") -> None:
        super().__init__(message)


class NotFound(DomainError):
    status = 404
    type = "not_found_error"


class Conflict(DomainError):
    status = 409


class Gone(DomainError):
    status = 410


class DependencyUnavailable(DomainError):
    """A backing service (KMS, DynamoDB, SES) failed; the caller may retry with backoff."""

    status = 500
    type = "api_error"

    def __init__(self, message: str = "The service is temporarily unavailable. Retry with exponential backoff.") -> None:
        super().__init__(message)


class ConditionFailed(Exception):
    """A conditional store write lost its condition; `index` names the failing operation."""

    def __init__(self, index: int | None = None) -> None:
        super().__init__(f"condition failed at operation {index}")
        self.index = index


class IntegrityError(Exception):
    """Stored data failed an integrity check (tampered ciphertext, wrong encryption context)."""
