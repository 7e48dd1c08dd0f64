"""Each function and the gateway task hold their own role with only the actions they need."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.infra

LOGS = {"logs:CreateLogStream", "logs:PutLogEvents"}
TABLE_READ = {"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}
TABLE_WRITE = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"}

EXPECTED_FUNCTION_ACTIONS = {
    "credgate_api.handler.handler": LOGS
    | TABLE_READ
    | TABLE_WRITE
    | {"kms:Encrypt", "kms:Decrypt", "kms:GenerateDataKey", "ses:SendEmail", "ses:SendRawEmail"},
    "credgate_authorizer.handler.handler": LOGS | TABLE_READ,
    "credgate_budget_reset.handler.handler": LOGS | TABLE_READ | TABLE_WRITE,
}


def _role_of(synthesized, handler: str) -> str:
    _, function = synthesized.function(handler)
    return function["Properties"]["Role"]["Fn::GetAtt"][0]


def _task_role(synthesized) -> str:
    _, task = synthesized.only("AWS::ECS::TaskDefinition")
    return task["Properties"]["TaskRoleArn"]["Fn::GetAtt"][0]


def test_every_function_has_a_role_of_its_own(synthesized):
    roles = [_role_of(synthesized, handler) for handler in EXPECTED_FUNCTION_ACTIONS]
    assert len(set(roles)) == len(roles)
    for role in roles:
        assert "ManagedPolicyArns" not in synthesized.resources[role]["Properties"]


@pytest.mark.parametrize("handler, expected", EXPECTED_FUNCTION_ACTIONS.items())
def test_function_role_grants_exactly_the_actions_it_needs(synthesized, handler, expected):
    assert synthesized.allowed_actions(_role_of(synthesized, handler)) == expected


def test_authorizer_can_neither_write_the_table_nor_use_the_key(synthesized):
    actions = synthesized.allowed_actions(_role_of(synthesized, "credgate_authorizer.handler.handler"))
    assert not actions & TABLE_WRITE
    assert "dynamodb:PutItem" not in actions
    assert not {a for a in actions if a.startswith("kms:")}


def test_gateway_task_role_reads_and_writes_the_table_and_unwraps_secrets(synthesized):
    assert synthesized.allowed_actions(_task_role(synthesized)) == (
        TABLE_READ | TABLE_WRITE | {"kms:Decrypt", "kms:GenerateDataKey"}
    )


def test_table_and_key_grants_name_the_table_and_the_secrets_key_only(synthesized):
    table_id, _ = synthesized.only("AWS::DynamoDB::Table")
    roles = [_role_of(synthesized, h) for h in EXPECTED_FUNCTION_ACTIONS] + [_task_role(synthesized)]
    for role in roles:
        for statement in synthesized.policy_statements(role):
            actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
            if any(a.startswith("dynamodb:") for a in actions):
                assert statement["Resource"] == {"Fn::GetAtt": [table_id, "Arn"]}
            if any(a.startswith("kms:") for a in actions):
                key = synthesized.resources[statement["Resource"]["Fn::GetAtt"][0]]
                assert key["Type"] == "AWS::KMS::Key" and key["DeletionPolicy"] == "Retain"


def test_api_sends_mail_only_from_the_configured_identity(synthesized):
    statements = synthesized.policy_statements(_role_of(synthesized, "credgate_api.handler.handler"))
    (ses,) = (s for s in statements if "ses:SendEmail" in s["Action"])
    arn_parts = ses["Resource"]["Fn::Join"][1]
    assert arn_parts[0] == "arn:aws:ses:us-east-1:" and arn_parts[-1] == ":identity/credgate.dev"
    assert ses["Condition"] == {"StringEquals": {"ses:FromAddress": "no-reply@credgate.dev"}}


def test_no_role_of_ours_grants_wildcard_actions(synthesized):
    roles = [_role_of(synthesized, h) for h in EXPECTED_FUNCTION_ACTIONS] + [_task_role(synthesized)]
    for role in roles:
        for statement in synthesized.policy_statements(role):
            assert "*" not in str(statement["Action"]) and statement["Resource"] != "*"
