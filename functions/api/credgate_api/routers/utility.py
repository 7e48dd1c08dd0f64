from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

router = APIRouter(tags=["Utility"])


@router.get("/health", summary="Liveness: 200 once the API (and, self-hosted, the gateway) accepts connections")
def health(request: Request) -> JSONResponse:
    ready = request.app.state.ready()
    return JSONResponse({"status": "ok" if ready else "starting"}, status_code=200 if ready else 503)
