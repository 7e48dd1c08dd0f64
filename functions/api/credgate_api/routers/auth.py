from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse

from credgate.domain.models import EmailLinkRequest
from credgate.services import sessions
from credgate.services.auth import SESSION_COOKIE
from credgate.services.core import Core
from credgate_api.deps import get_core

router = APIRouter(tags=["User"])


def _is_https(request: Request) -> bool:
    forwarded = request.headers.get("x-forwarded-proto", "")
    return request.url.scheme == "https" or forwarded.split(",")[0].strip() == "https"


@router.post("/auth/email-link", status_code=202, summary="Email a single-use sign-in link")
def email_link(body: EmailLinkRequest, core: Core = Depends(get_core)) -> JSONResponse:
    sessions.request_sign_in(core, body.email, body.redirectTo)
    return JSONResponse({"status": "sent"}, status_code=202)


@router.get("/auth/callback", status_code=303, summary="Open a sign-in link: sets the session cookie and redirects")
def callback(request: Request, token: str = Query(min_length=1, max_length=200), core: Core = Depends(get_core)) -> Response:
    signed_in = sessions.complete_sign_in(core, token)
    response = RedirectResponse(signed_in.redirect_to, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        signed_in.session_token,
        max_age=signed_in.max_age,
        httponly=True,
        secure=_is_https(request),
        samesite="lax",
        path="/",
    )
    return response


@router.post("/auth/logout", status_code=204, summary="End the browser session")
def logout(request: Request, core: Core = Depends(get_core)) -> Response:
    sessions.sign_out(core, request.cookies.get(SESSION_COOKIE))
    response = Response(status_code=204)
    response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, secure=_is_https(request), samesite="lax")
    return response
