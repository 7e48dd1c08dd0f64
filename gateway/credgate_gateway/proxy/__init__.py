"""The gateway's intercepting HTTP/1.1 proxy engine. It moves bytes; the hooks (the pipeline) decide."""
from credgate_gateway.proxy.config import ConnectRoutes, Limits, Timeouts
from credgate_gateway.proxy.hooks import (
    BodyPeek,
    BodyUnavailable,
    Forward,
    ProxyHooks,
    ProxyRequest,
    RequestRecord,
    Respond,
    ResponseObserver,
    ServerCertificates,
)
from credgate_gateway.proxy.server import BackgroundProxy, EngineStats, ProxyServer
from credgate_gateway.proxy.wire import proxy_token

__all__ = [
    "BackgroundProxy",
    "BodyPeek",
    "BodyUnavailable",
    "ConnectRoutes",
    "EngineStats",
    "Forward",
    "Limits",
    "ProxyHooks",
    "ProxyRequest",
    "ProxyServer",
    "RequestRecord",
    "Respond",
    "ResponseObserver",
    "ServerCertificates",
    "Timeouts",
    "proxy_token",
]
