"""The gateway's per-request log line: JSON, one per request, written in batches.

It is the one log line on the hot path, so it skips the logging module (record objects,
a lock and a write syscall per line cost more than the rest of the pipeline): a request
only appends its record; lines are formatted and written every 100 ms, at 512 lines,
and on shutdown. Never header values, queries or bodies: those can carry credentials.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any, TextIO

from credgate_gateway.proxy import RequestRecord

_FLUSH_SECONDS = 0.1
_FLUSH_LINES = 512
_quote = json.encoder.encode_basestring_ascii  # C-accelerated; escapes whatever a client put in a path


def _string(value: str | None) -> str:
    return "null" if value is None else _quote(value)


class AccessLog:
    def __init__(self, service: str, stream: TextIO | None = None) -> None:
        self._fd = (stream or sys.stderr).fileno()
        self._prefix = f'{{"level":"INFO","service":{_quote(service)},"message":"proxied request","timestamp":"'
        self._pending: list[tuple[float, Any, RequestRecord]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._second = -1
        self._stamp = ""

    def write(self, identity: Any, record: RequestRecord) -> None:
        """`identity` is the pipeline's AgentIdentity (or None); `record.note` its RequestNote (or None)."""
        self._pending.append((time.time(), identity, record))
        if len(self._pending) >= _FLUSH_LINES:
            self.flush()
        elif self._timer is None:
            try:
                self._timer = asyncio.get_running_loop().call_later(_FLUSH_SECONDS, self.flush)
            except RuntimeError:  # no running loop: nothing would flush later, so write now
                self.flush()

    def _timestamp(self, moment: float) -> str:
        second = int(moment)
        if second != self._second:  # formatting a date costs more than the rest of the line
            self._second = second
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._stamp}.{int((moment - second) * 1000):03d}Z"

    def _line(self, moment: float, identity: Any, record: RequestRecord) -> str:
        note = record.note
        injected = ",".join(map(_quote, note.injected)) if note is not None else ""
        rule_id = note.rule_id if note is not None else None
        if identity is not None:
            who = f'"agentId":{_quote(identity.agent_id)},"organizationId":{_quote(identity.organization_id)},"projectId":{_quote(identity.project_id)}'
        else:
            who = '"agentId":null,"organizationId":null,"projectId":null'
        return (
            f'{self._prefix}{self._timestamp(moment)}",{who},"method":{_quote(record.method)},'
            f'"host":{_quote(record.host)},"path":{_quote(record.path)},"status":{record.status},'
            f'"injectedSecretIds":[{injected}],"ruleId":{_string(rule_id)},"error":{_string(record.error)},'
            f'"durationMs":{record.duration * 1000:.3f},"bytesIn":{record.bytes_in},"bytesOut":{record.bytes_out}}}\n'
        )

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._pending:
            return
        data = "".join([self._line(*entry) for entry in self._pending]).encode()
        self._pending.clear()
        while data:
            written = os.write(self._fd, data)
            data = data[written:]
