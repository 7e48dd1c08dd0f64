"""The management API: an HTTP API whose every /v1 route runs the authorizer, then the FastAPI Lambda."""
from __future__ import annotations

import json

import jsii
from aws_cdk import Duration
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_apigatewayv2 as apigwv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.capabilities.data import Data
from infra.capabilities.functions import LOG_RETENTION, CredgateFunction, FunctionRuntime

ROUTE_PATHS = ("/v1", "/v1/{proxy+}")

# No path: claim tokens travel in it (/v1/claims/{token}).
_ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "requestTime": "$context.requestTime",
    "sourceIp": "$context.identity.sourceIp",
    "httpMethod": "$context.httpMethod",
    "routeKey": "$context.routeKey",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "responseLatency": "$context.responseLatency",
    "integrationLatency": "$context.integrationLatency",
    "integrationError": "$context.integrationErrorMessage",
    "authorizerError": "$context.authorizer.error",
}


class Api(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, throttle_rate: int, throttle_burst: int) -> None:
        super().__init__(scope, construct_id)
        self.http_api = apigwv2.HttpApi(
            self,
            "HttpApi",
            api_name="credgate",
            description="credgate management API (/v1)",
            create_default_stage=False,
        )
        self.access_logs = logs.LogGroup(self, "AccessLogs", retention=LOG_RETENTION)
        self.stage = apigwv2.HttpStage(
            self,
            "DefaultStage",
            http_api=self.http_api,
            stage_name="$default",
            auto_deploy=True,
            access_log_settings=_AccessLogSettings(self.access_logs),
            throttle=apigwv2.ThrottleSettings(rate_limit=throttle_rate, burst_limit=throttle_burst),
        )
        # The execute-api endpoint, without a trailing slash: links are built as f"{apiUrl}/v1/...".
        self.endpoint: str = self.http_api.api_endpoint

    def serve(self, runtime: FunctionRuntime, data: Data) -> None:
        """Creates the API and authorizer functions with their grants, and routes /v1 to them."""
        self.handler: CredgateFunction = runtime.function(
            self,
            "Handler",
            package="api",
            handler="credgate_api.handler.handler",
            service="credgate-api",
            description="credgate management API (FastAPI via Mangum)",
            memory_size=1024,
            # API Gateway gives up on an integration after 30 s.
            timeout=Duration.seconds(29),
        )
        data.grant_table_read_write(self.handler)
        data.grant_key(self.handler, "kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey")

        self.authorizer: CredgateFunction = runtime.function(
            self,
            "Authorizer",
            package="gateway_authorizer",
            handler="credgate_authorizer.handler.handler",
            service="credgate-authorizer",
            description="credgate request authorizer: resolves API keys and sessions",
            memory_size=512,
            timeout=Duration.seconds(10),
        )
        # Looks up hashed keys and sessions only: no writes, no decryption.
        data.grant_table_read(self.authorizer)

        # The authorizer always answers isAuthorized=true, with a context carrying either the
        # principal or the spec's 401/403 error for the API function to return: a denial would
        # make API Gateway send its own {"message":"Unauthorized"}, which the spec forbids.
        # Identity sources would let API Gateway reject requests without the header itself, and
        # caching needs identity sources; so neither.
        request_authorizer = authorizers.HttpLambdaAuthorizer(
            "RequestAuthorizer",
            self.authorizer.function,
            authorizer_name="credgate-request-authorizer",
            response_types=[authorizers.HttpLambdaResponseType.SIMPLE],
            identity_source=[],
            results_cache_ttl=Duration.seconds(0),
        )
        integration = integrations.HttpLambdaIntegration(
            "Handler",
            self.handler.function,
            payload_format_version=apigwv2.PayloadFormatVersion.VERSION_2_0,
        )
        for path in ROUTE_PATHS:
            self.http_api.add_routes(
                path=path,
                methods=[apigwv2.HttpMethod.ANY],
                integration=integration,
                authorizer=request_authorizer,
            )


@jsii.implements(apigwv2.IAccessLogSettings)
class _AccessLogSettings:
    def __init__(self, log_group: logs.ILogGroup) -> None:
        self._destination = apigwv2.LogGroupLogDestination(log_group)

    @property
    def destination(self) -> apigwv2.IAccessLogDestination:
        return self._destination

    @property
    def format(self) -> apigateway.AccessLogFormat:
        return apigateway.AccessLogFormat.custom(json.dumps(_ACCESS_LOG_FIELDS))
