"""Streaming through the real gateway: SSE events reach the agent as they are sent, and a large upload
goes upstream intact without the gateway holding it in memory."""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import threading
from typing import Iterator

import pytest

from tests.integration.gateway_engine.fakes import UpstreamRequest

pytestmark = pytest.mark.e2e

HOSTS = ("api.anthropic.com", "upload.example.test")
MIB = 1024 * 1024
UPLOAD_MIB = 100
# Generous: the gateway's own buffers are a few hundred KiB; a buffered body would add ~100 MiB.
MEMORY_GROWTH_LIMIT_KIB = 60 * 1024
HANDSHAKE_TIMEOUT = 10.0



def test_sse_events_reach_the_agent_before_the_upstream_sends_the_next_one(gw):
    first_event_received = threading.Event()
    second_event_sent = threading.Event()

    async def two_events(request: UpstreamRequest) -> None:
        await request.start(200, [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")])
        await request.send(b'event: message_start\ndata: {"n": 1}\n\n')
        # The second event waits for the agent to have the first (or, if it never arrives, gives up).
        await asyncio.get_running_loop().run_in_executor(None, first_event_received.wait, HANDSHAKE_TIMEOUT)
        second_event_sent.set()
        await request.send(b'event: message_stop\ndata: {"n": 2}\n\n')
        await request.end()

    gw.upstream.handlers["api.anthropic.com"] = two_events
    request = {"model": "claude-sonnet-4-5", "max_tokens": 64, "stream": True, "messages": [{"role": "user", "content": "hi"}]}

    with gw.client.stream("POST", "https://api.anthropic.com/v1/messages", json=request, headers={"anthropic-version": "2023-06-01"}) as response:
        assert response.status_code == 200
        assert response.headers["content-type"] == "text/event-stream"
        chunks = response.iter_raw()
        received = b""
        while b"\n\n" not in received:
            received += next(chunks)
        first_arrived_alone = not second_event_sent.is_set()
        first_event_received.set()
        received += b"".join(chunks)

    assert first_arrived_alone, "the agent got event 1 only after the upstream had sent event 2: the gateway held it back"
    assert received == b'event: message_start\ndata: {"n": 1}\n\nevent: message_stop\ndata: {"n": 2}\n\n'


def test_a_100_mb_upload_reaches_the_upstream_intact_while_gateway_memory_stays_bounded(gw):
    async def digest(request: UpstreamRequest) -> None:
        hasher, count = hashlib.sha256(), 0
        async for chunk in request.chunks():
            hasher.update(chunk)
            count += len(chunk)
        answer = {"bytes": count, "sha256": hasher.hexdigest(), "transferEncoding": request.header("transfer-encoding")}
        await request.respond(200, [("Content-Type", "application/json")], json.dumps(answer).encode())

    gw.upstream.handlers["upload.example.test"] = digest
    assert gw.client.post("https://upload.example.test/warm-up", content=b"x").status_code == 200
    before = gw.memory_kib()
    block = os.urandom(MIB)
    sent = hashlib.sha256()

    def body() -> Iterator[bytes]:
        for index in range(UPLOAD_MIB):
            chunk = index.to_bytes(4, "big") + block[4:]
            sent.update(chunk)
            yield chunk

    response = gw.client.post("https://upload.example.test/v1/files", content=body(), timeout=120)
    after = gw.memory_kib()

    assert response.status_code == 200, response.text
    assert response.json() == {"bytes": UPLOAD_MIB * MIB, "sha256": sent.hexdigest(), "transferEncoding": "chunked"}
    assert after["VmHWM"] - before["VmHWM"] < MEMORY_GROWTH_LIMIT_KIB, (before, after)
    assert after["VmRSS"] - before["VmRSS"] < MEMORY_GROWTH_LIMIT_KIB, (before, after)
