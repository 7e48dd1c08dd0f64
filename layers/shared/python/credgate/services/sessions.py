"""Browser sign-in by email link, and the sessions it opens (stored hashed, with expiry)."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from credgate.clock import epoch, iso
from credgate.errors import ConditionFailed, Unauthenticated, ValidationFailed
from credgate.keys import key_hash, new_token
from credgate.services import accounts
from credgate.services.core import Core
from credgate.services.records import Item, key_item
from credgate.store import schema
from credgate.store.ops import Absent, Delete, Exists, Put

INVALID_LINK = "This sign-in link is invalid or has expired. Request a new one."


@dataclass(frozen=True)
class SignedIn:
    session_token: str
    user: Item
    redirect_to: str
    max_age: int


def _safe_redirect(core: Core, redirect_to: str | None) -> str:
    """Only our own app: a path, or an absolute URL on the app's origin (no open redirect)."""
    app = core.settings.app_url.rstrip("/")
    if not redirect_to:
        return app + "/"
    if redirect_to.startswith("/") and not redirect_to.startswith("//") and "\\" not in redirect_to:
        return app + redirect_to
    target, origin = urlsplit(redirect_to), urlsplit(app)
    if (target.scheme, target.netloc) == (origin.scheme, origin.netloc):
        return redirect_to
    raise ValidationFailed("redirectTo must be a path or a URL of this application")


def send_link(
    core: Core,
    email: str,
    redirect_to: str | None,
    *,
    subject: str,
    intro: str,
    ttl_seconds: int | None = None,
    **attached: str,
) -> None:
    """Mail a single-use sign-in link; `attached` travels with it (e.g. an invitation to accept)."""
    target = _safe_redirect(core, redirect_to)
    token = new_token()
    expires = core.clock.now() + timedelta(seconds=ttl_seconds or core.settings.email_link_ttl_seconds)
    link_item = key_item(
        schema.email_link(key_hash(token)), email=email, redirectTo=target, expiresAt=epoch(expires), **attached
    )
    core.store.write(Put(link_item, Absent()))
    link = f"{core.settings.api_url.rstrip('/')}/v1/auth/callback?token={token}"
    core.mailer.send(email, subject, f"{intro}\n\n{link}\n\nThe link works once and expires at {iso(expires)}.", [link])


def request_sign_in(core: Core, email: str, redirect_to: str | None) -> None:
    send_link(core, email, redirect_to, subject="Your credgate sign-in link", intro="Open this link to sign in to credgate:")


def complete_sign_in(core: Core, token: str) -> SignedIn:
    """Consume the link (once), make sure the user exists, accept an attached invitation, open a session."""
    link_key = schema.email_link(key_hash(token))
    link = core.store.get(link_key)
    if link is None:
        raise Unauthenticated(INVALID_LINK)
    try:
        core.store.write(Delete(link_key, Exists()))
    except ConditionFailed:
        raise Unauthenticated(INVALID_LINK) from None
    user = accounts.ensure_user(core, link["email"])
    if link.get("invitationId"):
        accounts.accept_invitation(core, link["organizationId"], link["invitationId"], user["id"])
    session_token = new_token()
    ttl = core.settings.session_ttl_seconds
    expires = core.clock.now() + timedelta(seconds=ttl)
    core.store.write(
        Put(key_item(schema.session(key_hash(session_token)), userId=user["id"], expiresAt=epoch(expires)), Absent())
    )
    return SignedIn(session_token, user, link["redirectTo"], ttl)


def sign_out(core: Core, session_token: str | None) -> None:
    if session_token:
        core.store.write(Delete(schema.session(key_hash(session_token))))
