"""The composition root: region pinned, account left to the deploying credentials, context read."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.infra


def test_stack_pins_the_region_and_leaves_the_account_open(synthesized):
    from aws_cdk import Token

    assert synthesized.stack.region == "us-east-1"
    assert Token.is_unresolved(synthesized.stack.account)


def test_stack_outputs_the_api_and_gateway_urls(synthesized):
    outputs = synthesized.template_json["Outputs"]
    assert {"ApiUrl", "GatewayUrl"} <= set(outputs)


def test_context_overrides_the_deployment_settings():
    import aws_cdk as cdk

    from infra.config import DeploymentConfig, deployment_region

    app = cdk.App(
        context={
            "region": "eu-west-1",
            "apiUrl": "https://api.credgate.example",
            "appUrl": "https://app.credgate.example",
            "mailFrom": "login@mail.credgate.example",
            "gatewayDesiredCount": "3",
        }
    )
    config = DeploymentConfig.from_context(app.node)
    assert deployment_region(app.node, {"CDK_DEFAULT_REGION": "us-west-2"}) == "eu-west-1"
    assert config.api_url == "https://api.credgate.example"
    assert config.app_url == "https://app.credgate.example"
    assert config.sending_identity == "mail.credgate.example"
    assert config.gateway_desired_count == 3


def test_region_falls_back_to_the_cli_default_then_us_east_1():
    import aws_cdk as cdk

    from infra.config import deployment_region

    app = cdk.App()
    assert deployment_region(app.node, {"CDK_DEFAULT_REGION": "us-west-2"}) == "us-west-2"
    assert deployment_region(app.node, {}) == "us-east-1"
