"""The gateway end to end: the real `credgate serve` in front of one fake TLS upstream that answers for
every test host (routed with --connect-to, trusted with --upstream-ca-bundle), plus the clients and
bounded waits the gateway tests share."""
from __future__ import annotations

import json
import os
import shutil
import socket
import ssl
import subprocess
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator, TypeVar

import httpx
import pytest

from tests.e2e.conftest import Serve, start_serve
from tests.integration.gateway_engine.fakes import FakeUpstream, ThrowawayCA, UpstreamRequest

T = TypeVar("T")
Handler = Callable[[UpstreamRequest], Awaitable[None]]

SYNC_HOST = "sync.credgate.test"
"""A host only `Gateway.sync` uses: a block rule on it shows when the gateway has reloaded its config."""
CURL = shutil.which("curl")
needs_curl = pytest.mark.skipif(CURL is None, reason="curl is not installed")


def unique(label: str) -> str:
    """A value no other test uses, so that finding it (in a header, a log) points at one test."""
    return f"{label}-{uuid.uuid4().hex[:12]}"


def wait_until(probe: Callable[[], T], *, timeout: float, what: str, interval: float = 0.05) -> T:
    """Call `probe` until it returns something truthy; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = probe()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what}: not observed within {timeout} s (last probe: {result!r})")
        time.sleep(interval)


# The upstream: one TLS server for every host, answering per host


async def echo_json(request: UpstreamRequest) -> None:
    """What the upstream received, as JSON (the request is also kept in `Upstream.requests`)."""
    body = await request.body()
    request.received_body = body  # type: ignore[attr-defined]
    payload = {
        "method": request.method,
        "target": request.target,
        "headers": request.raw_headers,
        "bodyLength": len(body),
    }
    await request.respond(200, [("Content-Type", "application/json"), ("X-Upstream", "fake")], json.dumps(payload).encode())


class Upstream:
    """Stands in for api.anthropic.com, api.openai.com and the test hosts; the Host header picks the handler."""

    def __init__(self, ca: ThrowawayCA, directory: Path, hosts: tuple[str, ...]) -> None:
        self.handlers: dict[str, Handler] = {}
        self.fake = FakeUpstream(self._dispatch, tls=ca.server_context(directory, *hosts)).start()

    @property
    def port(self) -> int:
        return self.fake.port

    async def _dispatch(self, request: UpstreamRequest) -> None:
        host = (request.header("host") or "").rsplit(":", 1)[0].lower()
        await self.handlers.get(host, echo_json)(request)

    def requests(self, host: str, path_prefix: str = "") -> list[UpstreamRequest]:
        """What reached the upstream for `host` (and a target starting with `path_prefix`), oldest first."""
        return [
            request
            for request in list(self.fake.requests)
            if (request.header("host") or "").rsplit(":", 1)[0].lower() == host and request.target.startswith(path_prefix)
        ]

    def stop(self) -> None:
        self.fake.stop()


def headers_named(request: UpstreamRequest, name: str) -> list[str]:
    """Every value of one header, compared case-insensitively (repeated headers stay separate)."""
    return [value for header, value in request.raw_headers if header.lower() == name.lower()]


# The gateway under test


@dataclass
class Gateway:
    serve: Serve
    upstream: Upstream
    api: httpx.Client
    org_api: httpx.Client
    agent_tls: ssl.SSLContext
    client: httpx.Client
    """The default agent's proxied client (one keep-alive tunnel per host)."""
    issued: list[str] = field(default_factory=list)
    """Every secret value and agent token this gateway has seen: none may ever show up in its log."""
    _cleanups: list[tuple[httpx.Client, str]] = field(default_factory=list)
    _sync_rule_id: str | None = None

    @property
    def bootstrap(self) -> dict[str, Any]:
        return self.serve.bootstrap

    @property
    def port(self) -> int:
        return self.serve.gateway_port

    @property
    def ca_path(self) -> str:
        return self.bootstrap["caCertPath"]

    def proxy_url(self, token: str | None = None, user: str = "agent") -> str:
        token = self.bootstrap["agentToken"] if token is None else token
        return f"http://{user}:{token}@127.0.0.1:{self.port}"

    def agent(self, token: str | None = None, user: str = "agent") -> httpx.Client:
        """A fresh proxied client (its own tunnels) for the default agent or the agent of `token`."""
        return httpx.Client(proxy=self.proxy_url(token, user), verify=self.agent_tls, timeout=20, trust_env=False)

    # management API, with everything created removed again after the test

    def secret(self, *, scope: str = "project", **fields: Any) -> dict[str, Any]:
        api, path = (self.org_api, "/org/secrets") if scope == "org" else (self.api, "/secrets")
        self.issued.append(fields["value"])
        created = api.post(path, json=fields)
        assert created.status_code == 201, created.text
        self._cleanups.append((api, f"{path}/{created.json()['id']}"))
        return created.json()

    def header_secret(self, host: str, header: str, value: str, *, scope: str = "project", value_format: str | None = None, **fields: Any) -> dict[str, Any]:
        injection: dict[str, Any] = {"headerName": header}
        if value_format is not None:
            injection["valueFormat"] = value_format
        return self.secret(
            scope=scope, name=unique("header"), type="generic", value=value, hostPattern=host, injectionConfig=injection, **fields
        )

    def rule(self, *, scope: str = "project", **fields: Any) -> dict[str, Any]:
        api, path = (self.org_api, "/org/rules") if scope == "org" else (self.api, "/rules")
        fields.setdefault("name", unique("rule"))
        created = api.post(path, json=fields)
        assert created.status_code == 201, created.text
        self._cleanups.append((api, f"{path}/{created.json()['id']}"))
        return created.json()

    def new_agent(self, label: str) -> dict[str, Any]:
        created = self.api.post("/agents", json={"name": label, "identifier": unique(label)})
        assert created.status_code == 201, created.text
        self.issued.append(created.json()["accessToken"])
        self._cleanups.append((self.api, f"/agents/{created.json()['id']}"))
        return created.json()

    def regenerate_token(self, agent_id: str) -> str:
        response = self.api.post(f"/agents/{agent_id}/regenerate-token")
        assert response.status_code == 200, response.text
        self.issued.append(response.json()["accessToken"])
        return response.json()["accessToken"]

    def set_policy_mode(self, mode: str) -> None:
        response = self.org_api.patch("/org/settings", json={"policyMode": mode})
        assert response.status_code == 200 and response.json() == {"policyMode": mode}, response.text

    def cleanup(self) -> None:
        while self._cleanups:
            api, path = self._cleanups.pop()
            response = api.delete(path)
            assert response.status_code in (204, 404), f"cleanup of {path}: {response.status_code} {response.text}"
        self.upstream.handlers.clear()

    def sync(self, timeout: float = 10.0) -> None:
        """Return once the gateway runs on every change made so far.

        The gateway reloads an organization's whole config at once, so a fresh block rule taking effect
        means every earlier change has too. This waits for a reload; it asserts nothing about its speed.
        """
        nonce = f"/{uuid.uuid4().hex}"
        if self._sync_rule_id is None:
            created = self.api.post("/rules", json={"name": "sync marker", "hostPattern": SYNC_HOST, "pathPattern": nonce, "action": "block"})
            assert created.status_code == 201, created.text
            self._sync_rule_id = created.json()["id"]
        else:
            patched = self.api.patch(f"/rules/{self._sync_rule_id}", json={"pathPattern": nonce})
            assert patched.status_code == 200, patched.text
        wait_until(
            lambda: self.client.get(f"https://{SYNC_HOST}{nonce}").status_code == 403,
            timeout=timeout,
            what="the gateway picking up a config change",
        )

    # what the gateway logs

    def request_log(self) -> list[dict[str, Any]]:
        """The gateway's per-request log lines (JSON), oldest first."""
        lines = []
        for line in self.serve.logs().splitlines():
            if not line.startswith("{"):
                continue
            entry = json.loads(line)
            if entry.get("message") == "proxied request":
                lines.append(entry)
        return lines

    def assert_log_holds_no_credential(self) -> None:
        log = self.serve.logs()
        leaked = [value for value in {*self.issued, self.bootstrap["agentToken"]} if value in log]
        assert not leaked, f"the serve log contains {len(leaked)} secret value(s) or agent token(s)"

    # the gateway process

    def memory_kib(self) -> dict[str, int]:
        """VmRSS (now) and VmHWM (peak since start) of the serve process, in KiB."""
        status = Path(f"/proc/{self.serve.process.pid}/status").read_text()
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        return {name: int(fields[name].split()[0]) for name in ("VmRSS", "VmHWM")}


