"""Management API throughput in-process: GET /v1/agents and POST /v1/org/secrets against GET /v1/health.

Run: .venv/bin/python bench/api.py [--duration 3] [--no-write]

The app is built the way tests/conftest.py builds it (`create_app(core, in_process(core), ca_certificate=...)`,
a tenant made like `make_tenant`) on two stores:
- SQLite: `SqliteItemStore` (a WAL file in a temp dir) + `LocalKeyRing` (a master key file);
- DynamoDB: `DynamoItemStore` + `KmsKeyRing` under moto's `mock_aws` (in-process fakes: these numbers
  measure moto, not DynamoDB or KMS; the ratio to SQLite is not a prediction for AWS).
Requests are direct ASGI calls (scope/receive/send built by hand, awaited on a uvloop event loop): no
HTTP client, no TestClient portal thread, so only the app's own work is timed: the authentication
middleware (which runs the resolver in Starlette's thread pool), routing, validation, the service, the
store, and the response. Logging is configured as `credgate serve` configures it (Powertools JSON
formatter at INFO, one line per request) but written to /dev/null. Each operation runs sequentially
for --duration seconds after a warm-up; GET /v1/health (public: no credential lookup, no store) is the
baseline in the same run, so "x health" is what authentication + store + service cost per request.
moto is installed into bench/.venv-deps if the venv lacks it (`make install` has no test extras).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Awaitable, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ensure_modules, machine, markdown_table, now_utc, package_versions, text_table, write_section  # noqa: E402

AWS_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
OPERATIONS = ("GET /v1/health", "GET /v1/agents", "POST /v1/org/secrets")


# the app and a tenant, as tests/conftest.py makes them


class NullMailer:
    def send(self, to: str, subject: str, text: str, links: list[str]) -> None:
        pass


def make_core(store_kind: str, workdir: Path) -> Any:
    from credgate.clock import SystemClock
    from credgate.services.core import Core
    from credgate.settings import CoreSettings

    settings = CoreSettings(api_url="http://testserver", app_url="http://testserver")
    if store_kind == "sqlite":
        from credgate.keyring.local import LocalKeyRing
        from credgate.store.sqlite import SqliteItemStore

        return Core(SqliteItemStore(workdir / "db.sqlite"), LocalKeyRing.from_file(workdir / "master.key"), NullMailer(), SystemClock(), settings)
    import boto3

    from credgate.keyring.kms import KmsKeyRing
    from credgate.store.dynamodb import DynamoItemStore, create_table

    session = boto3.session.Session(region_name=AWS_ENVIRONMENT["AWS_DEFAULT_REGION"])
    dynamodb, kms = session.client("dynamodb"), session.client("kms")
    create_table(dynamodb, "credgate-bench")
    key_id = kms.create_key()["KeyMetadata"]["KeyId"]
    return Core(DynamoItemStore(dynamodb, "credgate-bench"), KmsKeyRing(kms, key_id), NullMailer(), SystemClock(), settings)


def make_tenant(core: Any, email: str) -> dict[str, str]:
    """tests.conftest.make_tenant, without importing the test suite (pytest is not in `make install`)."""
    from credgate.domain.enums import Role
    from credgate.services import accounts
    from credgate.services.core import CredentialKind, Principal

    user = accounts.ensure_user(core, email)
    created = accounts.create_organization(core, f"{email}'s organization", user["id"])
    org_id, project_id = created.organization["id"], created.project.project["id"]
    org_key, writes = accounts.issue_organization_key(core, org_id)
    core.store.write(*writes)
    owner = Principal(CredentialKind.SESSION, org_id, project_id, user["id"], Role.OWNER)
    return {"project_key": accounts.project_api_key(core, owner), "org_key": org_key}


def make_app(core: Any) -> Any:
    from credgate.services.agent_setup import ca_certificate_from_store
    from credgate_api.app import create_app
    from credgate_api.principals import in_process

    return create_app(core, in_process(core), ca_certificate=lambda: ca_certificate_from_store(core.store))


# direct ASGI calls


def asgi_caller(app: Any) -> Callable[[str, str, dict[str, str], Any], Awaitable[tuple[int, bytes]]]:
    async def call(method: str, path: str, headers: dict[str, str], body: Any = None) -> tuple[int, bytes]:
        raw = json.dumps(body).encode() if body is not None else b""
        header_list = [(b"host", b"testserver")] + [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        if raw:
            header_list += [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": header_list,
            "client": ("127.0.0.1", 50000),
            "server": ("testserver", 80),
        }
        sent = False
        status = 0
        chunks: list[bytes] = []

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": raw, "more_body": False}
            await asyncio.Event().wait()  # no disconnect while the app runs
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await app(scope, receive, send)
        return status, b"".join(chunks)

    return call


async def measure(call: Callable[[], Awaitable[tuple[int, bytes]]], expected: int, duration: float, warmup: int) -> dict[str, float]:
    for _ in range(warmup):
        status, body = await call()
        if status != expected:
            raise SystemExit(f"unexpected answer {status}: {body[:300]!r}")
    latencies: list[float] = []
    clock = time.perf_counter
    started = clock()
    deadline = started + duration
    while True:
        before = clock()
        status, body = await call()
        after = clock()
        if status != expected:
            raise SystemExit(f"unexpected answer {status}: {body[:300]!r}")
        latencies.append(after - before)
        if after >= deadline:
            break
    elapsed = clock() - started
    latencies.sort()
    return {
        "rps": len(latencies) / elapsed,
        "p50": latencies[len(latencies) // 2] * 1000,
        "p99": latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
        "n": len(latencies),
    }


async def bench_store(store_kind: str, duration: float, workdir: Path) -> dict[str, dict[str, float]]:
    core = make_core(store_kind, workdir)
    tenant = make_tenant(core, f"owner@{store_kind}.bench.test")
    call = asgi_caller(make_app(core))
    project = {"authorization": f"Bearer {tenant['project_key']}"}
    org = {"authorization": f"Bearer {tenant['org_key']}"}
    counter = iter(range(10**9))

    def secret_body() -> dict[str, Any]:
        n = next(counter)
        return {
            "name": f"bench secret {n}",
            "type": "generic",
            "value": f"bench-value-{n:08d}-abcdefghijklmnop",
            "hostPattern": f"svc-{n % 100}.bench.test",
            "injectionConfig": {"headerName": "X-Api-Key"},
        }

    operations = {
        "GET /v1/health": (lambda: call("GET", "/v1/health", {}), 200),
        "GET /v1/agents": (lambda: call("GET", "/v1/agents", project), 200),
        "POST /v1/org/secrets": (lambda: call("POST", "/v1/org/secrets", org, secret_body()), 201),
    }
    results = {}
    for name in OPERATIONS:
        request, expected = operations[name]
        results[name] = await measure(request, expected, duration, warmup=50)
        print(f"  {store_kind:<8} {name:<22} {results[name]['rps']:8.0f} req/s", file=sys.stderr, flush=True)
    return results


def run_store(store_kind: str, duration: float, rounds: int) -> dict[str, dict[str, float]]:
    import uvloop

    per_round = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(prefix=f"credgate-api-bench-{store_kind}-") as tmp:
            if store_kind == "dynamodb":
                from moto import mock_aws

                with mock_aws():
                    per_round.append(uvloop.run(bench_store(store_kind, duration, Path(tmp))))
            else:
                per_round.append(uvloop.run(bench_store(store_kind, duration, Path(tmp))))
    return {
        name: {key: statistics.median(r[name][key] for r in per_round) for key in ("rps", "p50", "p99")}
        for name in OPERATIONS
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=3.0, help="seconds per operation and round (default 3)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds per store; medians are reported (default 3)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave bench/RESULTS.md alone")
    args = parser.parse_args()

    ensure_modules({"moto": "moto[dynamodb,kms]>=5.0"})
    os.environ.update(AWS_ENVIRONMENT)
    for name in ("AWS_PROFILE", "AWS_ENDPOINT_URL"):
        os.environ.pop(name, None)
    from credgate.logs import configure_logging

    configure_logging("credgate-api", "INFO", stream=open(os.devnull, "w"))

    results = {store: run_store(store, args.duration, args.rounds) for store in ("sqlite", "dynamodb")}
    header = ["store", "operation", "req/s", "x health", "p50 ms", "p99 ms"]
    rows = []
    for store, by_operation in results.items():
        health = by_operation["GET /v1/health"]["rps"]
        for name in OPERATIONS:
            r = by_operation[name]
            rows.append([store, name, f"{r['rps']:,.0f}", f"{health / r['rps']:.1f}x slower" if name != "GET /v1/health" else "baseline", f"{r['p50']:.3f}", f"{r['p99']:.3f}"])
    versions = package_versions("fastapi", "starlette", "pydantic", "boto3", "moto")
    date = now_utc()
    print(f"API benchmark, {date}; {machine()}; {versions}")
    print(f"direct ASGI calls on uvloop, sequential; {args.rounds} rounds x {args.duration:g} s per operation, medians")
    print(text_table(header, rows, "llrrrr"))
    if not args.no_write:
        command = ".venv/bin/python bench/api.py" + ("" if (args.duration, args.rounds) == (3.0, 3) else f" --duration {args.duration:g} --rounds {args.rounds}")
        write_section(
            "api",
            "\n".join(
                [
                    "## Management API in-process (`bench/api.py`)",
                    "",
                    "Requests per second of `GET /v1/agents` (project key) and `POST /v1/org/secrets` (organization key, a "
                    "generic secret: validation, key-ring encryption, one transactional write with the config-version bump), "
                    "against the public `GET /v1/health` in the same run. The app is built like `tests/conftest.py` builds it; "
                    "requests are **direct ASGI calls** (scope/receive/send by hand on a uvloop loop, sequential), not "
                    "TestClient or httpx, so no client or portal-thread cost is included. The app's own thread-pool hops are "
                    "included (the authentication middleware runs the resolver in Starlette's thread pool; sync routes and "
                    "sync dependencies take a hop each), and so is the per-request Powertools JSON log line (to /dev/null). DynamoDB and KMS are "
                    "moto's in-process fakes: those rows measure credgate plus moto, not AWS.",
                    "",
                    f"Run: `{command}` (installs moto into `bench/.venv-deps/` if `.venv` lacks it).",
                    "",
                    f"Latest run: {date}; {machine()}; {versions}; {args.rounds} rounds x {args.duration:g} s per operation, medians.",
                    "",
                    markdown_table(header, rows, "llrrrr"),
                    "",
                    "No targets were set for the API; `x health` is the cost of authentication + store + service relative "
                    "to a route that does none of them.",
                ]
            ),
        )
        print("\nwrote the API section of bench/RESULTS.md")
    return 0



if __name__ == "__main__":
    sys.exit(main())
