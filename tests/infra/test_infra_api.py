"""The HTTP API: every /v1 request runs the authorizer, which answers itself (never API Gateway)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.infra

API_HANDLER = "credgate_api.handler.handler"
AUTHORIZER_HANDLER = "credgate_authorizer.handler.handler"
BUDGET_RESET_HANDLER = "credgate_budget_reset.handler.handler"


def test_authorizer_is_uncached_without_identity_sources_and_answers_simply(synthesized):
    _, authorizer = synthesized.only("AWS::ApiGatewayV2::Authorizer")
    props = authorizer["Properties"]
    assert props["AuthorizerType"] == "REQUEST"
    assert props["AuthorizerPayloadFormatVersion"] == "2.0"
    assert props["EnableSimpleResponses"] is True
    # API Gateway would otherwise answer missing credentials itself with {"message":"Unauthorized"}.
    assert props["IdentitySource"] == []
    assert props["AuthorizerResultTtlInSeconds"] == 0


def test_authorizer_invokes_the_authorizer_function(synthesized):
    _, authorizer = synthesized.only("AWS::ApiGatewayV2::Authorizer")
    function_id, _ = synthesized.function(AUTHORIZER_HANDLER)
    uri_parts = authorizer["Properties"]["AuthorizerUri"]["Fn::Join"][1]
    assert {"Fn::GetAtt": [function_id, "Arn"]} in uri_parts


def test_every_route_goes_through_the_authorizer(synthesized):
    authorizer_id, _ = synthesized.only("AWS::ApiGatewayV2::Authorizer")
    routes = synthesized.of_type("AWS::ApiGatewayV2::Route").values()
    assert {route["Properties"]["RouteKey"] for route in routes} == {"ANY /v1", "ANY /v1/{proxy+}"}
    for route in routes:
        assert route["Properties"]["AuthorizationType"] == "CUSTOM"
        assert route["Properties"]["AuthorizerId"] == {"Ref": authorizer_id}


def test_routes_proxy_to_the_api_function_with_payload_2(synthesized):
    integration_id, integration = synthesized.only("AWS::ApiGatewayV2::Integration")
    function_id, _ = synthesized.function(API_HANDLER)
    assert integration["Properties"]["IntegrationType"] == "AWS_PROXY"
    assert integration["Properties"]["PayloadFormatVersion"] == "2.0"
    assert integration["Properties"]["IntegrationUri"] == {"Fn::GetAtt": [function_id, "Arn"]}
    for route in synthesized.of_type("AWS::ApiGatewayV2::Route").values():
        assert route["Properties"]["Target"] == {"Fn::Join": ["", ["integrations/", {"Ref": integration_id}]]}


def test_default_stage_logs_access_and_throttles(synthesized):
    _, stage = synthesized.only("AWS::ApiGatewayV2::Stage")
    props = stage["Properties"]
    assert props["StageName"] == "$default"
    assert props["AutoDeploy"] is True
    assert "$context.requestId" in props["AccessLogSettings"]["Format"]
    log_group_id = props["AccessLogSettings"]["DestinationArn"]["Fn::GetAtt"][0]
    assert synthesized.resources[log_group_id]["Type"] == "AWS::Logs::LogGroup"
    assert props["DefaultRouteSettings"]["ThrottlingRateLimit"] > 0
    assert props["DefaultRouteSettings"]["ThrottlingBurstLimit"] > 0


@pytest.mark.parametrize("handler", [API_HANDLER, AUTHORIZER_HANDLER, BUDGET_RESET_HANDLER])
def test_function_runs_python312_on_arm64_with_the_shared_layer(synthesized, handler):
    layer_id, _ = synthesized.only("AWS::Lambda::LayerVersion")
    _, function = synthesized.function(handler)
    props = function["Properties"]
    assert props["Runtime"] == "python3.12"
    assert props["Architectures"] == ["arm64"]
    assert props["Layers"] == [{"Ref": layer_id}]
    assert "LogGroup" in props["LoggingConfig"]


@pytest.mark.parametrize(
    "handler, package",
    [(API_HANDLER, "credgate_api"), (AUTHORIZER_HANDLER, "credgate_authorizer"), (BUDGET_RESET_HANDLER, "credgate_budget_reset")],
)
def test_function_code_is_its_package_directory_alone(synthesized, handler, package):
    _, function = synthesized.function(handler)
    asset_dir = synthesized.file_asset_dir(function["Properties"]["Code"]["S3Key"])
    assert sorted(p.name for p in asset_dir.iterdir()) == [package]
    assert not list(asset_dir.rglob("__pycache__"))


@pytest.mark.parametrize("handler", [API_HANDLER, AUTHORIZER_HANDLER, BUDGET_RESET_HANDLER])
def test_function_reads_the_deployment_settings(synthesized, handler):
    api_id, _ = synthesized.only("AWS::ApiGatewayV2::Api")
    table_id, _ = synthesized.only("AWS::DynamoDB::Table")
    nlb_id, _ = synthesized.only("AWS::ElasticLoadBalancingV2::LoadBalancer")
    _, function = synthesized.function(handler)
    env = function["Properties"]["Environment"]["Variables"]
    assert set(env) == {
        "CREDGATE_TABLE_NAME",
        "CREDGATE_KMS_KEY_ID",
        "CREDGATE_API_URL",
        "CREDGATE_APP_URL",
        "CREDGATE_GATEWAY_URL",
        "CREDGATE_MAIL_FROM",
        "POWERTOOLS_SERVICE_NAME",
        "POWERTOOLS_LOG_LEVEL",
    }
    assert env["CREDGATE_TABLE_NAME"] == {"Ref": table_id}
    # The execute-api endpoint itself: no stage path, no trailing slash.
    assert env["CREDGATE_API_URL"] == {"Fn::GetAtt": [api_id, "ApiEndpoint"]}
    assert env["CREDGATE_APP_URL"] == env["CREDGATE_API_URL"]
    assert {"Fn::GetAtt": [nlb_id, "DNSName"]} in env["CREDGATE_GATEWAY_URL"]["Fn::Join"][1]
    assert env["CREDGATE_MAIL_FROM"] == "no-reply@credgate.dev"


def test_api_function_answers_before_api_gateway_gives_up(synthesized):
    _, function = synthesized.function(API_HANDLER)
    assert function["Properties"]["Timeout"] < 30