def api_client(base_url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=f"{base_url}/v1", headers={"Authorization": f"Bearer {key}"}, timeout=20, trust_env=False)


@contextmanager
def running_gateway(directory: Path, hosts: tuple[str, ...], *extra: str) -> Iterator[Gateway]:
    """`credgate serve` with every host in `hosts` (and SYNC_HOST) routed to one fake upstream."""
    ca = ThrowawayCA.create("credgate e2e upstream CA")
    bundle = ca.write_cert(directory / "upstream-ca.pem")
    all_hosts = tuple(dict.fromkeys((*hosts, SYNC_HOST)))
    upstream = Upstream(ca, directory, all_hosts)
    serve: Serve | None = None
    clients: list[httpx.Client] = []
    try:
        routes = [arg for host in all_hosts for arg in ("--connect-to", f"{host}:443:127.0.0.1:{upstream.port}")]
        serve = start_serve(directory / "data", *routes, "--upstream-ca-bundle", str(bundle), *extra)
        bootstrap = serve.bootstrap
        agent_tls = ssl.create_default_context(cafile=bootstrap["caCertPath"])
        clients = [
            api_client(serve.api_url, bootstrap["projectApiKey"]),
            api_client(serve.api_url, bootstrap["orgApiKey"]),
        ]
        default_agent = httpx.Client(
            proxy=f"http://agent:{bootstrap['agentToken']}@127.0.0.1:{serve.gateway_port}",
            verify=agent_tls,
            timeout=20,
            trust_env=False,
        )
        clients.append(default_agent)
        yield Gateway(serve, upstream, clients[0], clients[1], agent_tls, default_agent)
    finally:
        for client in clients:
            client.close()
        if serve is not None:
            serve.stop()
        upstream.stop()


