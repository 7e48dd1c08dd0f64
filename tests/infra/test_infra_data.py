"""The table and the secrets key: what keeps data safe and recoverable."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.infra


def test_table_is_keyed_by_string_pk_and_sk_and_billed_per_request(synthesized):
    _, table = synthesized.only("AWS::DynamoDB::Table")
    props = table["Properties"]
    assert props["KeySchema"] == [
        {"AttributeName": "pk", "KeyType": "HASH"},
        {"AttributeName": "sk", "KeyType": "RANGE"},
    ]
    assert sorted(props["AttributeDefinitions"], key=lambda a: a["AttributeName"]) == [
        {"AttributeName": "pk", "AttributeType": "S"},
        {"AttributeName": "sk", "AttributeType": "S"},
    ]
    assert props["BillingMode"] == "PAY_PER_REQUEST"


def test_table_has_point_in_time_recovery_and_ttl_on_expires_at(synthesized):
    _, table = synthesized.only("AWS::DynamoDB::Table")
    props = table["Properties"]
    assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}


def test_table_is_encrypted_and_survives_stack_deletion(synthesized):
    _, table = synthesized.only("AWS::DynamoDB::Table")
    assert table["Properties"]["SSESpecification"]["SSEEnabled"] is True
    assert table["DeletionPolicy"] == "Retain"
    assert table["UpdateReplacePolicy"] == "Retain"
    assert table["Properties"]["DeletionProtectionEnabled"] is True


def test_secrets_key_rotates_and_is_retained(synthesized):
    (alias,) = (
        a for a in synthesized.of_type("AWS::KMS::Alias").values() if a["Properties"]["AliasName"] == "alias/credgate/secrets"
    )
    key = synthesized.resources[alias["Properties"]["TargetKeyId"]["Fn::GetAtt"][0]]
    assert key["Properties"]["EnableKeyRotation"] is True
    assert key["DeletionPolicy"] == "Retain"


def test_every_kms_key_rotates(synthesized):
    keys = synthesized.of_type("AWS::KMS::Key")
    assert keys
    assert all(key["Properties"]["EnableKeyRotation"] is True for key in keys.values())
