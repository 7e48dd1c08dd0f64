"""The credgate stack: one construct per capability, wired together here."""
from __future__ import annotations

from pathlib import Path

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from infra.capabilities.api import Api
from infra.capabilities.data import Data
from infra.capabilities.functions import FunctionRuntime
from infra.capabilities.gateway import Gateway
from infra.capabilities.mail import Mail
from infra.capabilities.monitoring import Monitoring
from infra.capabilities.schedule import Schedule
from infra.config import DeploymentConfig


class CredgateStack(Stack):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        repo_root: Path,
        layer_dir: Path,
        config: DeploymentConfig,
        **kwargs,
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)

        data = Data(self, "Data")
        api = Api(self, "Api", throttle_rate=config.api_throttle_rate, throttle_burst=config.api_throttle_burst)
        api_url = config.api_url or api.endpoint
        environment = {
            "CREDGATE_TABLE_NAME": data.table.table_name,
            "CREDGATE_KMS_KEY_ID": data.secrets_key.key_arn,
            "CREDGATE_API_URL": api_url,
            "CREDGATE_APP_URL": config.app_url or api_url,
            "CREDGATE_MAIL_FROM": config.mail_from,
            "POWERTOOLS_LOG_LEVEL": config.log_level,
        }

        gateway = Gateway(
            self,
            "Gateway",
            data=data,
            repo_root=repo_root,
            environment=environment,
            desired_count=config.gateway_desired_count,
            ingress_cidr=config.gateway_ingress_cidr,
            certificate_arn=config.gateway_certificate_arn,
        )
        runtime = FunctionRuntime(
            self,
            "Functions",
            layer_dir=layer_dir,
            functions_dir=repo_root / "functions",
            environment={**environment, "CREDGATE_GATEWAY_URL": gateway.url},
        )
        api.serve(runtime, data)

        mail = Mail(self, "Mail", sender=config.mail_from, identity=config.sending_identity)
        mail.grant_send(api.handler)

        schedule = Schedule(self, "Schedule", runtime=runtime, data=data)

        Monitoring(
            self,
            "Monitoring",
            api=api,
            functions={"Api": api.handler, "Authorizer": api.authorizer, "BudgetReset": schedule.budget_reset},
            gateway=gateway,
            alarm_email=config.alarm_email,
        )

        CfnOutput(self, "ApiUrl", value=api_url, description="Management API base URL (paths under /v1)")
        CfnOutput(self, "GatewayUrl", value=gateway.url, description="Agents' HTTPS_PROXY endpoint (add x:<token>@)")
        CfnOutput(self, "TableName", value=data.table.table_name)