# Raw proxy conversations (what httpx will not show: the CONNECT answer itself)


@dataclass
class ConnectAnswer:
    status: int
    headers: dict[str, str]
    body: bytes


def connect(port: int, host: str, proxy_authorization: str | None) -> ConnectAnswer:
    """Send one CONNECT to the gateway and read its answer (the tunnel, if any, is closed unused)."""
    auth = f"Proxy-Authorization: {proxy_authorization}\r\n" if proxy_authorization else ""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(f"CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n{auth}\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {name.lower(): value for name, _, value in (line.partition(": ") for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
    return ConnectAnswer(int(lines[0].split()[1]), headers, body)


def curl(gateway: Gateway, url: str, *args: str, token: str | None = None, proxy_user: bool = True) -> subprocess.CompletedProcess[str]:
    """curl through the gateway as an agent would run it (no proxy variables from the test's environment)."""
    assert CURL is not None
    token = gateway.bootstrap["agentToken"] if token is None else token
    command = [CURL, "-sS", "--max-time", "20", "--proxy", f"http://127.0.0.1:{gateway.port}", "--cacert", gateway.ca_path]
    if proxy_user:
        command += ["--proxy-user", f"agent:{token}"]
    environment = {name: value for name, value in os.environ.items() if "proxy" not in name.lower()}
    return subprocess.run([*command, *args, url], capture_output=True, text=True, timeout=30, env=environment)
