"""The gateway's per-request log line: JSON, one per request, written in batches.

It is the one log line on the hot path, so it skips the logging module (record objects,
a lock and a write syscall per line cost more than the rest of the pipeline) and flushes
whatever accumulated every 100 ms, or at 512 lines, and on shutdown.
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from typing import Any, TextIO

_FLUSH_SECONDS = 0.1
_FLUSH_LINES = 512


class AccessLog:
    def __init__(self, service: str, stream: TextIO | None = None) -> None:
        self._fd = (stream or sys.stderr).fileno()
        self._prefix = f'{{"level":"INFO","service":{json.dumps(service)},"message":"proxied request",'
        self._lines: list[tuple[float, dict[str, Any]]] = []
        self._timer: asyncio.TimerHandle | None = None
        self._second = -1
        self._stamp = ""

    def _timestamp(self, now: float) -> str:
        second = int(now)
        if second != self._second:  # formatting a date costs more than the rest of the line
            self._second = second
            self._stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second))
        return f"{self._stamp}.{int((now - second) * 1000):03d}Z"

    def write(self, fields: dict[str, Any]) -> None:
        """Keep the line for the next flush; formatting waits until then, off the request's path."""
        self._lines.append((time.time(), fields))
        if len(self._lines) >= _FLUSH_LINES:
            self.flush()
        elif self._timer is None:
            try:
                self._timer = asyncio.get_running_loop().call_later(_FLUSH_SECONDS, self.flush)
            except RuntimeError:  # no loop (tests calling on_complete directly): write now
                self.flush()

    def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not self._lines:
            return
        prefix, dumps = self._prefix, json.dumps
        data = "".join(
            f'{prefix}"timestamp":"{self._timestamp(moment)}",{dumps(fields, separators=(",", ":"))[1:]}\n'
            for moment, fields in self._lines
        ).encode()
        self._lines.clear()
        while data:
            written = os.write(self._fd, data)
            data = data[written:]
