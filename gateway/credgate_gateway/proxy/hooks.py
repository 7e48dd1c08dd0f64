"""The seam between the proxy engine and the gateway pipeline: the engine moves bytes, the hooks decide.

Header lists are `(name, value)` str pairs in the client's order and case, decoded as latin-1.
The engine owns message framing and routing, so the headers a hook sees (and returns) never carry
Host, Content-Length, Transfer-Encoding, Expect, hop-by-hop headers or any Proxy-* header: the engine
writes Host for the upstream host (with the port when it is not the scheme's default) and re-frames
the body itself; such names in a hook's `Forward.headers` are dropped. Names and values a hook
returns must not contain CR, LF or NUL, and must be latin-1: otherwise the engine answers 500
`internal_error` rather than send them.
"""
from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any, Protocol


class BodyPeek(Protocol):
    """The request body as seen by a hook before the engine forwards it."""

    has_body: bool
    length: int | None
    """The declared Content-Length, or None for a chunked body (or no body)."""

    async def peek(self, max_bytes: int) -> bytes:
        """Up to `max_bytes` from the start of the body (less when the body is shorter).

        The bytes stay buffered and go upstream unchanged. Only valid inside `on_request`. With
        `Expect: 100-continue` the engine sends the 100 first. Raises `BodyUnavailable` when the client
        goes away or stalls (Timeouts.stream_idle) first; left uncaught, the engine answers 408.
        """
        ...


class BodyUnavailable(Exception):
    """The client disconnected or stalled while a hook waited for the request body."""


@dataclass(slots=True)
class ProxyRequest:
    scheme: str
    """"https" (CONNECT tunnel or absolute-form https://) or "http"."""
    host: str
    """Lowercase, no port, trailing dot removed; IPv6 without brackets."""
    port: int
    method: str
    target: str
    """Origin-form path and optional ?query exactly as the client sent it (or "*")."""
    headers: list[tuple[str, str]]
    client: tuple[str, int]
    body: BodyPeek
    tunneled: bool = False
    """True inside a CONNECT tunnel (the agent token then came from the CONNECT request)."""

    @property
    def path(self) -> str:
        """The target without its query string."""
        return self.target.partition("?")[0]


@dataclass(slots=True)
class Respond:
    """Answer the agent from the gateway; nothing goes upstream. The engine adds Content-Length."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    error: str | None = None
    """A stable error code for the completion record (e.g. "blocked_by_policy"), if this is a refusal."""
    note: Any = None
    """Anything the pipeline wants back in this request's RequestRecord (e.g. the injected secret ids)."""


class ResponseObserver(Protocol):
    """Sees the upstream response as it streams to the agent (LLM usage metering). Cheap and synchronous.

    `headers` are the response headers without hop-by-hop ones; chunks are the body as delivered by
    the upstream after de-chunking (still content-encoded, e.g. gzip, when the upstream compressed it).
    Exceptions raised here are logged once and the observer is dropped; the response continues.
    """

    def on_head(self, status: int, headers: list[tuple[str, str]]) -> None: ...

    def on_chunk(self, data: bytes) -> None: ...

    def on_end(self, complete: bool) -> None:
        """Called exactly once after on_head: complete=False when the stream was cut short."""
        ...


@dataclass(slots=True)
class Forward:
    """Send the request upstream (to the same scheme/host/port) with these method, target and headers."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    observer: ResponseObserver | None = None
    note: Any = None
    """Anything the pipeline wants back in this request's RequestRecord (e.g. the injected secret ids)."""


@dataclass(slots=True)
class RequestRecord:
    """What happened to one request, for the one JSON log line the pipeline writes per request.

    A CONNECT produces a record only when it fails (407, 400, client TLS handshake failure); the
    requests inside a tunnel each produce their own.
    """

    method: str
    scheme: str
    host: str
    port: int
    path: str
    """The target without its query string (queries can carry secrets)."""
    status: int
    """The status sent to the agent; 0 when none was sent (client gone before the head)."""
    bytes_in: int
    """Request body bytes received from the agent."""
    bytes_out: int
    """Response body bytes sent to the agent."""
    duration: float
    """Seconds (monotonic clock) from the complete request head to the end of the response."""
    error: str | None
    """A stable code when the request failed or was refused, else None."""
    client: tuple[str, int]
    tunneled: bool
    note: Any = None
    """The `note` of the hook's Forward or Respond, or None."""


class ProxyHooks(Protocol):
    async def authenticate(self, token: str | None) -> Any | None:
        """The agent identity for a proxy token, or None to answer 407.

        Called at CONNECT and again for every request inside the tunnel (so that a revoked token stops
        an open tunnel), and for every plain absolute-form request. Keep it cheap (cache).
        """
        ...

    async def on_request(self, identity: Any, request: ProxyRequest) -> Forward | Respond:
        """Decide what to do with one request. May take minutes (manual approval): only this
        request waits. Raising answers 500 `internal_error`."""
        ...

    # Optional: def decide_now(self, token: str | None, request: ProxyRequest) -> tuple[Any, Forward | Respond] | None
    #   The same decision as authenticate + on_request when it needs no waiting (warm caches, nothing
    #   to count or hold): the engine then acts on it from the parsing callback, with no Task. None
    #   means "not now": the engine takes the awaited path. It must not peek at the body.

    def on_complete(self, identity: Any | None, record: RequestRecord) -> None:
        """Called once per request when it is over (synchronously, on the event loop: keep it short)."""
        ...


class ServerCertificates(Protocol):
    """Where the engine gets the TLS server context for an intercepted host (the gateway CA)."""

    def server_context(self, host: str) -> ssl.SSLContext: ...
