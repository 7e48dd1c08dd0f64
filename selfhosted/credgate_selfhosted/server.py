"""`credgate serve`: the management API and the gateway in one process, on one uvloop event loop."""
from __future__ import annotations

import argparse
import asyncio
import logging
import signal

import uvicorn
import uvloop

from credgate.logs import configure_logging
from credgate.services.bootstrap import ensure_local_install
from credgate.settings import CoreSettings
from credgate_api.app import create_app
from credgate_api.principals import in_process
from credgate_gateway.ca import DirectoryCAStore, GatewayCA
from credgate_gateway.runtime import Gateway
from credgate_selfhosted.runtime import DEFAULT_OWNER_EMAIL, DataDir, build_core, write_bootstrap

log = logging.getLogger("credgate.serve")


def _url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


async def _serve(args: argparse.Namespace) -> None:
    data_dir = DataDir(args.data_dir).prepare()
    settings = CoreSettings(
        api_url=_url(args.host, args.api_port),
        app_url=_url(args.host, args.api_port),
        gateway_url=_url(args.host, args.gateway_port),
        approval_timeout_seconds=args.approval_timeout,
    )
    core = build_core(data_dir, settings)
    install = ensure_local_install(core, args.owner_email or DEFAULT_OWNER_EMAIL)
    ca_store = DirectoryCAStore(data_dir.ca)
    ca = GatewayCA.load_or_create(ca_store)

    gateway = Gateway(
        core,
        ca,
        host=args.host,
        port=args.gateway_port,
        connect_to=args.connect_to,
        upstream_ca_bundle=str(args.upstream_ca_bundle) if args.upstream_ca_bundle else None,
    )
    await gateway.start()

    listening = {"api": False}
    app = create_app(
        core, in_process(core), ca_certificate=lambda: ca.cert_pem.decode("ascii"), ready=lambda: all(listening.values())
    )
    config = uvicorn.Config(
        app, host=args.host, port=args.api_port, loop="none", lifespan="off", access_log=False, log_config=None
    )
    api = uvicorn.Server(config)
    api.install_signal_handlers = lambda: None  # type: ignore[method-assign]  # we own the signals

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)

    api_task = asyncio.create_task(api.serve())
    while not api.started:
        if api_task.done():
            await gateway.stop(drain_timeout=0)
            api_task.result()  # surfaces a bind error
            return
        await asyncio.sleep(0.02)
    listening["api"] = True
    write_bootstrap(data_dir, settings, install, ca_store.cert_path)
    log.info(
        "credgate is running",
        extra={"apiUrl": settings.api_url, "gatewayUrl": settings.gateway_url, "dataDir": str(data_dir.root)},
    )

    await stop.wait()
    log.info("shutting down: draining in-flight requests")
    api.should_exit = True
    await asyncio.gather(api_task, gateway.stop(drain_timeout=args.drain_timeout))


def serve(args: argparse.Namespace) -> int:
    configure_logging("credgate", args.log_level)
    uvloop.install()
    asyncio.run(_serve(args))
    return 0
