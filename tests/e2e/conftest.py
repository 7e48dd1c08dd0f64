"""Run the real `credgate serve` as a subprocess on free loopback ports."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

CREDGATE = Path(sys.executable).with_name("credgate")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Serve:
    process: subprocess.Popen
    data_dir: Path
    api_port: int
    gateway_port: int
    log_path: Path

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.api_port}"

    @property
    def bootstrap(self) -> dict[str, Any]:
        return json.loads((self.data_dir / "bootstrap.json").read_text())

    def logs(self) -> str:
        return self.log_path.read_text()

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def start_serve(data_dir: Path, *extra: str, timeout: float = 60) -> Serve:
    api_port, gateway_port = free_port(), free_port()
    log_path = data_dir.parent / f"serve-{api_port}.log"
    log = open(log_path, "w")
    process = subprocess.Popen(
        [str(CREDGATE), "serve", "--data-dir", str(data_dir), "--api-port", str(api_port), "--gateway-port", str(gateway_port), *extra],
        stdout=log,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    serve = Serve(process, data_dir, api_port, gateway_port, log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"credgate serve exited with {process.returncode}:\n{serve.logs()}")
        try:
            if httpx.get(f"{serve.api_url}/v1/health", timeout=1).status_code == 200:
                return serve
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    serve.stop()
    raise RuntimeError(f"credgate serve did not become healthy in {timeout}s:\n{serve.logs()}")


@pytest.fixture
def serve_factory(tmp_path: Path) -> Iterator[Any]:
    started: list[Serve] = []

    def start(*extra: str, data_dir: Path | None = None) -> Serve:
        serve = start_serve(data_dir or tmp_path / "data", *extra)
        started.append(serve)
        return serve

    yield start
    for serve in started:
        serve.stop()


@pytest.fixture(scope="module")
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One `credgate serve` + fake upstream per gateway test module, for the module's `HOSTS`."""
    from tests.e2e.gateway_support import running_gateway

    name = request.module.__name__.rpartition(".")[2]
    with running_gateway(tmp_path_factory.mktemp(name), request.module.HOSTS) as running:
        yield running
        running.assert_log_holds_no_credential()


@pytest.fixture
def gw(gateway: Any) -> Iterator[Any]:
    """The module's gateway, with what the test created removed afterwards."""
    yield gateway
    gateway.cleanup()
