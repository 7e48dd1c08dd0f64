"""FastAPI dependencies: the core container and the authenticated caller."""
from __future__ import annotations

from fastapi import Request

from credgate.errors import Unauthenticated
from credgate.services.core import Core, Principal


async def get_core(request: Request) -> Core:  # async: no thread-pool hop for a lookup
    return request.app.state.core


async def get_principal(request: Request) -> Principal:
    principal = getattr(request.state, "principal", None)
    if principal is None:  # a route that needs a caller, reached without one
        raise Unauthenticated()
    return principal
