"""Settings: one pydantic model per process, read once at start."""
from __future__ import annotations

from pydantic import BaseModel
from pydantic_settings import BaseSettings, SettingsConfigDict


class CoreSettings(BaseModel):
    """What the services need to know about the deployment they run in."""

    api_url: str = "http://127.0.0.1:10254"
    app_url: str = "http://127.0.0.1:10254"
    gateway_url: str = "http://127.0.0.1:10255"
    session_ttl_seconds: int = 7 * 24 * 3600
    email_link_ttl_seconds: int = 15 * 60
    invitation_ttl_seconds: int = 7 * 24 * 3600
    approval_timeout_seconds: int = 180


class CloudSettings(BaseSettings):
    """Environment of the Lambda functions and the Fargate gateway (set by the CDK stack)."""

    model_config = SettingsConfigDict(env_prefix="CREDGATE_")

    table_name: str
    kms_key_id: str
    mail_from: str = "no-reply@credgate.dev"
    api_url: str
    app_url: str
    gateway_url: str = ""
    gateway_port: int = 10255
    approval_timeout_seconds: int = 180
    region: str | None = None

    def core(self) -> CoreSettings:
        return CoreSettings(
            api_url=self.api_url,
            app_url=self.app_url,
            gateway_url=self.gateway_url,
            approval_timeout_seconds=self.approval_timeout_seconds,
        )
