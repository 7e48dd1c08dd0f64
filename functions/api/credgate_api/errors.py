"""The one place where errors become the spec's two body shapes."""
from __future__ import annotations

import logging
import traceback

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from credgate.domain.validation import error_message
from credgate.errors import DomainError

log = logging.getLogger("credgate.api")

_HTTP_TYPES = {401: "authentication_error", 403: "permission_error", 404: "not_found_error"}


def envelope(status: int, message: str, error_type: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": error_type}}, status_code=status, headers=headers)


def domain_error_response(error: DomainError) -> JSONResponse:
    return envelope(error.status, error.message, error.type)


def flat(message: str, status: int = 400) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _validation_message(error: RequestValidationError) -> str:
    first = error.errors()[0]
    if first["type"] == "json_invalid":
        return "Request body is not valid JSON"
    # A whole-body error from one of our model validators carries its own message (e.g. "No fields to update").
    if tuple(first["loc"]) == ("body",) and first["type"] != "value_error":
        return "Request body must be a JSON object"
    return error_message(first)  # type: ignore[arg-type]


def unexpected_error_log(error: BaseException) -> str:
    """Type and stack frames only: an exception's text may quote input, and input may be a secret."""
    frames = "".join(traceback.format_tb(error.__traceback__))
    return f"{type(error).__name__}\n{frames}"


def install(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, error: RequestValidationError) -> JSONResponse:
        return flat(_validation_message(error))

    @app.exception_handler(DomainError)
    async def _domain(_: Request, error: DomainError) -> JSONResponse:
        return domain_error_response(error)

    @app.exception_handler(HTTPException)
    async def _http(_: Request, error: HTTPException) -> JSONResponse:
        if error.status_code == 400:  # FastAPI's own "error parsing the body" (e.g. not UTF-8): route validation
            return flat("Request body is not valid JSON")
        if error.status_code == 404:
            return envelope(404, "Not found", "not_found_error")
        if error.status_code == 405:
            return envelope(405, "Method not allowed", "invalid_request_error")
        return envelope(error.status_code, str(error.detail), _HTTP_TYPES.get(error.status_code, "invalid_request_error"))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, error: Exception) -> JSONResponse:
        log.error("unhandled error on %s %s: %s", request.method, request.url.path, unexpected_error_log(error))
        return envelope(500, "Internal server error. Retry with exponential backoff.", "api_error")
