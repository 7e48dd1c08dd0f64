"""Alarms on what breaks users (API 5xx, function errors and throttles, unhealthy proxy tasks) -> SNS."""
from __future__ import annotations

from typing import Mapping

from aws_cdk import Duration, RemovalPolicy, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from constructs import Construct

from infra.capabilities.api import Api
from infra.capabilities.functions import CredgateFunction
from infra.capabilities.gateway import Gateway

_FIVE_MINUTES = Duration.minutes(5)


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        api: Api,
        functions: Mapping[str, CredgateFunction],
        gateway: Gateway,
        alarm_email: str | None,
    ) -> None:
        super().__init__(scope, construct_id)

        # CloudWatch can only publish to an encrypted topic whose key policy lets it use the key
        # (the AWS-managed SNS key does not).
        topic_key = kms.Key(
            self,
            "AlarmTopicKey",
            description="credgate: encrypts the alarm topic",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.DESTROY,
        )
        topic_key.add_to_resource_policy(
            iam.PolicyStatement(
                principals=[iam.ServicePrincipal("cloudwatch.amazonaws.com")],
                actions=["kms:Decrypt", "kms:GenerateDataKey*"],
                resources=["*"],
                conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}},
            )
        )
        self.topic = sns.Topic(
            self, "AlarmTopic", display_name="credgate alarms", master_key=topic_key, enforce_ssl=True
        )
        if alarm_email:
            self.topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
        notify = actions.SnsAction(self.topic)

        def alarm(
            alarm_id: str, metric: cloudwatch.IMetric, threshold: float, description: str, periods: int = 1
        ) -> None:
            cloudwatch.Alarm(
                self,
                alarm_id,
                metric=metric,
                threshold=threshold,
                evaluation_periods=periods,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                alarm_description=description,
            ).add_alarm_action(notify)

        alarm(
            "Api5xx",
            api.http_api.metric_server_error(period=_FIVE_MINUTES, statistic="Sum"),
            5,
            "The management API answered 5xx at least 5 times in 5 minutes.",
        )
        for name, function in functions.items():
            alarm(
                f"{name}Errors",
                function.function.metric_errors(period=_FIVE_MINUTES, statistic="Sum"),
                1,
                f"The {name} function failed (unhandled error or timeout).",
            )
            alarm(
                f"{name}Throttles",
                function.function.metric_throttles(period=_FIVE_MINUTES, statistic="Sum"),
                1,
                f"The {name} function was throttled.",
            )
        alarm(
            "GatewayUnhealthyHosts",
            gateway.target_group.metrics.un_healthy_host_count(period=Duration.minutes(1), statistic="Maximum"),
            1,
            "A gateway task has failed the NLB health check (GET /healthz) for 3 minutes.",
            periods=3,
        )
