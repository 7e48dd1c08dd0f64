"""Lambda cold start: import time of each handler module in a fresh interpreter, and its first invocation.

Run: .venv/bin/python bench/cold_import.py [--runs 5] [--no-write]

For each handler (`credgate_authorizer.handler`, `credgate_api.handler`, and `credgate_budget_reset.handler`
when it exists) a fresh `python` process imports the module and reports the import time (perf_counter
around `importlib.import_module`); the median of --runs processes is shown. Baselines in the same run:
the wall time of a whole `python -c pass` process (interpreter start-up) and `import boto3` alone.

Two bytecode situations are measured, both through `-X pycache_prefix=<dir>` so nothing is written into
the repository or the venv:
- "cached .pyc": the prefix dir was primed by one earlier import of the same module;
- "no layer .pyc": the same dir less the .pyc of every package the Lambda layer holds (listed from
  .build/layer/python when a synth has built it, else a fixed list) and of the function packages. Lambda
  cannot write .pyc files, so this is what every cold start paid while the layer shipped sources only;
  infra/bundle.py now precompiles the layer with a Python 3.12 (the runtime's), so the "cached .pyc"
  column is the estimate for the layer, and only the small function package still compiles at cold start.

First invocation: in the same fresh process, right after the import, the handler is called once with a
real API Gateway (payload 2.0) event against a moto server on loopback (AWS_ENDPOINT_URL; the table, KMS
key and tenant are created beforehand by this script, not by the measured process), then a second time.
boto3 clients are created lazily (credgate.aws.LazyClient), so the first call pays for client creation
plus one moto round trip; the second call is a warm one. Targets: authorizer import < 200 ms, API import
< 800 ms (cached .pyc). When one is missed, the heaviest packages by `-X importtime` self time are listed.
moto (with its server extra) is installed into bench/.venv-deps if the venv lacks it.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import REPO, ensure_modules, free_port, machine, markdown_table, now_utc, package_versions, text_table, write_section  # noqa: E402

REGION = "us-east-1"
# What the Lambda layer holds when .build/layer/python has not been built (infra/bundle.py, python 3.12 wheels).
LAYER_PACKAGES_FALLBACK = frozenset({
    "_cffi_backend", "annotated_doc", "annotated_types", "anyio", "aws_lambda_powertools", "cffi", "credgate",
    "cryptography", "dotenv", "fastapi", "idna", "jmespath", "mangum", "opentelemetry", "pycparser", "pydantic",
    "pydantic_core", "pydantic_settings", "sniffio", "starlette", "typing_extensions", "typing_inspection",
})  # fmt: skip
FUNCTION_PACKAGES = frozenset({"credgate_api", "credgate_authorizer", "credgate_budget_reset"})
API_URL = "https://abc123.execute-api.us-east-1.amazonaws.com"
HANDLERS = {
    "credgate_authorizer.handler": 200.0,
    "credgate_api.handler": 800.0,
    "credgate_budget_reset.handler": None,
}

# What the measured process runs: import (timed), then optionally two handler calls (timed).
CHILD = r"""
import importlib, importlib.util, json, os, sys, time
name = sys.argv[1]
if importlib.util.find_spec(name.rsplit(".", 1)[0]) is None or (name != "boto3" and importlib.util.find_spec(name) is None):
    print(json.dumps({"missing": True}))
    raise SystemExit
started = time.perf_counter()
module = importlib.import_module(name)
out = {"import_ms": (time.perf_counter() - started) * 1000, "modules": len(sys.modules)}
event = os.environ.get("BENCH_EVENT")
if event:
    class Context:
        function_name = "credgate-bench"
        aws_request_id = "bench-request"
        invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:credgate-bench"
        memory_limit_in_mb = 1024
        def get_remaining_time_in_millis(self):
            return 30000
    event = json.loads(event)
    for label in ("first_ms", "second_ms"):
        started = time.perf_counter()
        result = module.handler(json.loads(json.dumps(event)), Context())
        out[label] = (time.perf_counter() - started) * 1000
    out["result"] = {k: result[k] for k in ("statusCode", "isAuthorized") if isinstance(result, dict) and k in result}
    if isinstance(result, dict) and "context" in result:
        out["result"]["context"] = sorted(result["context"])
