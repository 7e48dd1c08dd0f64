"""The per-request log line: one JSON object per line, batched, nothing lost at shutdown."""
from __future__ import annotations

import asyncio
import json
import re

from credgate_gateway.access_log import AccessLog


def test_lines_are_batched_until_flush_and_each_is_one_json_object(tmp_path):
    path = tmp_path / "access.log"
    with open(path, "w") as stream:
        log = AccessLog("credgate-gateway", stream)

        async def scenario() -> str:
            log.write({"agentId": "agt_1", "status": 200, "path": "/v1/messages", "injectedSecretIds": ["sec_1"]})
            log.write({"agentId": "agt_2", "status": 403, "path": "/x\"y", "injectedSecretIds": []})
            before = path.read_text()
            log.flush()
            return before

        assert asyncio.run(scenario()) == ""  # nothing written per request
    lines = path.read_text().splitlines()
    entries = [json.loads(line) for line in lines]
    assert [(e["agentId"], e["status"], e["path"]) for e in entries] == [("agt_1", 200, "/v1/messages"), ("agt_2", 403, "/x\"y")]
    assert all(e["message"] == "proxied request" and e["service"] == "credgate-gateway" for e in entries)
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", e["timestamp"]) for e in entries)


def test_the_timer_flushes_without_an_explicit_call(tmp_path):
    path = tmp_path / "access.log"
    with open(path, "w") as stream:
        log = AccessLog("svc", stream)

        async def scenario() -> None:
            log.write({"status": 200})
            await asyncio.sleep(0.3)

        asyncio.run(scenario())
    assert json.loads(path.read_text())["status"] == 200
