"""Sign-in and invitation mail through SES, sent from one configured identity."""
from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import Construct


class Mail(Construct):
    """The SES identity itself is verified outside the stack (it needs DNS records)."""

    def __init__(self, scope: Construct, construct_id: str, *, sender: str, identity: str) -> None:
        super().__init__(scope, construct_id)
        self.sender = sender
        self.identity_arn = Stack.of(self).format_arn(service="ses", resource="identity", resource_name=identity)

    def grant_send(self, grantee: iam.IGrantable) -> None:
        grantee.grant_principal.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["ses:SendEmail", "ses:SendRawEmail"],
                resources=[self.identity_arn],
                conditions={"StringEquals": {"ses:FromAddress": self.sender}},
            )
        )