print(json.dumps(out))
"""


def base_environment(endpoint: str | None, table: str, key_id: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CREDGATE_", "PYTHON"))}
    env.update(
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_SESSION_TOKEN": "testing",
            "AWS_DEFAULT_REGION": REGION,
            "CREDGATE_TABLE_NAME": table,
            "CREDGATE_KMS_KEY_ID": key_id,
            "CREDGATE_API_URL": API_URL,
            "CREDGATE_APP_URL": API_URL,
            "CREDGATE_MAIL_FROM": "no-reply@credgate.test",
        }
    )
    if endpoint:
        env["AWS_ENDPOINT_URL"] = endpoint
    return env


def run_child(module: str, env: dict[str, str], pycache: Path, *, write_bytecode: bool, event: dict[str, Any] | None = None, importtime: bool = False) -> tuple[dict[str, Any], float, str]:
    env = dict(env)
    if not write_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    if event is not None:
        env["BENCH_EVENT"] = json.dumps(event)
    code = ["-c", "pass"] if module == "pass" else ["-c", CHILD, module]
    argv = [sys.executable, "-X", f"pycache_prefix={pycache}"] + (["-X", "importtime"] if importtime else []) + code
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=REPO)
    wall = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"{module}: the child process failed:\n{done.stderr[-3000:]}")
    out = {"import_ms": 0.0} if module == "pass" else json.loads(done.stdout.strip().splitlines()[-1])
    return out, wall, done.stderr


def layer_packages() -> tuple[frozenset[str], str]:
    built = REPO / ".build" / "layer" / "python"
    if built.is_dir():
        names = {path.name.split(".")[0] for path in built.iterdir() if not path.name.endswith((".dist-info", ".pth")) and path.name != "bin"}
        return frozenset(names), "from .build/layer/python"
    return LAYER_PACKAGES_FALLBACK, "a fixed list (no .build/layer yet)"


def strip_layer_bytecode(prefix: Path, packages: frozenset[str]) -> int:
    """Delete the .pyc of `packages` from a pycache_prefix tree (it mirrors absolute source paths)."""
    import sysconfig

    roots = {Path(sysconfig.get_paths()[key]) for key in ("purelib", "platlib")}
    roots |= {REPO / "layers" / "shared" / "python", REPO / "functions" / "api", REPO / "functions" / "gateway_authorizer", REPO / "functions" / "budget_reset"}
    removed = 0
    for root in roots:
        mirrored = prefix / root.resolve().relative_to("/")
        if not mirrored.is_dir():
            continue
        for pyc in mirrored.rglob("*.pyc"):
            top = pyc.relative_to(mirrored).parts[0].split(".")[0]
            if top in packages:
                pyc.unlink()
                removed += 1
    return removed


def top_imports(stderr: str, count: int = 12) -> list[tuple[str, float, float]]:
    """(top-level package, summed self ms, cumulative ms of its first import) from -X importtime output."""
    self_by_package: collections.Counter[str] = collections.Counter()
    cumulative: dict[str, float] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        self_us, cumulative_us, name = line[len("import time:") :].split("|")
        if not self_us.strip().isdigit():
            continue  # the header line
        package = name.strip().split(".")[0]
        self_by_package[package] += int(self_us) / 1000
        if name.strip() == package:
            cumulative[package] = max(cumulative.get(package, 0.0), int(cumulative_us) / 1000)
    return [(package, ms, cumulative.get(package, 0.0)) for package, ms in self_by_package.most_common(count)]


# a moto world for the first invocation


def moto_world() -> tuple[Any, str, str, str, dict[str, Any]]:
    """A moto server on loopback with a table, a KMS key and a tenant; returns (server, endpoint, table, key, events)."""
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    for name, value in base_environment(endpoint, "", "").items():
        if name.startswith("AWS_"):
            os.environ[name] = value
    import boto3

    from credgate.clock import SystemClock
    from credgate.domain.enums import Role
    from credgate.keyring.kms import KmsKeyRing
    from credgate.services import accounts
    from credgate.services.auth import AuthRequest, authenticate, principal_to_context
    from credgate.services.core import Core, CredentialKind, Principal
    from credgate.settings import CoreSettings
    from credgate.store.dynamodb import DynamoItemStore, create_table

    session = boto3.session.Session(region_name=REGION)
    dynamodb = session.client("dynamodb", endpoint_url=endpoint)
    kms = session.client("kms", endpoint_url=endpoint)
    table = "credgate-cold-start"
    create_table(dynamodb, table)
    key_id = kms.create_key()["KeyMetadata"]["KeyId"]

    class NullMailer:
        def send(self, *args: Any) -> None:
            pass

    core = Core(DynamoItemStore(dynamodb, table), KmsKeyRing(kms, key_id), NullMailer(), SystemClock(), CoreSettings(api_url=API_URL, app_url=API_URL))
    # a tenant, as tests/conftest.make_tenant makes one
    user = accounts.ensure_user(core, "owner@cold-start.test")
    created = accounts.create_organization(core, "cold start org", user["id"])
    org_id, project_id = created.organization["id"], created.project.project["id"]
    owner = Principal(CredentialKind.SESSION, org_id, project_id, user["id"], Role.OWNER)
    project_key = accounts.project_api_key(core, owner)

    http = http_event("GET", "/v1/agents", {"authorization": f"Bearer {project_key}"})
    authorizer_event = {**http, "type": "REQUEST", "routeArn": "arn:aws:execute-api:us-east-1:123456789012:abc123/$default/GET/v1/agents", "identitySource": []}
    context = principal_to_context(authenticate(core.store, AuthRequest("GET", "/v1/agents", f"Bearer {project_key}", None, None, None)))
    api_event = json.loads(json.dumps(http))
    api_event["requestContext"]["authorizer"] = {"lambda": context}
    events = {
        "credgate_authorizer.handler": authorizer_event,
        "credgate_api.handler": api_event,
        "credgate_budget_reset.handler": {"version": "0", "id": "bench", "detail-type": "Scheduled Event", "source": "aws.events", "time": "2026-01-01T00:00:00Z", "region": REGION, "resources": [], "detail": {}},
    }
    return server, endpoint, table, key_id, events


def http_event(method: str, path: str, headers: dict[str, str]) -> dict[str, Any]:
    """An API Gateway HTTP API payload 2.0 event (as tests/integration/test_lambda_entrypoints.py builds it)."""
    return {
        "version": "2.0",
        "routeKey": "ANY /v1/{proxy+}",
        "rawPath": path,
        "rawQueryString": "",
        "headers": {"host": "abc123.execute-api.us-east-1.amazonaws.com", "x-forwarded-proto": "https", **headers},
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "http": {"method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "203.0.113.9", "userAgent": "bench"},
            "requestId": "rid",
            "routeKey": "ANY /v1/{proxy+}",
            "stage": "$default",
            "timeEpoch": 0,
        },
        "isBase64Encoded": False,
    }


def median_and_range(values: list[float]) -> str:
    return f"{statistics.median(values):.0f} [{min(values):.0f}–{max(values):.0f}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per measurement; the median is shown (default 5)")
    parser.add_argument("--no-write", action="store_true", help="print only; leave bench/RESULTS.md alone")
    args = parser.parse_args()

    ensure_modules({"moto": "moto[server,dynamodb,kms]>=5.0", "flask": "moto[server,dynamodb,kms]>=5.0"})
    server, endpoint, table, key_id, events = moto_world()
    env = base_environment(endpoint, table, key_id)
    rows: list[dict[str, Any]] = []
    breakdowns: dict[str, list[tuple[str, float, float]]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="credgate-pycache-") as cached, tempfile.TemporaryDirectory(prefix="credgate-layer-") as layer:
            cached_dir, layer_dir = Path(cached), Path(layer)
            subjects = ["pass", "boto3", *HANDLERS]
            for subject in subjects:  # prime the cached-bytecode dir (and check each module exists)
                run_child(subject, env, cached_dir, write_bytecode=True)
            shutil.copytree(cached_dir, layer_dir, dirs_exist_ok=True)
            packages, packages_source = layer_packages()
            stripped = strip_layer_bytecode(layer_dir, packages | FUNCTION_PACKAGES)
            if not stripped:
                raise SystemExit("found no layer .pyc to strip: the pycache_prefix layout is not what this script expects")
            for subject in subjects:
                walls, imports, layer_imports, firsts, seconds, modules = [], [], [], [], [], []
                missing = False
                result: dict[str, Any] = {}
                for _ in range(args.runs):
                    event = events.get(subject)
                    out, wall, _ = run_child(subject, env, cached_dir, write_bytecode=False, event=event)
                    if out.get("missing"):
                        missing = True
                        break
                    walls.append(wall)
                    imports.append(out["import_ms"])
                    modules.append(out.get("modules", 0))
                    if "first_ms" in out:
                        firsts.append(out["first_ms"])
                        seconds.append(out["second_ms"])
                        result = out["result"]
                    out, _, _ = run_child(subject, env, layer_dir, write_bytecode=False)
                    layer_imports.append(out["import_ms"])
                rows.append(
                    {"subject": subject, "missing": missing, "wall": walls, "import": imports, "layer": layer_imports,
                     "first": firsts, "second": seconds, "result": result, "modules": modules}
                )  # fmt: skip
                print(f"  {subject}: done", file=sys.stderr, flush=True)
            for subject, target in HANDLERS.items():
                row = next(r for r in rows if r["subject"] == subject)
                if not row["missing"]:
                    _, _, stderr = run_child(subject, env, cached_dir, write_bytecode=False, importtime=True)
                    breakdowns[subject] = top_imports(stderr)
    finally:
        server.stop()

    report = render(rows, breakdowns, args.runs, f"{len(packages)} packages, {packages_source}")
    print(report["text"])
    if not args.no_write:
        write_section("cold_import", report["markdown"])
        print("\nwrote the cold-import section of bench/RESULTS.md")
    return 0


def render(rows: list[dict[str, Any]], breakdowns: dict[str, list[tuple[str, float, float]]], runs: int, layer: str) -> dict[str, str]:
    by_subject = {r["subject"]: r for r in rows}
    header = ["measured", "import ms, cached .pyc", "import ms, no layer .pyc (before precompiling)", "first call ms", "second call ms", "sys.modules", "aim"]
    table_rows = [
        ["python -c pass (whole process, wall)", median_and_range(by_subject["pass"]["wall"]), "", "", "", "", ""],
        ["import boto3", median_and_range(by_subject["boto3"]["import"]), median_and_range(by_subject["boto3"]["layer"]), "", "", str(max(by_subject["boto3"]["modules"])), ""],
    ]
    verdicts = []
    for subject, target in HANDLERS.items():
        row = by_subject[subject]
        if row["missing"]:
            table_rows.append([subject, "not present", "", "", "", "", ""])
            verdicts.append(f"NOT PRESENT: {subject} (no such module in this revision)")
            continue
        imported = statistics.median(row["import"])
        first = median_and_range(row["first"]) if row["first"] else ""
        second = median_and_range(row["second"]) if row["second"] else ""
        table_rows.append([subject, median_and_range(row["import"]), median_and_range(row["layer"]), first, second, str(max(row["modules"])), f"< {target:.0f} ms" if target else ""])
        if target:
            as_shipped = statistics.median(row["layer"])
            verdicts.append(
                f"{'MET' if imported < target else 'MISSED'}: {subject} import < {target:.0f} ms: {imported:.0f} ms with .pyc "
                f"(the layer ships Python 3.12 bytecode); without any layer .pyc it would be {as_shipped:.0f} ms"
            )
        if row["first"]:
            verdicts.append(
                f"INFO: {subject} first invocation {statistics.median(row['first']):.0f} ms (lazy boto3 client + moto round trip), "
                f"second {statistics.median(row['second']):.1f} ms; result {row['result']}"
            )
    breakdown_text, breakdown_md = [], []
    for subject, entries in breakdowns.items():
        breakdown_text.append(f"heaviest packages in {subject} (-X importtime, cached .pyc; self ms summed per top-level package):")
        breakdown_text += [f"  {package:<24} self {self_ms:7.1f} ms" for package, self_ms, _ in entries]
        breakdown_md.append(f"- `{subject}`: " + ", ".join(f"{package} {self_ms:.0f}" for package, self_ms, _ in entries[:10]))
    date = now_utc()
    versions = package_versions("fastapi", "pydantic", "mangum", "aws-lambda-powertools", "boto3", "moto")
    text = "\n".join(
        [
            f"cold import benchmark, {date}; {machine()}; {versions}",
            f"median [min–max] of {runs} fresh processes each; layer packages: {layer}",
            text_table(header, table_rows, "lrrrrrr"),
            "",
            *verdicts,
            "",
            *breakdown_text,
        ]
    )
    command = ".venv/bin/python bench/cold_import.py" + ("" if runs == 5 else f" --runs {runs}")
    markdown = "\n".join(
        [
            "## Lambda cold start (`bench/cold_import.py`)",
            "",
            "Import time of each Lambda handler module in a fresh interpreter (perf_counter around the import), median "
            f"[min–max] of {runs} processes, with the interpreter start-up (`python -c pass`, whole process) and "
            "`import boto3` as baselines from the same run. \"cached .pyc\": compiled files present (a primed "
            "`-X pycache_prefix` dir); the layer ships Python 3.12 bytecode (infra/bundle.py precompiles it, since Lambda "
            f"cannot write .pyc files). \"no layer .pyc\": the same, less the .pyc of every package in the layer ({layer}) "
            "and of the function packages: what each cold start paid before the layer was precompiled. First/second call: the handler called in the same fresh process right after the "
            "import, with an API Gateway v2 event (authorizer: `GET /v1/agents` with a valid project key; API: the same "
            "request carrying that authorizer's context), against a moto server on loopback; the first call creates the "
            "boto3 client (lazy) and makes one moto round trip, the second is warm. Environment: `CREDGATE_TABLE_NAME`, "
            "`CREDGATE_KMS_KEY_ID`, `CREDGATE_API_URL`, `CREDGATE_APP_URL`, `CREDGATE_MAIL_FROM`, fake AWS credentials, "
            "`AWS_DEFAULT_REGION`, `AWS_ENDPOINT_URL`. This machine's x86 CPU, not Lambda's arm64 at its memory size.",
            "",
            f"Run: `{command}` (installs moto with its server extra into `bench/.venv-deps/` if `.venv` lacks it).",
            "",
            f"Latest run: {date}; {machine()}; {versions}.",
            "",
            markdown_table(header, table_rows, "lrrrrrr"),
            "",
            "**Targets**",
            "",
            *[f"- {line}" for line in verdicts],
            "",
            "Heaviest top-level packages by `-X importtime` self time (ms, cached .pyc, one run):",
            "",
            *breakdown_md,
        ]
    )
    return {"text": text, "markdown": markdown}



if __name__ == "__main__":
    sys.exit(main())
