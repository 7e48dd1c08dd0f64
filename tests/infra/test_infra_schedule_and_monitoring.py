"""The monthly budget job and the alarms."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.infra


def test_budget_reset_runs_at_midnight_utc_on_the_first_of_the_month(synthesized):
    _, rule = synthesized.only("AWS::Events::Rule")
    function_id, _ = synthesized.function("credgate_budget_reset.handler.handler")
    assert rule["Properties"]["ScheduleExpression"] == "cron(0 0 1 * ? *)"
    assert rule["Properties"]["State"] == "ENABLED"
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": [function_id, "Arn"]}


def test_alarms_cover_api_5xx_function_failures_and_unhealthy_gateway_tasks(synthesized):
    watched = {
        (a["Properties"]["Namespace"], a["Properties"]["MetricName"], str(a["Properties"]["Dimensions"]))
        for a in synthesized.of_type("AWS::CloudWatch::Alarm").values()
    }
    metrics = {(namespace, metric) for namespace, metric, _ in watched}
    assert ("AWS/ApiGateway", "5xx") in metrics
    assert ("AWS/NetworkELB", "UnHealthyHostCount") in metrics
    for handler in (
        "credgate_api.handler.handler",
        "credgate_authorizer.handler.handler",
        "credgate_budget_reset.handler.handler",
    ):
        function_id, _ = synthesized.function(handler)
        for metric in ("Errors", "Throttles"):
            assert any(
                ns == "AWS/Lambda" and name == metric and f"'Ref': '{function_id}'" in dims
                for ns, name, dims in watched
            ), (handler, metric)


def test_every_alarm_notifies_the_encrypted_alarm_topic(synthesized):
    topic_id, topic = synthesized.only("AWS::SNS::Topic")
    assert "KmsMasterKeyId" in topic["Properties"]
    for alarm in synthesized.of_type("AWS::CloudWatch::Alarm").values():
        assert alarm["Properties"]["AlarmActions"] == [{"Ref": topic_id}]
