"""The one-machine composition root: SQLite, a local key file and an outbox folder in the data dir."""
from __future__ import annotations

import json
import os
from pathlib import Path

from credgate.clock import SystemClock
from credgate.keyring.local import LocalKeyRing
from credgate.mail.outbox import OutboxMailer
from credgate.services.bootstrap import Bootstrap
from credgate.services.core import Core
from credgate.settings import CoreSettings
from credgate.store.sqlite import SqliteItemStore

DEFAULT_OWNER_EMAIL = "owner@credgate.local"


class DataDir:
    """Every file a self-hosted install keeps, in one folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def prepare(self) -> "DataDir":
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        return self

    @property
    def database(self) -> Path:
        return self.root / "credgate.db"

    @property
    def master_key(self) -> Path:
        return self.root / "master.key"

    @property
    def outbox(self) -> Path:
        return self.root / "outbox"

    @property
    def ca(self) -> Path:
        return self.root / "ca"

    @property
    def bootstrap(self) -> Path:
        return self.root / "bootstrap.json"


def build_core(data_dir: DataDir, settings: CoreSettings) -> Core:
    return Core(
        store=SqliteItemStore(data_dir.database),
        keyring=LocalKeyRing.from_file(data_dir.master_key),
        mailer=OutboxMailer(data_dir.outbox),
        clock=SystemClock(),
        settings=settings,
    )


def write_bootstrap(data_dir: DataDir, settings: CoreSettings, install: Bootstrap, ca_cert_path: Path | None) -> None:
    document = {
        "apiUrl": settings.api_url,
        "gatewayUrl": settings.gateway_url,
        "email": install.email,
        "userId": install.user_id,
        "organizationId": install.organization_id,
        "projectId": install.project_id,
        "projectApiKey": install.project_api_key,
        "orgApiKey": install.org_api_key,
        "agentId": install.agent_id,
        "agentToken": install.agent_token,
        "caCertPath": str(ca_cert_path) if ca_cert_path else None,
    }
    temporary = data_dir.bootstrap.with_suffix(".tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(document, handle, indent=2)
    os.chmod(temporary, 0o600)
    os.replace(temporary, data_dir.bootstrap)
