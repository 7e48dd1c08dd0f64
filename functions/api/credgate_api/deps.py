"""FastAPI dependencies: the core container and the authenticated caller."""
from __future__ import annotations

from fastapi import Request

from credgate.errors import Unauthenticated
from credgate.services.core import Core, Principal


def get_core(request: Request) -> Core:
    return request.app.state.core


def get_principal(request: Request) -> Principal:
    principal = getattr(request.state, "principal", None)
    if principal is None:  # a route that needs a caller, reached without one
        raise Unauthenticated()
    return principal
