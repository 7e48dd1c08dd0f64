"""The Fargate task: the gateway on DynamoDB + KMS, its CA shared by every task through the store."""
from __future__ import annotations

import asyncio
import logging
import signal

import uvloop

from credgate.aws import LazyClient
from credgate.clock import SystemClock
from credgate.keyring.kms import KmsKeyRing
from credgate.logs import configure_logging
from credgate.mail.ses import SesMailer
from credgate.services.core import Core
from credgate.settings import CloudSettings
from credgate.store.dynamodb import DynamoItemStore

from credgate_gateway.ca import GatewayCA, ItemStoreCAStore
from credgate_gateway.runtime import Gateway

log = logging.getLogger("credgate.gateway")
# ECS gives a task 30 s between SIGTERM and SIGKILL by default; leave a margin.
DRAIN_SECONDS = 25.0


def build_gateway(settings: CloudSettings, *, host: str = "0.0.0.0") -> Gateway:
    client_options = {"region_name": settings.region} if settings.region else {}
    core = Core(
        store=DynamoItemStore(LazyClient("dynamodb", **client_options), settings.table_name),
        keyring=KmsKeyRing(LazyClient("kms", **client_options), settings.kms_key_id),
        mailer=SesMailer(LazyClient("ses", **client_options), settings.mail_from),
        clock=SystemClock(),
        settings=settings.core(),
    )
    ca = GatewayCA.load_or_create(ItemStoreCAStore(core.store, core.keyring))
    return Gateway(
        core,
        ca,
        host=host,
        port=settings.gateway_port,
    )


async def run(settings: CloudSettings) -> None:
    gateway = build_gateway(settings)
    await gateway.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    log.info("gateway task running", extra={"port": gateway.port})
    await stop.wait()
    log.info("draining in-flight requests")
    await gateway.stop(drain_timeout=DRAIN_SECONDS)


def main() -> None:
    configure_logging("credgate-gateway")
    uvloop.run(run(CloudSettings()))  # type: ignore[call-arg]  # from the task definition's environment


if __name__ == "__main__":
    main()
