"""The gateway assembled: the engine, the credential pipeline and the config watcher."""
from __future__ import annotations

import asyncio
from typing import Iterable

from credgate.services.core import Core

from credgate_gateway.ca import GatewayCA
from credgate_gateway.pipeline import CredentialPipeline, PipelineSettings
from credgate_gateway.proxy import ProxyServer, Timeouts
from credgate_gateway.tenancy import TenantCache


class Gateway:
    def __init__(
        self,
        core: Core,
        ca: GatewayCA,
        *,
        host: str,
        port: int,
        connect_to: Iterable[str] = (),
        upstream_ca_bundle: str | None = None,
        settings: PipelineSettings | None = None,
        timeouts: Timeouts | None = None,
        poll_interval: float = 0.5,
    ) -> None:
        self.tenants = TenantCache(core, poll_interval=poll_interval)
        self.pipeline = CredentialPipeline(
            self.tenants, settings or PipelineSettings(approval_timeout=core.settings.approval_timeout_seconds)
        )
        self.server = ProxyServer(
            self.pipeline,
            ca,
            host=host,
            port=port,
            connect_to=connect_to,
            upstream_ca_bundle=upstream_ca_bundle,
            timeouts=timeouts,
        )
        self._watcher: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
        await self.tenants.refresh()
        await self.server.start()
        self._watcher = asyncio.create_task(self.tenants.watch())

    async def stop(self, drain_timeout: float = 30.0) -> None:
        if self._watcher is not None:
            self._watcher.cancel()
        await self.server.shutdown(drain_timeout)
        self.pipeline.access_log.flush()
        self.tenants.close()
