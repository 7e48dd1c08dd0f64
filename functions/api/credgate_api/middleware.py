"""Authentication for every request, before routing: unknown paths need a credential too."""
from __future__ import annotations

import logging
import time
from typing import Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from credgate.errors import DomainError
from credgate.services.auth import RouteScope, route_scope
from credgate.services.core import Principal
from credgate_api.errors import domain_error_response, envelope, unexpected_error_log

PrincipalResolver = Callable[[Request], "Principal | None"]
log = logging.getLogger("credgate.api")


class AuthenticationMiddleware:
    def __init__(self, app: ASGIApp, resolver: PrincipalResolver) -> None:
        self.app = app
        self.resolver = resolver

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request = Request(scope)
        status = {"code": 500}

        async def send_and_record(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            if route_scope(scope["method"], scope["path"]) is RouteScope.PUBLIC:
                principal = None
            elif getattr(self.resolver, "blocking", True):  # store reads must stay off the event loop
                principal = await run_in_threadpool(self.resolver, request)
            else:
                principal = self.resolver(request)
        except DomainError as error:
            principal = None
            await domain_error_response(error)(scope, receive, send_and_record)
        except Exception as error:  # noqa: BLE001 - never leak internals, always answer in the spec's shape
            principal = None
            log.error("authentication failed unexpectedly: %s", unexpected_error_log(error))
            await envelope(500, "Internal server error. Retry with exponential backoff.", "api_error")(
                scope, receive, send_and_record
            )
        else:
            scope.setdefault("state", {})["principal"] = principal
            await self.app(scope, receive, send_and_record)
        log.info(
            "request",
            extra={
                "method": scope["method"],
                "path": scope["path"],
                "status": status["code"],
                "durationMs": round((time.perf_counter() - started) * 1000, 2),
                "organizationId": principal.organization_id if principal else None,
                "credential": principal.kind.value if principal else None,
            },
        )
