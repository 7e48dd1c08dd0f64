"""The single DynamoDB table and the KMS key that wraps secret data keys."""
from __future__ import annotations

from aws_cdk import RemovalPolicy
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

# The item store's calls (get/batch-get/query; put/update and transactions of put,
# update, delete and condition checks). No Scan: nothing reads the whole table.
TABLE_READ_ACTIONS = ("dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query")
TABLE_WRITE_ACTIONS = (
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:ConditionCheckItem",
)


class Data(Construct):
    def __init__(self, scope: Construct, construct_id: str) -> None:
        super().__init__(scope, construct_id)

        # AWS-managed encryption keeps table readers free of KMS permissions (the authorizer
        # has none); secret values are additionally envelope-encrypted under `secrets_key`.
        self.table = dynamodb.Table(
            self,
            "Table",
            partition_key=dynamodb.Attribute(name="pk", type=dynamodb.AttributeType.STRING),
            sort_key=dynamodb.Attribute(name="sk", type=dynamodb.AttributeType.STRING),
            billing_mode=dynamodb.BillingMode.PAY_PER_REQUEST,
            point_in_time_recovery_specification=dynamodb.PointInTimeRecoverySpecification(
                point_in_time_recovery_enabled=True
            ),
            time_to_live_attribute="expiresAt",
            encryption=dynamodb.TableEncryption.AWS_MANAGED,
            deletion_protection=True,
            removal_policy=RemovalPolicy.RETAIN,
        )

        self.secrets_key = kms.Key(
            self,
            "SecretsKey",
            description="credgate: wraps the per-value data keys of stored secrets and credentials",
            enable_key_rotation=True,
            alias="alias/credgate/secrets",
            removal_policy=RemovalPolicy.RETAIN,
        )

    def grant_table_read(self, grantee: iam.IGrantable) -> None:
        self._grant_table(grantee, TABLE_READ_ACTIONS)

    def grant_table_read_write(self, grantee: iam.IGrantable) -> None:
        self._grant_table(grantee, TABLE_READ_ACTIONS + TABLE_WRITE_ACTIONS)

    def grant_key(self, grantee: iam.IGrantable, *actions: str) -> None:
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=list(actions), resources=[self.secrets_key.key_arn])
        )

    def _grant_table(self, grantee: iam.IGrantable, actions: tuple[str, ...]) -> None:
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(actions=list(actions), resources=[self.table.table_arn])
        )
