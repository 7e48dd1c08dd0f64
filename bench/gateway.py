"""The gateway end to end: a local HTTPS upstream reached directly, through credgate and through mitmproxy.

Run: .venv/bin/python bench/gateway.py [--duration 4] [--connections 32] [--rounds 5] [--skip-mitmproxy]
                                       [--pin split|none] [--profile] [--serve-arg ARG] [--no-write]

What runs (all on loopback, each a single process):
- upstream: bench/load/upstream.mjs, raw TLS + minimal HTTP/1.1 in Node, keep-alive; GET /json answers
  a ~1 KiB JSON body, GET /sse answers headers + SSE event 1 at once and event 2 + the end 20 ms later.
  Every request must carry `X-Bench-Key: <secret>` or gets 401, so each 200 through a proxy proves the
  credential was injected.
- credgate: the real `credgate serve --data-dir <tmp> --connect-to api.bench.test:443:127.0.0.1:<port>
  --upstream-ca-bundle <ca>`, with a generic header secret (X-Bench-Key) for api.bench.test created
  through the API with the bootstrap project key; the load generator authenticates with the agent token.
- mitmproxy: `mitmdump` from bench/.venv-mitmproxy (installed there on first use; never into .venv),
  upstream verified against the bench CA, injecting the same header with --modify-headers.
- load generator: bench/load/loadgen.mjs, raw TLS sockets + a minimal HTTP/1.1 client in Node, closed
  loop on keep-alive connections; through a proxy it CONNECTs (HTTPS_PROXY style) and speaks TLS inside
  the tunnel, trusting the proxy's CA. Direct, it sends the header itself.

Scenarios, run in interleaved rounds (direct, credgate, mitmproxy; then again) and reported as the median
of the rounds: N concurrent connections (throughput, p50/p99), 1 connection (p50/p99, added p50 =
proxied p50 - direct p50), and the delay of the first SSE event on one connection (direct and credgate).
CPU time of every process and every core is sampled at the edges of each measured window (/proc), so
the table also shows proxy CPU per request and which core was the bottleneck. CPU placement: see Pinning. RSS (VmRSS, VmHWM) of each proxy
is read after the run. --profile adds one extra credgate run under py-spy (bench/.venv-pyspy) and
prints the hottest functions; the measured rounds are not affected.

Node 18+ is required (the generator and the upstream use only Node's standard library); without it the
script exits with a message.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    BENCH,
    REPO,
    cpu_seconds,
    free_port,
    git_revision,
    machine,
    markdown_table,
    memory_kib,
    now_utc,
    section_lines,
    text_table,
    write_section,
)

LOAD = BENCH / "load"
MITM_VENV = BENCH / ".venv-mitmproxy"
MITM_REQUIREMENT = "mitmproxy==11.0.2"  # the newest that runs on Python 3.11, the project's interpreter
PYSPY_VENV = BENCH / ".venv-pyspy"
PYSPY_REQUIREMENT = "py-spy==0.4.1"
API_HOST = "api.bench.test"
HEADER = "X-Bench-Key"
SSE_DELAY_MS = 20
TARGETS_ADDED_P50_MS = 0.3
TARGET_SSE_ADDED_MS = 5.0

PIN_CHOICES = ("split", "none")


class Pinning:
    """--pin split: each process under test gets the CPUs it can use, set before every scenario.

    direct:  load generator on CPU 0, upstream on CPU 1 (one core each: the best a client/server pair
             of single-threaded processes can do here);
    proxied: the proxy alone on CPU 1 (as a 1-vCPU gateway task), generator and upstream share CPU 0.
    --pin none leaves placement to the scheduler (measured noisier on this VM; see RESULTS.md).
    """

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def layout(self, target: str) -> dict[str, set[int]]:
        if self.mode == "none" or (os.cpu_count() or 1) < 2:
            return {}
        if target == "direct":
            return {"loadgen": {0}, "upstream": {1}, "proxy": {1}}
        return {"loadgen": {0}, "upstream": {0}, "proxy": {1}}

    def apply(self, target: str, processes: list["Process"]) -> set[int] | None:
        """Pin the running processes for `target`; returns the CPUs for the load generator."""
        layout = self.layout(target)
        if not layout:
            return None
        for process in processes:
            set_affinity(process.pid, layout["upstream" if process.name == "upstream" else "proxy"])
        return layout["loadgen"]


def set_affinity(pid: int, cpus: set[int]) -> None:
    """sched_setaffinity (what taskset -a does) on every thread of a running process."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cpus)
        except (ProcessLookupError, OSError):
            pass


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# processes


