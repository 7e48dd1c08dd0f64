"""cdk-nag (v3: a CDK policy-validation plugin) findings that the stack accepts, each with its reason."""
from __future__ import annotations

from aws_cdk import Acknowledgment, Validations
from constructs import IConstruct


def acknowledge(scope: IConstruct, rule: str, reason: str) -> None:
    """Accepts `rule` (e.g. "AwsSolutions-L1" or "AwsSolutions-IAM5[Resource::*]") on `scope` and below.

    Pass the CloudFormation resource itself (`construct.node.default_child`) so the acknowledgment
    does not spread to the other resources an L2 construct creates.
    """
    Validations.of(scope).acknowledge(Acknowledgment(id=rule, reason=reason))
