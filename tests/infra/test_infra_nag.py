"""cdk-nag's AwsSolutions pack passes; every accepted finding says why."""
from __future__ import annotations

import json
import re

import pytest

pytestmark = pytest.mark.infra


def _unacknowledged_errors(scope) -> list[str]:
    from cdk_nag import AwsSolutionsChecks

    report = AwsSolutionsChecks(verbose=True).validate_scope(scope)
    return [
        f"{v.rule_name} at {[r.construct_path for r in v.violating_resources]}: {v.description}"
        for v in report.violations
        if v.severity == "error"
    ]


def test_aws_solutions_checks_report_no_unacknowledged_errors(synthesized):
    assert _unacknowledged_errors(synthesized.app) == []


def test_accepted_findings_are_the_reviewed_ones_and_each_carries_a_reason(synthesized):
    metadata = json.loads((synthesized.outdir / f"{synthesized.stack.artifact_id}.metadata.json").read_text())
    accepted: dict[str, set[str]] = {}
    for path, entries in metadata.items():
        for entry in entries:
            if entry["type"] != "aws:cdk:acknowledged-rules":
                continue
            for rule, reason in entry["data"].items():
                rule = re.sub(r"^annotation::", "", rule, flags=re.IGNORECASE)
                if rule.startswith("AwsSolutions-"):
                    assert len(reason.strip()) >= 30, (path, rule, reason)
                    accepted.setdefault(rule, set()).add(path.removeprefix("/Credgate/"))
    assert accepted == {
        "AwsSolutions-L1": {
            "Api/Handler/Function/Resource",
            "Api/Authorizer/Function/Resource",
            "Schedule/BudgetReset/Function/Resource",
        },
        "AwsSolutions-ELB2": {"Gateway/LoadBalancer/Resource"},
        "AwsSolutions-ECS2": {"Gateway/TaskDefinition/Resource"},
        "AwsSolutions-EC23": {"Gateway/LoadBalancerSecurityGroup/Resource"},
        "AwsSolutions-IAM5[Resource::*]": {"Gateway/TaskDefinition/ExecutionRole/DefaultPolicy/Resource"},
    }


def test_the_check_catches_an_unacknowledged_error():
    """Guards the two tests above against passing vacuously."""
    import aws_cdk as cdk
    from aws_cdk import aws_sns as sns

    app = cdk.App()
    stack = cdk.Stack(app, "NagControl")
    sns.Topic(stack, "PlainTopic")
    cdk.Validations.of(stack).acknowledge(cdk.Acknowledgment(id="AwsSolutions-SNS2", reason="only SNS3 is probed here"))
    errors = _unacknowledged_errors(app)
    assert any(error.startswith("AwsSolutions-SNS3 ") for error in errors)
    assert not any(error.startswith("AwsSolutions-SNS2 ") for error in errors)
