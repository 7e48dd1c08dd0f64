"""The engine on loopback: fake TLS upstreams for api.example.test, routed with connect_to."""
from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import httpx
import pytest

from credgate_gateway.ca import DirectoryCAStore, GatewayCA
from credgate_gateway.proxy import BackgroundProxy, Limits, ProxyServer, Timeouts

from .fakes import API_HOST, TOKEN, FakeUpstream, Handler, RecordingHooks, ThrowawayCA, echo


@pytest.fixture(scope="session")
def upstream_ca() -> ThrowawayCA:
    return ThrowawayCA.create("engine test upstream CA")


@pytest.fixture(scope="session")
def certs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("certs")


@pytest.fixture(scope="session")
def upstream_bundle(upstream_ca: ThrowawayCA, certs_dir: Path) -> Path:
    return upstream_ca.write_cert(certs_dir / "upstream-ca.pem")


@pytest.fixture(scope="session")
def gateway_ca(certs_dir: Path) -> GatewayCA:
    return GatewayCA.load_or_create(DirectoryCAStore(certs_dir / "gateway"))


@pytest.fixture(scope="session")
def gateway_ca_file(gateway_ca: GatewayCA, certs_dir: Path) -> Path:
    return DirectoryCAStore(certs_dir / "gateway").cert_path


@pytest.fixture(scope="session")
def agent_tls(gateway_ca_file: Path) -> ssl.SSLContext:
    """What an agent trusts: the gateway CA only (so a leaked upstream cert would fail loudly)."""
    return ssl.create_default_context(cafile=str(gateway_ca_file))


@pytest.fixture
def upstreams(upstream_ca: ThrowawayCA, certs_dir: Path) -> Iterator[Callable[..., FakeUpstream]]:
    started: list[FakeUpstream] = []

    def start(handler: Handler = echo, *, tls: bool = True, hosts: tuple[str, ...] = (API_HOST,), ca: ThrowawayCA | None = None) -> FakeUpstream:
        context = (ca or upstream_ca).server_context(certs_dir, *hosts) if tls else None
        upstream = FakeUpstream(handler, tls=context).start()
        started.append(upstream)
        return upstream

    yield start
    for upstream in started:
        upstream.stop()


@pytest.fixture
def hooks() -> RecordingHooks:
    return RecordingHooks()


FAST = Timeouts(
    client_header=5,
    client_idle=5,
    client_tls_handshake=5,
    upstream_connect=5,
    upstream_response=10,
    stream_idle=10,
    upstream_pool_idle=5,
)


@pytest.fixture
def start_proxy(hooks: RecordingHooks, gateway_ca: GatewayCA, upstream_bundle: Path) -> Iterator[Callable[..., BackgroundProxy]]:
    running: list[BackgroundProxy] = []

    def start(*, connect_to: list[str] = (), timeouts: Timeouts = FAST, limits: Limits | None = None, bundle: bool = True) -> BackgroundProxy:
        server = ProxyServer(
            hooks,
            gateway_ca,
            host="127.0.0.1",
            port=0,
            connect_to=connect_to,
            upstream_ca_bundle=str(upstream_bundle) if bundle else None,
            timeouts=timeouts,
            limits=limits,
        )
        proxy = BackgroundProxy(server).start()
        running.append(proxy)
        return proxy

    yield start
    for proxy in running:
        proxy.stop(drain_timeout=2)


@dataclass
class Setup:
    proxy: BackgroundProxy
    upstream: FakeUpstream
    hooks: RecordingHooks
    agent_tls: ssl.SSLContext

    @property
    def proxy_url(self) -> str:
        return f"http://x:{TOKEN}@127.0.0.1:{self.proxy.port}"

    def client(self, token: str | None = TOKEN, **options) -> httpx.Client:
        proxy = f"http://x:{token}@127.0.0.1:{self.proxy.port}" if token else f"http://127.0.0.1:{self.proxy.port}"
        options.setdefault("timeout", 20)
        return httpx.Client(proxy=proxy, verify=self.agent_tls, trust_env=False, **options)


@pytest.fixture
def setup(upstreams, start_proxy, hooks: RecordingHooks, agent_tls: ssl.SSLContext) -> Callable[..., Setup]:
    """One upstream for https://api.example.test (and, with tls=False, http://api.example.test) and a proxy routed to it."""

    def make(handler: Handler = echo, *, tls: bool = True, timeouts: Timeouts = FAST, limits: Limits | None = None, **upstream_options) -> Setup:
        upstream = upstreams(handler, tls=tls, **upstream_options)
        port = 443 if tls else 80
        proxy = start_proxy(connect_to=[f"{API_HOST}:{port}:127.0.0.1:{upstream.port}"], timeouts=timeouts, limits=limits)
        return Setup(proxy, upstream, hooks, agent_tls)

    return make
