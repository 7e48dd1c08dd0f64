"""API Lambda: the FastAPI app behind API Gateway (HTTP API) through Mangum, on DynamoDB + KMS + SES."""
from __future__ import annotations

from mangum import Mangum

from credgate.aws import LazyClient
from credgate.clock import SystemClock
from credgate.keyring.kms import KmsKeyRing
from credgate.logs import configure_logging
from credgate.mail.ses import SesMailer
from credgate.services.agent_setup import ca_certificate_from_store
from credgate.services.core import Core
from credgate.settings import CloudSettings
from credgate.store.dynamodb import DynamoItemStore
from credgate_api.app import create_app
from credgate_api.principals import from_authorizer


def build_core(settings: CloudSettings) -> Core:
    return Core(
        store=DynamoItemStore(LazyClient("dynamodb"), settings.table_name),
        keyring=KmsKeyRing(LazyClient("kms"), settings.kms_key_id),
        mailer=SesMailer(LazyClient("ses"), settings.mail_from),
        clock=SystemClock(),
        settings=settings.core(),
    )


configure_logging("credgate-api")
settings = CloudSettings()  # type: ignore[call-arg]  # read from the environment the stack sets
core = build_core(settings)
app = create_app(core, from_authorizer, ca_certificate=lambda: ca_certificate_from_store(core.store))
handler = Mangum(app, lifespan="off", api_gateway_base_path="/")
