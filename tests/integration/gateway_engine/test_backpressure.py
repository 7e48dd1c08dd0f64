"""Large bodies stream with bounded memory: a side that stops reading stops the other side being read."""
from __future__ import annotations

import asyncio
import hashlib
import os
import threading
import time

from credgate_gateway.proxy import Limits

from .fakes import API_HOST, UpstreamRequest

MB = 1024 * 1024
LIMITS = Limits(write_high_water=256 * 1024, write_low_water=64 * 1024)
# High-water mark, plus at most one read (256 KiB) and TLS framing written after the pause.
BOUND = 2 * MB


def rss() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class PeakRss:
    """Samples this process's RSS in the background (the proxy, the upstream and the client all live here)."""

    def __init__(self) -> None:
        self.baseline = rss()
        self.peak = self.baseline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, rss())

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    @property
    def growth(self) -> int:
        return self.peak - self.baseline


async def wait_until(condition, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "condition never held"
        await asyncio.sleep(0.01)


def test_a_100_mb_upload_streams_through_with_bounded_memory(setup):
    total = 100 * MB
    block = os.urandom(64 * 1024)
    expected = hashlib.sha256(block * (total // len(block))).hexdigest()
    state = {}

    async def slow_reader(request: UpstreamRequest) -> None:
        # Read nothing until the proxy has had to stop reading the agent; then linger so that a proxy
        # without backpressure would visibly pile the upload up in memory.
        stats = s.proxy.server.stats
        await wait_until(lambda: stats.peak_upstream_buffer >= LIMITS.write_high_water)
        await asyncio.sleep(0.3)
        digest = hashlib.sha256()
        size = 0
        async for chunk in request.chunks():
            digest.update(chunk)
            size += len(chunk)
        state.update(size=size, digest=digest.hexdigest())
        await request.respond(200, [], b"stored")

    s = setup(slow_reader, limits=LIMITS)

    def upload():
        for _ in range(total // len(block)):
            yield block

    with PeakRss() as memory, s.client() as client:
        response = client.post(f"https://{API_HOST}/upload", content=upload(), headers={"Content-Length": str(total)})
    assert response.status_code == 200 and response.content == b"stored"
    assert state == {"size": total, "digest": expected}
    stats = s.proxy.server.stats
    assert LIMITS.write_high_water <= stats.peak_upstream_buffer < BOUND
    assert stats.peak_request_buffer < BOUND
    assert memory.growth < 50 * MB, f"RSS grew by {memory.growth / MB:.0f} MB"
    assert s.hooks.wait_records(1)[0].bytes_in == total


def test_a_slow_agent_throttles_the_upstream_with_bounded_memory(setup):
    total = 40 * MB
    block = os.urandom(256 * 1024)

    async def fast_writer(request: UpstreamRequest) -> None:
        await request.start(200, [("Content-Type", "application/octet-stream")])
        for _ in range(total // len(block)):
            await request.send(block)
        await request.end()

    s = setup(fast_writer, limits=LIMITS)
    stats = s.proxy.server.stats
    received = 0
    with PeakRss() as memory, s.client() as client:
        with client.stream("GET", f"https://{API_HOST}/download") as response:
            chunks = response.iter_raw()
            received += len(next(chunks))
            deadline = time.monotonic() + 20
            while stats.peak_client_buffer < LIMITS.write_high_water:  # the agent is not reading
                assert time.monotonic() < deadline
                time.sleep(0.01)
            time.sleep(0.3)
            for chunk in chunks:
                received += len(chunk)
    assert received == total
    assert LIMITS.write_high_water <= stats.peak_client_buffer < BOUND
    assert memory.growth < 50 * MB, f"RSS grew by {memory.growth / MB:.0f} MB"
    assert s.hooks.observers[0].complete is True
