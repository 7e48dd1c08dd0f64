"""The Fargate entry on DynamoDB + KMS (moto): several gateway tasks share one CA, see changes
within 2 s, and share rate-limit counters through the store."""
from __future__ import annotations

import asyncio
import ssl
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import pytest
import uvloop

from credgate.domain.models import RuleCreate, SecretCreate
from credgate.services import rules, secrets
from credgate.services.core import Core, CredentialKind, Principal
from credgate.services.owners import project_owner
from credgate.settings import CloudSettings
from credgate_gateway.cloud import build_gateway
from credgate_gateway.runtime import Gateway
from tests.conftest import MockedAws, make_tenant
from tests.integration.gateway_engine.fakes import FakeUpstream, ThrowawayCA

HOST = "api.cloud.test"
CHANGE_DEADLINE = 2.0


class LoopThread:
    """One event loop in a thread for the gateway tasks (the tests stay synchronous)."""

    def __init__(self) -> None:
        self.loop = uvloop.new_event_loop()  # what the task runs on
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coroutine: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture
def upstream(tmp_path: Path) -> Iterator[tuple[FakeUpstream, Path]]:
    ca = ThrowawayCA.create("cloud upstream CA")

    async def ok(request: Any) -> None:
        await request.body()
        await request.respond(200, [("content-type", "text/plain")], b"ok")

    server = FakeUpstream(ok, tls=ca.server_context(tmp_path, HOST)).start()
    yield server, ca.write_cert(tmp_path / "upstream-ca.pem")
    server.stop()


@pytest.fixture
def tasks(mocked_aws: MockedAws, upstream: tuple[FakeUpstream, Path], tmp_path: Path) -> Iterator[tuple[Core, list[Gateway]]]:
    """Two gateway tasks built by the Fargate entry point from the same environment."""
    server, bundle = upstream
    settings = CloudSettings(
        table_name=mocked_aws.new_table(),
        kms_key_id=mocked_aws.key_id,
        api_url="https://api.credgate.test",
        app_url="https://app.credgate.test",
        gateway_url="http://gateway.credgate.test:10255",
        gateway_port=0,
        region="us-east-1",
    )
    gateways = [build_gateway(settings, host="127.0.0.1") for _ in range(2)]
    for gateway in gateways:  # the test's own upstream, as --connect-to does locally
        gateway.server.routes = type(gateway.server.routes).parse([f"{HOST}:443:127.0.0.1:{server.port}"])
        gateway.server.upstream_ca_bundle = str(bundle)
    loop = LoopThread()
    for gateway in gateways:
        loop.run(gateway.start())
    yield gateways[0].tenants.core, gateways
    for gateway in gateways:
        loop.run(gateway.stop(drain_timeout=1))
    loop.close()


def _client(gateway: Gateway, token: str, ca_file: Path) -> httpx.Client:
    trust = ssl.create_default_context(cafile=str(ca_file))
    return httpx.Client(proxy=f"http://agent:{token}@127.0.0.1:{gateway.port}", verify=trust, timeout=10)


def _until(predicate: Callable[[], bool], deadline: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < deadline:
        if predicate():
            return time.monotonic() - started
        time.sleep(0.05)
    raise AssertionError(f"not observed within {deadline} s")


def test_tasks_share_one_ca_and_pick_up_a_new_secret_within_two_seconds(tasks, upstream, tmp_path):
    core, gateways = tasks
    server, _ = upstream
    first, second = (gateway.server.certificates for gateway in gateways)
    assert first.cert_pem == second.cert_pem  # the second task found the first task's CA in the store
    ca_file = tmp_path / "gateway-ca.pem"
    ca_file.write_bytes(first.cert_pem)

    tenant = make_tenant(core, "owner@cloud.test")
    clients = [_client(gateway, tenant.agent_token, ca_file) for gateway in gateways]
    for client in clients:
        assert client.get(f"https://{HOST}/warm").status_code == 200  # both tasks now hold the config
    assert server.requests[-1].header("x-cloud-key") is None

    owner = Principal(CredentialKind.PROJECT_KEY, tenant.organization_id, tenant.project_id, tenant.user_id)
    secrets.create_secret(
        core,
        project_owner(owner),
        SecretCreate(name="cloud", type="generic", value="cloud-secret-0123456789", hostPattern=HOST, injectionConfig={"headerName": "X-Cloud-Key"}),
    )

    def injected_by(client: httpx.Client) -> Callable[[], bool]:
        def check() -> bool:
            client.get(f"https://{HOST}/poll")
            return server.requests[-1].header("x-cloud-key") == "cloud-secret-0123456789"

        return check

    for client in clients:
        _until(injected_by(client), CHANGE_DEADLINE)


def test_rate_limit_is_counted_across_tasks(tasks, tmp_path):
    core, gateways = tasks
    ca_file = tmp_path / "gateway-ca.pem"
    ca_file.write_bytes(gateways[0].server.certificates.cert_pem)
    tenant = make_tenant(core, "owner@cloud.test")
    owner = Principal(CredentialKind.PROJECT_KEY, tenant.organization_id, tenant.project_id, tenant.user_id)
    rules.create_rule(
        core,
        project_owner(owner),
        RuleCreate(name="three a minute", hostPattern=HOST, action="rate_limit", rateLimit=3, rateLimitWindow="minute"),
    )
    clients = [_client(gateway, tenant.agent_token, ca_file) for gateway in gateways]
    statuses = [clients[n % 2].get(f"https://{HOST}/limited").status_code for n in range(4)]
    assert statuses == [200, 200, 200, 429], "two tasks together allowed more than the rule's 3 per minute"
    refused = clients[1].get(f"https://{HOST}/limited")
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["retry-after"]) <= 60
    assert refused.json()["error"] == "rate_limited"
