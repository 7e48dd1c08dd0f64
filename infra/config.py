"""Deployment settings read from CDK context (`cdk.json` or `cdk deploy -c key=value`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from constructs import Node

DEFAULT_REGION = "us-east-1"


def _context(node: Node, key: str, default: Any, convert: Callable[[Any], Any] = str) -> Any:
    value = node.try_get_context(key)
    return default if value is None or value == "" else convert(value)


@dataclass(frozen=True)
class DeploymentConfig:
    # Public base URL of the API when a custom domain fronts it; default: the HTTP API's endpoint.
    api_url: str | None = None
    # Where the dashboard (claim pages, add-key links) lives; default: the API URL.
    app_url: str | None = None
    mail_from: str = "no-reply@credgate.dev"
    # The verified SES identity that sends as `mail_from`; default: its domain.
    mail_identity: str | None = None
    alarm_email: str | None = None
    log_level: str = "INFO"
    gateway_desired_count: int = 2
    # Who may open proxy connections; the gateway authenticates every request by agent token.
    gateway_ingress_cidr: str = "0.0.0.0/0"
    # An ACM certificate for the gateway's domain: the NLB then speaks TLS on 443, so agent tokens
    # never cross the network in clear text (agents use HTTPS_PROXY=https://...). Without it: TCP 10255.
    gateway_certificate_arn: str | None = None
    api_throttle_rate: int = 200
    api_throttle_burst: int = 400

    @property
    def sending_identity(self) -> str:
        return self.mail_identity or self.mail_from.rpartition("@")[2]

    @classmethod
    def from_context(cls, node: Node) -> "DeploymentConfig":
        defaults = cls()
        return cls(
            api_url=_context(node, "apiUrl", None),
            app_url=_context(node, "appUrl", None),
            mail_from=_context(node, "mailFrom", defaults.mail_from),
            mail_identity=_context(node, "mailIdentity", None),
            alarm_email=_context(node, "alarmEmail", None),
            log_level=_context(node, "logLevel", defaults.log_level),
            gateway_desired_count=_context(node, "gatewayDesiredCount", defaults.gateway_desired_count, int),
            gateway_ingress_cidr=_context(node, "gatewayIngressCidr", defaults.gateway_ingress_cidr),
            gateway_certificate_arn=_context(node, "gatewayCertificateArn", None),
            api_throttle_rate=_context(node, "apiThrottleRate", defaults.api_throttle_rate, int),
            api_throttle_burst=_context(node, "apiThrottleBurst", defaults.api_throttle_burst, int),
        )


def deployment_region(node: Node, environ: Mapping[str, str]) -> str:
    """Context `region`, else the CLI's default region, else us-east-1; the account stays open."""
    return _context(node, "region", None) or environ.get("CDK_DEFAULT_REGION") or DEFAULT_REGION
