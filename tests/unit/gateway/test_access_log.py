"""The per-request log line: one JSON object per line, batched, nothing lost at shutdown."""
from __future__ import annotations

import asyncio
import json
import re

from credgate_gateway.access_log import AccessLog
from credgate_gateway.pipeline import RequestNote
from credgate_gateway.proxy import RequestRecord
from credgate_gateway.tenancy import AgentIdentity

AGENT = AgentIdentity("agt_1", "Default agent", "org_1", "prj_1", None)


def _record(path: str, status: int, note: RequestNote | None, error: str | None = None) -> RequestRecord:
    return RequestRecord("POST", "https", "api.anthropic.com", 443, path, status, 12, 34, 0.0015, error, ("127.0.0.1", 1), True, note)


def test_lines_are_batched_until_flush_and_each_is_one_json_object(tmp_path):
    path = tmp_path / "access.log"
    with open(path, "w") as stream:
        log = AccessLog("credgate-gateway", stream)

        async def scenario() -> str:
            log.write(AGENT, _record("/v1/messages", 200, RequestNote(("sec_1", "sec_2"), None)))
            log.write(None, _record('/odd"path\\\u00e9\n', 407, None, "proxy_auth_required"))
            log.write(AGENT, _record("/x", 403, RequestNote((), "rul_1"), "blocked_by_policy"))
            before = path.read_text()
            log.flush()
            return before

        assert asyncio.run(scenario()) == ""  # nothing written per request
    entries = [json.loads(line) for line in path.read_text().splitlines()]
    assert [{k: e[k] for k in ("agentId", "path", "status", "injectedSecretIds", "ruleId", "error")} for e in entries] == [
        {"agentId": "agt_1", "path": "/v1/messages", "status": 200, "injectedSecretIds": ["sec_1", "sec_2"], "ruleId": None, "error": None},
        {"agentId": None, "path": '/odd"path\\\u00e9\n', "status": 407, "injectedSecretIds": [], "ruleId": None, "error": "proxy_auth_required"},
        {"agentId": "agt_1", "path": "/x", "status": 403, "injectedSecretIds": [], "ruleId": "rul_1", "error": "blocked_by_policy"},
    ]
    first = entries[0]
    assert (first["organizationId"], first["projectId"], first["method"], first["host"]) == ("org_1", "prj_1", "POST", "api.anthropic.com")
    assert (first["durationMs"], first["bytesIn"], first["bytesOut"]) == (1.5, 12, 34)
    assert all(e["message"] == "proxied request" and e["service"] == "credgate-gateway" for e in entries)
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", e["timestamp"]) for e in entries)


def test_the_timer_flushes_without_an_explicit_call(tmp_path):
    path = tmp_path / "access.log"
    with open(path, "w") as stream:
        log = AccessLog("svc", stream)

        async def scenario() -> None:
            log.write(AGENT, _record("/", 200, None))
            await asyncio.sleep(0.3)

        asyncio.run(scenario())
    assert json.loads(path.read_text())["status"] == 200