@dataclass
class Process:
    name: str
    popen: subprocess.Popen
    log_path: Path | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def cpu(self) -> float:
        return cpu_seconds(self.pid)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()

    def logs(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path and self.log_path.exists() else ""


def affinity(cpus: set[int] | None) -> Callable[[], None] | None:
    if not cpus:
        return None
    return lambda: os.sched_setaffinity(0, cpus)


def spawn(name: str, argv: list[str], workdir: Path, **kwargs: Any) -> Process:
    log_path = workdir / f"{name}.log"
    handle = open(log_path, "w")
    popen = subprocess.Popen(argv, stdout=kwargs.pop("stdout", handle), stderr=handle, **kwargs)
    return Process(name, popen, log_path)


def wait_until(check: Callable[[], bool], timeout: float, what: str, process: Process | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and not process.alive():
            raise SystemExit(f"{what}: {process.name} exited with {process.popen.returncode}\n{process.logs()}")
        try:
            if check():
                return
        except (OSError, urllib.error.URLError, ValueError, KeyError):
            pass
        time.sleep(0.1)
    raise SystemExit(f"timed out waiting for {what}" + (f"\n{process.logs()}" if process else ""))


# certificates for the upstream


def make_upstream_certificates(directory: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a leaf for api.bench.test (ECDSA P-256). Returns (ca, cert, key) paths."""
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = dt.datetime.now(dt.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "credgate bench upstream CA")])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=7))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, API_HOST)]))
        .issuer_name(ca_name)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1))
        .not_valid_after(now + dt.timedelta(days=7))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(API_HOST)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_path, cert_path, key_path = directory / "upstream-ca.pem", directory / "upstream.pem", directory / "upstream-key.pem"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    cert_path.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        leaf_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return ca_path, cert_path, key_path


# the load generator


@dataclass
class Target:
    name: str
    options: dict[str, Any]
    proxy: Process | None = None


@dataclass
class Measurement:
    result: dict[str, Any]
    cpu: dict[str, float]
    """CPU seconds each process used inside the measured window."""


def run_loadgen(options: dict[str, Any], watched: list[Process], cpus: set[int] | None, timeout: float) -> Measurement:
    argv = ["node", str(LOAD / "loadgen.mjs"), json.dumps(options)]
    popen = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=affinity(cpus))

    def sample() -> dict[str, float]:
        readings = {process.name: process.cpu() for process in watched}
        readings["loadgen"] = cpu_seconds(popen.pid)
        readings.update(machine_cpu())
        return readings

    started: dict[str, float] = {}
    ended: dict[str, float] = {}
    result: dict[str, Any] | None = None
    try:
        assert popen.stdout is not None
        for line in popen.stdout:
            if line == "start\n":
                started = sample()
            elif line == "end\n":
                ended = sample()
            elif line.strip():
                result = json.loads(line)
        popen.wait(timeout=timeout)
    finally:
        if popen.poll() is None:
            popen.kill()
            popen.wait()
    stderr = popen.stderr.read() if popen.stderr else ""
    if result is None or "fatal" in result:
        raise RuntimeError(f"load generator failed: {result}\n{stderr}")
    cpu = {name: ended[name] - started[name] for name in ended} if started and ended else {}
    return Measurement(result, cpu)


def machine_cpu() -> dict[str, float]:
    """Busy CPU seconds so far of each CPU (user+system+irq, not idle, not steal) and steal of all, from /proc/stat."""
    ticks = os.sysconf("SC_CLK_TCK")
    readings: dict[str, float] = {}
    for line in Path("/proc/stat").read_text().splitlines():
        if not line.startswith("cpu"):
            break
        name, *values = line.split()
        fields = [int(v) for v in values]
        steal = fields[7] if len(fields) > 7 else 0
        if name == "cpu":
            readings["steal"] = steal / ticks
        else:
            readings[name] = (sum(fields[:8]) - fields[3] - fields[4] - steal) / ticks
    return readings


# setting up the three targets


def start_upstream(workdir: Path, cert: Path, key: Path, secret: str) -> tuple[Process, int]:
    options = {"key": str(key), "cert": str(cert), "secret": secret, "sseDelayMs": SSE_DELAY_MS}
    process = spawn("upstream", ["node", str(LOAD / "upstream.mjs"), json.dumps(options)], workdir, stdout=subprocess.PIPE, text=True)
    line = process.popen.stdout.readline()  # type: ignore[union-attr]
    if not line:
        raise SystemExit(f"the upstream did not start:\n{process.logs()}")
    return process, json.loads(line)["port"]


def start_credgate(workdir: Path, upstream_port: int, upstream_ca: Path, secret: str, extra: list[str]) -> tuple[Process, dict[str, Any]]:
    executable = Path(sys.executable).with_name("credgate")
    if not executable.exists():
        raise SystemExit(f"{executable} not found: run `make install` first")
    data_dir = workdir / "credgate-data"
    api_port, gateway_port = free_port(), free_port()
    argv = [
        str(executable), "serve",
        "--data-dir", str(data_dir),
        "--api-port", str(api_port),
        "--gateway-port", str(gateway_port),
        "--connect-to", f"{API_HOST}:443:127.0.0.1:{upstream_port}",
        "--upstream-ca-bundle", str(upstream_ca),
        *extra,
    ]  # fmt: skip
    process = spawn("credgate", argv, workdir, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    api = f"http://127.0.0.1:{api_port}"
    wait_until(lambda: urllib.request.urlopen(f"{api}/v1/health", timeout=1).status == 200, 60, "credgate serve", process)
    bootstrap = json.loads((data_dir / "bootstrap.json").read_text())
    body = {
        "name": "bench upstream key",
        "type": "generic",
        "value": secret,
        "hostPattern": API_HOST,
        "injectionConfig": {"headerName": HEADER},
    }
    request = urllib.request.Request(
        f"{api}/v1/secrets",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {bootstrap['projectApiKey']}", "Content-Type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        if response.status != 201:
            raise SystemExit(f"creating the bench secret failed: {response.status} {response.read()!r}")
    return process, {
        "port": gateway_port,
        "token": bootstrap["agentToken"],
        "ca": str(Path(bootstrap["caCertPath"]).resolve()),  # relative paths are relative to our cwd, which serve shares
    }


def ensure_venv_tool(venv: Path, requirement: str, executable: str) -> Path:
    tool = venv / "bin" / executable
    if tool.exists():
        return tool
    log(f"installing {requirement} into {venv.relative_to(REPO)} (bench-only venv) ...")
    base = getattr(sys, "_base_executable", None) or shutil.which("python3") or sys.executable
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", requirement], check=True)
    if not tool.exists():
        raise SystemExit(f"{requirement} installed but {tool} is missing")
    return tool


def start_mitmproxy(workdir: Path, upstream_ca: Path, secret: str) -> tuple[Process, dict[str, Any], str]:
    mitmdump = ensure_venv_tool(MITM_VENV, MITM_REQUIREMENT, "mitmdump")
    version = subprocess.run([str(mitmdump), "--version"], capture_output=True, text=True).stdout.splitlines()[0].split(":", 1)[1].strip()
    confdir = workdir / "mitmproxy"
    port = free_port()
    argv = [
        str(mitmdump),
        "--listen-host", "127.0.0.1",
        "--listen-port", str(port),
        "--set", f"confdir={confdir}",
        "--set", f"ssl_verify_upstream_trusted_ca={upstream_ca}",
        "--modify-headers", f"/~q/{HEADER}/{secret}",
        "--quiet",
    ]  # fmt: skip
    process = spawn("mitmproxy", argv, workdir)
    ca = confdir / "mitmproxy-ca-cert.pem"

    def listening() -> bool:
        import socket

        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return ca.exists()

    wait_until(listening, 60, "mitmdump", process)
    return process, {"port": port, "ca": str(ca)}, version


def probe(target: Target, run: Callable[..., Measurement]) -> None:
    """A short run until every response is 200 (the gateway picks the new secret up within its poll)."""
    deadline = time.monotonic() + 20
    while True:
        statuses = run(scenario="load", connections=1, duration=0.3, warmup=0.1).result["statuses"]
        if set(statuses) == {"200"}:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"{target.name}: responses other than 200 during the probe: {statuses}")
        time.sleep(0.5)


# profiling


def profile_credgate(target: Target, args: argparse.Namespace, measure: Callable[..., Measurement], workdir: Path) -> list[str]:
    pyspy = ensure_venv_tool(PYSPY_VENV, PYSPY_REQUIREMENT, "py-spy")
    assert target.proxy is not None
    raw = workdir / "credgate.collapsed"
    seconds = max(3, int(args.duration))
    recorder = subprocess.Popen(
        [str(pyspy), "record", "--pid", str(target.proxy.pid), "--duration", str(seconds + 1), "--rate", "250",
         "--format", "raw", "--output", str(raw), "--nonblocking", "--threads"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    time.sleep(0.5)
    measure(target, scenario="load", connections=args.connections, duration=seconds, warmup=0.5)
    _, stderr = recorder.communicate(timeout=60)
    if not raw.exists():
        return [f"py-spy produced no profile: {stderr.strip()[-500:]}"]
    return summarize_collapsed(raw.read_text())


def summarize_collapsed(text: str, top: int = 18) -> list[str]:
    """Self and inclusive sample shares per function from py-spy's raw (collapsed) stacks, event-loop thread only.

    Time spent in C under a Python frame is charged to that frame: `send` includes TLS encryption and the
    socket write; `run (asyncio/runners.py)` is uvloop's own C code (epoll, socket reads, TLS records).
    """
    self_counts: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        frames = stack.split(";")
        if "credgate-store" in frames[0] or "ThreadPoolExecutor" in frames[0]:
            continue  # the store threads idle in the executor; the event-loop thread is the hot one
        frames = [frame for frame in frames[1:] if not frame.startswith("process ")]
        if not frames:
            continue
        count = int(count_text)
        total += count
        self_counts[_short(frames[-1])] += count
        for name in {_short(frame) for frame in frames}:
            inclusive[name] += count
    if not total:
        return ["no samples"]
    lines = [f"{total} samples of the event-loop thread; C time is charged to the calling Python frame"]
    lines.append("self:")
    lines += [f"  {count / total:6.1%}  {name}" for name, count in self_counts.most_common(top)]
    lines.append("inclusive (credgate frames and logging):")
    interesting = [(name, count) for name, count in inclusive.most_common(300) if "credgate" in name or "logging" in name or "formatter" in name]
    lines += [f"  {count / total:6.1%}  {name}" for name, count in interesting[:top]]
    return lines


def _short(frame: str) -> str:
    # "function (path/to/module.py:123)" -> "function (module.py)"; keep the package for site-packages
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    path = where.rsplit(":", 1)[0]
    parts = Path(path).parts
    if "site-packages" in parts:
        path = "/".join(parts[parts.index("site-packages") + 1 :])
    elif "credgate_gateway" in parts or "credgate" in parts:
        anchor = "credgate_gateway" if "credgate_gateway" in parts else "credgate"
        path = "/".join(parts[parts.index(anchor) :])
    else:
        path = Path(path).name
    return f"{name} ({path})"


# the run


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def spread(values: list[float], digits: int) -> str:
    if len(values) < 2:
        return ""
    return f" [{min(values):.{digits}f}–{max(values):.{digits}f}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=4.0, help="seconds measured per scenario and round (default 4)")
    parser.add_argument("--warmup", type=float, default=1.0, help="seconds of load before each measured window (default 1)")
    parser.add_argument("--connections", type=int, default=32, help="concurrent keep-alive connections (default 32)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds; the median is reported (default 5)")
    parser.add_argument("--sse-requests", type=int, default=200, help="SSE requests per round and target (default 200)")
    parser.add_argument("--skip-mitmproxy", action="store_true", help="do not install or run mitmproxy")
    parser.add_argument("--pin", choices=PIN_CHOICES, default="split", help="CPU placement (default split; see Pinning)")
    parser.add_argument("--profile", action="store_true", help="after the rounds, profile credgate under load with py-spy")
    parser.add_argument(
        "--serve-arg", action="append", default=[], metavar="ARG",
        help="extra argument for credgate serve, for experiments (e.g. --serve-arg=--log-level=WARNING)",
    )
    parser.add_argument("--no-write", action="store_true", help="print only; leave bench/RESULTS.md alone")
    args = parser.parse_args()

    if shutil.which("node") is None:
        print("SKIPPED: node (18+) is not installed; the load generator and the upstream are Node scripts.")
        return 0
    node_version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    if int(node_version.lstrip("v").split(".")[0]) < 18:
        print(f"SKIPPED: node {node_version} is too old (18+ needed).")
        return 0
    pinning = Pinning(args.pin)
    started_at, revision = now_utc(), git_revision()  # the code credgate serve runs is the code at its start
    loadavg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    if float(loadavg.split()[0]) > 0.7:
        log(f"warning: the machine is not idle (load average {loadavg}); the numbers will be noisy")

    workdir = Path(tempfile.mkdtemp(prefix="credgate-bench-"))
    processes: list[Process] = []
    secret = "bench_" + secrets.token_hex(24)
    try:
        upstream_ca, cert, key = make_upstream_certificates(workdir)
        upstream, upstream_port = start_upstream(workdir, cert, key, secret)
        processes.append(upstream)
        credgate, gateway = start_credgate(workdir, upstream_port, upstream_ca, secret, args.serve_arg)
        processes.append(credgate)
        base = {"servername": API_HOST, "path": "/json"}
        targets = [
            Target("direct", {**base, "host": "127.0.0.1", "port": upstream_port, "ca": [str(upstream_ca)], "headers": {HEADER: secret}}),
            Target(
                "credgate",
                {**base, "proxy": {"host": "127.0.0.1", "port": gateway["port"], "auth": f"agent:{gateway['token']}"},
                 "connectTarget": f"{API_HOST}:443", "ca": [gateway["ca"]]},
                credgate,
            ),
        ]  # fmt: skip
        mitm_version = None
        mitm_started = None
        if not args.skip_mitmproxy:
            try:
                mitm_started = start_mitmproxy(workdir, upstream_ca, secret)
            except (OSError, subprocess.CalledProcessError) as error:
                log(f"mitmproxy could not be installed or started ({error}); running without it")
                args.skip_mitmproxy = True
        if mitm_started is not None:
            mitm, mitm_info, mitm_version = mitm_started
            processes.append(mitm)
            targets.append(
                Target(
                    "mitmproxy",
                    # CONNECT names the real address; SNI and Host still say api.bench.test
                    {**base, "proxy": {"host": "127.0.0.1", "port": mitm_info["port"]},
                     "connectTarget": f"127.0.0.1:{upstream_port}", "ca": [mitm_info["ca"]]},
                    mitm,
                ),
            )  # fmt: skip
        timeout = args.warmup + args.duration + 120

        def measure_unchecked(target: Target, **options: Any) -> Measurement:
            loadgen_cpus = pinning.apply(target.name, processes)
            return run_loadgen({**target.options, **options}, processes, loadgen_cpus, timeout)

        def measure(target: Target, **options: Any) -> Measurement:
            measurement = measure_unchecked(target, **options)
            statuses = measurement.result["statuses"]
            if set(statuses) - {"200"}:
                raise SystemExit(f"{target.name}: responses other than 200: {statuses}")
            return measurement

        for target in targets:
            probe(target, lambda **options: measure_unchecked(target, **options))

        many: dict[str, list[Measurement]] = {t.name: [] for t in targets}
        one: dict[str, list[Measurement]] = {t.name: [] for t in targets}
        sse: dict[str, list[Measurement]] = {t.name: [] for t in targets if t.name != "mitmproxy"}
        for round_number in range(args.rounds):
            order = targets if round_number % 2 == 0 else list(reversed(targets))
            label = f"round {round_number + 1}/{args.rounds}"
            for target in order:
                log(f"{label}: {target.name}, {args.connections} connections")
                many[target.name].append(measure(target, scenario="load", connections=args.connections, duration=args.duration, warmup=args.warmup))
            for target in order:
                log(f"{label}: {target.name}, 1 connection")
                one[target.name].append(measure(target, scenario="load", connections=1, duration=args.duration, warmup=args.warmup))
            for target in order:
                if target.name in sse:
                    log(f"{label}: {target.name}, SSE first event")
                    sse[target.name].append(measure(target, path="/sse", scenario="sse", requests=args.sse_requests, warmupRequests=20))
        memory = {t.name: memory_kib(t.proxy.pid) for t in targets if t.proxy is not None}
        profile = None
        if args.profile:
            log("profiling credgate under load with py-spy")
            profile = profile_credgate(targets[1], args, measure, workdir)
        for process in processes:
            if not process.alive():
                raise SystemExit(f"{process.name} died during the run:\n{process.logs()}")
    finally:
        for process in reversed(processes):
            process.stop()

    versions = {
        "python": sys.version.split()[0],
        "node": node_version,
        "credgate": revision,
        "mitmproxy": mitm_version,
        **package_versions("uvloop", "httptools"),
    }
    report = Report(args, targets=[t.name for t in targets], many=many, one=one, sse=sse, memory=memory, versions=versions, profile=profile, loadavg=loadavg, date=started_at)
    print(report.text())
    if not args.no_write:
        write_section("gateway", report.markdown())
        print("\nwrote the gateway section of bench/RESULTS.md")
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


def package_versions(*names: str) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            pass
    import ssl

    found["OpenSSL (python)"] = ssl.OPENSSL_VERSION.replace("OpenSSL ", "")
    return found


@dataclass
class Report:
    args: argparse.Namespace
    targets: list[str]
    many: dict[str, list[Measurement]]
    one: dict[str, list[Measurement]]
    sse: dict[str, list[Measurement]]
    memory: dict[str, dict[str, int]]
    versions: dict[str, Any]
    profile: list[str] | None
    loadavg: str = ""
    date: str = field(default_factory=now_utc)

    # numbers

    def rps(self, name: str) -> list[float]:
        return [m.result["rps"] for m in self.many[name]]

    def lat(self, runs: list[Measurement], key: str) -> list[float]:
        return [m.result["latency"][key] for m in runs]

    def cpu_per_request_us(self, name: str, process: str) -> list[float]:
        return [m.cpu.get(process, 0.0) / m.result["requests"] * 1e6 for m in self.many[name] if m.result["requests"]]

    def busy(self, name: str, process: str) -> float:
        return median([m.cpu.get(process, 0.0) / m.result["seconds"] * 100 for m in self.many[name]])

    def sse_first(self, name: str, key: str) -> list[float]:
        return [m.result["firstEvent"][key] for m in self.sse[name]]

    def headline(self) -> dict[str, float]:
        numbers: dict[str, float] = {}
        direct_rps, credgate_rps = median(self.rps("direct")), median(self.rps("credgate"))
        numbers["credgate_vs_direct"] = credgate_rps / direct_rps
        if "mitmproxy" in self.many:
            numbers["credgate_vs_mitmproxy"] = credgate_rps / median(self.rps("mitmproxy"))
        # added latency per round (same round's direct), then the median
        added = [c - d for c, d in zip(self.lat(self.one["credgate"], "p50"), self.lat(self.one["direct"], "p50"))]
        numbers["added_p50_ms"] = median(added)
        added99 = [c - d for c, d in zip(self.lat(self.one["credgate"], "p99"), self.lat(self.one["direct"], "p99"))]
        numbers["added_p99_ms"] = median(added99)
        sse_added = [c - d for c, d in zip(self.sse_first("credgate", "p50"), self.sse_first("direct", "p50"))]
        numbers["sse_added_p50_ms"] = median(sse_added)
        sse_added99 = [c - d for c, d in zip(self.sse_first("credgate", "p99"), self.sse_first("direct", "p99"))]
        numbers["sse_added_p99_ms"] = median(sse_added99)
        if "mitmproxy" in self.one:
            added_mitm = [m - d for m, d in zip(self.lat(self.one["mitmproxy"], "p50"), self.lat(self.one["direct"], "p50"))]
            numbers["mitm_added_p50_ms"] = median(added_mitm)
        return numbers

    def verdicts(self) -> list[str]:
        h = self.headline()
        lines = []
        if "credgate_vs_mitmproxy" in h:
            ratio = h["credgate_vs_mitmproxy"]
            lines.append(f"{'MET' if ratio >= 10 else 'MISSED'}: credgate throughput >= 10x mitmproxy: {ratio:.1f}x")
        else:
            lines.append("NOT RUN: credgate vs mitmproxy (--skip-mitmproxy)")
        ratio = h["credgate_vs_direct"]
        lines.append(f"{'MET' if ratio >= 0.30 else 'MISSED'}: credgate throughput >= 30% of direct (aim): {ratio:.0%}")
        added = h["added_p50_ms"]
        lines.append(f"{'MET' if added < TARGETS_ADDED_P50_MS else 'MISSED'}: added p50 latency at 1 connection < {TARGETS_ADDED_P50_MS} ms: {added:.3f} ms")
        sse_added, sse_added99 = h["sse_added_p50_ms"], h["sse_added_p99_ms"]
        lines.append(
            f"{'MET' if sse_added < TARGET_SSE_ADDED_MS else 'MISSED'}: first SSE event delayed < {TARGET_SSE_ADDED_MS:.0f} ms: "
            f"{sse_added:+.3f} ms at p50 ({sse_added99:+.3f} ms at p99"
            + (", above the target" if sse_added99 >= TARGET_SSE_ADDED_MS else "") + ")"
        )
        return lines

    # tables

    def throughput_rows(self) -> list[list[str]]:
        direct = median(self.rps("direct"))
        rows = []
        for name in self.targets:
            rps = self.rps(name)
            proxy_cpu = "" if name == "direct" else f"{median(self.cpu_per_request_us(name, name)):.0f}"
            busy = "/".join(
                f"{self.busy(name, process):.0f}" for process in ("loadgen", "upstream", name) if process != "direct"
            )
            cores = "/".join(f"{self.busy(name, f'cpu{cpu}'):.0f}" for cpu in range(os.cpu_count() or 1))
            steal = self.busy(name, "steal")
            if steal >= 1:
                cores += f" (steal {steal:.0f})"
            rows.append(
                [
                    name,
                    f"{median(rps):,.0f}{spread(rps, 0)}",
                    f"{median(rps) / direct:.0%}",
                    f"{median(self.lat(self.many[name], 'p50')):.2f}",
                    f"{median(self.lat(self.many[name], 'p99')):.2f}",
                    proxy_cpu,
                    busy,
                    cores,
                ]
            )
        return rows

    THROUGHPUT_HEADER = ["target", "req/s [min–max]", "vs direct", "p50 ms", "p99 ms", "proxy CPU µs/req", "process CPU % gen/upstream/proxy", "core busy % cpu0/cpu1"]

    def latency_rows(self) -> list[list[str]]:
        rows = []
        direct_p50 = self.lat(self.one["direct"], "p50")
        for name in self.targets:
            p50, p99 = self.lat(self.one[name], "p50"), self.lat(self.one[name], "p99")
            added = "" if name == "direct" else f"{median([a - b for a, b in zip(p50, direct_p50)]):+.3f}"
            rows.append([name, f"{median(p50):.3f}{spread(p50, 3)}", f"{median(p99):.3f}", added, f"{median([m.result['rps'] for m in self.one[name]]):,.0f}"])
        return rows

    LATENCY_HEADER = ["target", "p50 ms [min–max]", "p99 ms", "added p50 ms", "req/s"]

    def sse_rows(self) -> list[list[str]]:
        rows = []
        direct = self.sse_first("direct", "p50")
        for name in self.sse:
            p50, p99 = self.sse_first(name, "p50"), self.sse_first(name, "p99")
            added = "" if name == "direct" else f"{median([a - b for a, b in zip(p50, direct)]):+.3f}"
            rows.append([name, f"{median(p50):.3f}{spread(p50, 3)}", f"{median(p99):.3f}", added])
        return rows

    SSE_HEADER = ["target", "first event p50 ms [min–max]", "p99 ms", "added p50 ms"]

    def memory_rows(self) -> list[list[str]]:
        return [[name, f"{m['VmRSS'] / 1024:.1f}", f"{m['VmHWM'] / 1024:.1f}"] for name, m in self.memory.items()]

    MEMORY_HEADER = ["proxy process", "VmRSS MiB after the run", "VmHWM MiB (peak)"]

    def setup_line(self) -> str:
        a = self.args
        return (
            f"{a.rounds} interleaved rounds, median shown; {a.duration:g} s measured per scenario after {a.warmup:g} s warm-up; "
            f"{a.connections} connections; SSE: {a.sse_requests} requests per round; CPU pinning: {a.pin}"
            + (f"; credgate serve extra arguments: {' '.join(a.serve_arg)}" if a.serve_arg else "")
        )

    def text(self) -> str:
        parts = [
            f"gateway benchmark, {self.date}; {machine()}; load average at start {self.loadavg}",
            "versions: " + ", ".join(f"{k} {v}" for k, v in self.versions.items() if v),
            self.setup_line(),
            "",
            f"{self.args.connections} concurrent keep-alive connections, GET /json (~1 KiB JSON):",
            text_table(self.THROUGHPUT_HEADER, self.throughput_rows()),
            "",
            "1 connection:",
            text_table(self.LATENCY_HEADER, self.latency_rows()),
            "",
            f"first SSE event (upstream sends head + event 1 at once, the rest {SSE_DELAY_MS} ms later):",
            text_table(self.SSE_HEADER, self.sse_rows()),
            "",
            text_table(self.MEMORY_HEADER, self.memory_rows()),
            "",
            *self.verdicts(),
        ]
        if self.profile:
            parts += ["", "py-spy profile of credgate under load (extra run after the measured rounds):", *self.profile]
        return "\n".join(parts)

    HISTORY_PREFIX = "- run "
    HISTORY_KEEP = 5

    def history_line(self) -> str:
        h = self.headline()
        mitm = f" = {h['credgate_vs_mitmproxy']:.1f}x mitmproxy," if "credgate_vs_mitmproxy" in h else ""
        extra = f", credgate serve {' '.join(self.args.serve_arg)}" if self.args.serve_arg else ""
        return (
            f"{self.HISTORY_PREFIX}{self.date} ({self.versions['credgate']}, pin {self.args.pin}{extra}): credgate "
            f"{median(self.rps('credgate')):,.0f} req/s{mitm} {h['credgate_vs_direct']:.0%} of direct "
            f"({median(self.rps('direct')):,.0f}); {median(self.cpu_per_request_us('credgate', 'credgate')):.0f} µs CPU/request; "
            f"added p50 at 1 connection {h['added_p50_ms']:+.3f} ms; first SSE event {h['sse_added_p50_ms']:+.3f} ms"
        )

    def markdown(self) -> str:
        a = self.args
        command = ".venv/bin/python bench/gateway.py" + (
            "" if (a.duration, a.connections, a.rounds, a.pin, a.skip_mitmproxy, a.serve_arg) == (4.0, 32, 5, "split", False, [])
            else f" --duration {a.duration:g} --connections {a.connections} --rounds {a.rounds} --pin {a.pin}"
            + (" --skip-mitmproxy" if a.skip_mitmproxy else "")
            + "".join(f" --serve-arg={arg}" for arg in a.serve_arg)
        )
        versions = ", ".join(f"{k} {v}" for k, v in self.versions.items() if v)
        parts = [
            "## Gateway: direct vs credgate vs mitmproxy (`bench/gateway.py`)",
            "",
            "A local HTTPS upstream (Node, raw TLS, keep-alive; `GET /json` answers ~1 KiB of JSON) reached directly, "
            "through `credgate serve` (CONNECT + TLS interception, a generic header secret injected into every request, "
            "upstream TLS verified) and through `mitmdump` (CONNECT + TLS interception, the same header added with "
            "`--modify-headers`, upstream TLS verified). The upstream answers 401 without the header, and any non-200 "
            "fails the run, so every counted request was credentialed. The load generator is one Node process with raw "
            "TLS sockets and a closed loop per keep-alive connection. **Generator, upstream and proxy share the machine's "
            "2 cores.** They are pinned (`sched_setaffinity`, what `taskset` does; `--pin split`, the default) before "
            "each scenario: direct = generator on CPU 0, upstream on CPU 1; proxied = the proxy alone on CPU 1 (like a "
            "1-vCPU gateway task; both proxies are single-threaded event loops), generator and upstream sharing CPU 0. "
            "Pinning makes the split explicit and the bottleneck visible; it did not clearly change the spread (an "
            "unpinned run, `--pin none`, gave ratios within the pinned runs' range). Proxy CPU per request, each "
            "process's CPU share and each core's busy share come from /proc over the measured window: a proxied run "
            "with CPU 1 near 100% and CPU 0 well below is limited by the proxy, not by the generator or the upstream. "
            "The VM is noisy (direct throughput moves ±20% between runs), so compare the ratios of one run, and the "
            "proxy CPU µs per request, rather than absolute req/s across runs.",
            "",
            f"Run: `{command}` (installs mitmproxy into `bench/.venv-mitmproxy/` on first use; "
            "`--skip-mitmproxy`, `--duration S`, `--connections N`, `--rounds N`, `--pin split|none`, `--profile` for a "
            "py-spy run after the measured rounds, `--serve-arg` to pass an option to `credgate serve`, `--no-write`).",
            "",
            f"Latest run: {self.date}; {machine()}; load average at start {self.loadavg}; {versions}. {self.setup_line()}.",
            "",
            f"**{a.connections} concurrent keep-alive connections**",
            "",
            markdown_table(self.THROUGHPUT_HEADER, self.throughput_rows()),
            "",
            "**1 connection**",
            "",
            markdown_table(self.LATENCY_HEADER, self.latency_rows()),
            "",
            f"**First SSE event** (upstream sends headers + event 1 immediately, the rest {SSE_DELAY_MS} ms later; time from "
            "request written to event 1 read)",
            "",
            markdown_table(self.SSE_HEADER, self.sse_rows()),
            "",
            "**Memory** (the credgate process also runs the management API)",
            "",
            markdown_table(self.MEMORY_HEADER, self.memory_rows()),
            "",
            "**Targets** (latest run)",
            "",
            *[f"- {line}" for line in self.verdicts()],
            "",
            "**Recent runs** (newest first; each line's ratios come from that run alone)",
            "",
            self.history_line(),
            *section_lines("gateway", self.HISTORY_PREFIX)[: self.HISTORY_KEEP - 1],
        ]
        return "\n".join(parts)


if __name__ == "__main__":
    sys.exit(main())
