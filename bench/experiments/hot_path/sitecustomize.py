"""Experiment, not product code: what two changes to the gateway's per-request path would buy.

Put on PYTHONPATH, this patches the `credgate serve` process only (other processes ignore it), depending
on CREDGATE_EXP (modes combine with "+"):

- `sync`:  ClientConnection._start runs the request's hook chain (authenticate -> on_request -> pool.take ->
           attach) synchronously instead of in a new asyncio Task, when an idle upstream connection is
           ready. On a warm tenant cache nothing in that chain suspends, so the request goes upstream in
           the same callback that parsed it: no Task object, no WeakSet entry, no extra loop iteration.
           If the chain does suspend (cache miss, rate-limit count, approval), the rest continues in a
           Task. (Python 3.12, which the gateway image runs, gets the same effect from
           `loop.set_task_factory(asyncio.eager_task_factory)`.) Cancellation of a suspended chain is not
           handled here: fine for a benchmark, not for production.
- `defer`: the request's log record (pipeline.on_complete) is emitted with loop.call_soon, i.e. after the
           corked response has been flushed to the agent.

Usage (compare with the same command without the variables):

    CREDGATE_EXP=sync PYTHONPATH=bench/experiments/hot_path \\
        .venv/bin/python bench/gateway.py --skip-mitmproxy --rounds 3 --no-write
"""
import os
import sys

_mode = os.environ.get("CREDGATE_EXP", "").split("+")
if _mode != [""] and sys.argv and sys.argv[0].endswith("credgate"):
    from credgate_gateway.proxy import client

    if "sync" in _mode:
        _original_start = client.ClientConnection._start

        async def _resume(coro, future):  # type: ignore[no-untyped-def]
            while True:
                try:
                    await future
                except BaseException:  # noqa: BLE001 - the coroutine sees the outcome through the future
                    pass
                try:
                    future = coro.send(None)
                except StopIteration:
                    return

        def _start(self, exchange):  # type: ignore[no-untyped-def]
            if exchange.canned is not None or not self.server.pool._idle.get(exchange.key):
                return _original_start(self, exchange)  # a new upstream connection needs a Task (asyncio.timeout)
            coro = self._serve(exchange)
            try:
                future = coro.send(None)
            except StopIteration:
                return
            exchange.task = self.loop.create_task(_resume(coro, future))

        client.ClientConnection._start = _start

    if "defer" in _mode:
        _original_emit = client.ClientConnection._emit

        def _deferred_emit(self, identity, record):  # type: ignore[no-untyped-def]
            self.loop.call_soon(_original_emit, self, identity, record)

        client.ClientConnection._emit = _deferred_emit
