"""Helpers shared by the benchmark scripts: the machine's description, /proc readings, RESULTS.md sections."""
from __future__ import annotations

import datetime as dt
import os
import platform
import re
import socket
import subprocess
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "RESULTS.md"
_TICKS = os.sysconf("SC_CLK_TCK")

RESULTS_PREAMBLE = """# Benchmark results

Each benchmark lives in `bench/`, prints ratios against a baseline measured in the same run, and writes
its section here (the gateway, API and cold-import scripts update their own section; the two
micro-benchmarks print a table that is pasted in). Run them from the repository root after `make install`.
Timing is never asserted in the test suite; these numbers are the record.

All numbers come from the 2-vCPU development/CI machine kind (shared, noisy); compare ratios, not absolutes.
"""


def now_utc() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kib = int(re.search(r"MemTotal:\s+(\d+)", Path("/proc/meminfo").read_text()).group(1))  # type: ignore[union-attr]
        memory = f", {kib / 1024 / 1024:.0f} GiB RAM"
    except (OSError, AttributeError):
        pass
    return f"{os.cpu_count()} vCPU {model}{memory}, Linux {platform.release()}"


def git_revision() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        return head + (" + uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads) so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICKS


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS (now) and VmHWM (peak) in KiB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0])
    return found


def write_section(key: str, text: str) -> None:
    """Replace (or append) the section between `<!-- BEGIN key -->` and `<!-- END key -->` in RESULTS.md."""
    begin, end = f"<!-- BEGIN {key} -->", f"<!-- END {key} -->"
    block = f"{begin}\n{text.strip()}\n{end}"
    current = RESULTS.read_text() if RESULTS.exists() else RESULTS_PREAMBLE
    if begin in current and end in current:
        before, rest = current.split(begin, 1)
        after = rest.split(end, 1)[1]
        updated = before + block + after
    else:
        updated = current.rstrip() + "\n\n" + block + "\n"
    RESULTS.write_text(updated)


def markdown_table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    align = align or "l" + "r" * (len(header) - 1)
    marks = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(marks) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def text_table(header: list[str], rows: list[list[str]], align: str | None = None) -> str:
    align = align or "l" + "r" * (len(header) - 1)
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]

    def line(cells: list[str]) -> str:
        return "  ".join(str(c).ljust(w) if a == "l" else str(c).rjust(w) for c, w, a in zip(cells, widths, align))

    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, rows)])


DEPS_DIR = BENCH / ".venv-deps"
"""Bench-only packages (git-ignored by bench/.venv-*/) for when .venv has only `make install`'s dependencies."""


def ensure_modules(modules: dict[str, str]) -> None:
    """Make each module importable: `{module: requirement}`. Missing ones are pip-installed into bench/.venv-deps
    (constrained to the versions already in the running venv) and that folder goes to the END of sys.path,
    so the venv's own packages always win."""
    import importlib
    import importlib.util
    import sys

    if DEPS_DIR.is_dir() and str(DEPS_DIR) not in sys.path:
        sys.path.append(str(DEPS_DIR))
        importlib.invalidate_caches()
    missing = [requirement for module, requirement in modules.items() if importlib.util.find_spec(module) is None]
    if not missing:
        return
    print(f"installing {', '.join(missing)} into {DEPS_DIR.relative_to(REPO)} (bench-only) ...", file=sys.stderr, flush=True)
    frozen = subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable"], capture_output=True, text=True, check=True
    ).stdout
    import tempfile

    constraints = Path(tempfile.mkstemp(prefix="bench-constraints-", suffix=".txt")[1])
    DEPS_DIR.mkdir(exist_ok=True)
    constraints.write_text("\n".join(line for line in frozen.splitlines() if "==" in line) + "\n")
    try:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--upgrade",
             "--target", str(DEPS_DIR), "-c", str(constraints), *missing],
            check=True,
        )  # fmt: skip
    finally:
        constraints.unlink(missing_ok=True)
    if str(DEPS_DIR) not in sys.path:
        sys.path.append(str(DEPS_DIR))
    importlib.invalidate_caches()


def section_lines(key: str, prefix: str) -> list[str]:
    """Lines of the current `key` section of RESULTS.md that start with `prefix` (e.g. to carry a history over)."""
    if not RESULTS.exists():
        return []
    text = RESULTS.read_text()
    begin, end = f"<!-- BEGIN {key} -->", f"<!-- END {key} -->"
    if begin not in text or end not in text:
        return []
    block = text.split(begin, 1)[1].split(end, 1)[0]
    return [line for line in block.splitlines() if line.startswith(prefix)]


def package_versions(*names: str) -> str:
    """The interpreter, this checkout's revision and the named distributions' versions, for a results header."""
    import sys
    from importlib.metadata import PackageNotFoundError, version

    parts = [f"python {sys.version.split()[0]}", f"credgate {git_revision()}"]
    for name in names:
        try:
            parts.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            pass
    return ", ".join(parts)
