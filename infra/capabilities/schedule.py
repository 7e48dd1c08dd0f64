"""The monthly budget job: EventBridge at 00:00 UTC on the 1st -> the budget-reset function."""
from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from constructs import Construct

from infra.capabilities.data import Data
from infra.capabilities.functions import CredgateFunction, FunctionRuntime

# EventBridge cron fields are UTC: minute hour day-of-month month day-of-week year.
MONTHLY_AT_MIDNIGHT_UTC = events.Schedule.cron(minute="0", hour="0", day="1", month="*", year="*")


class Schedule(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, runtime: FunctionRuntime, data: Data) -> None:
        super().__init__(scope, construct_id)
        self.budget_reset: CredgateFunction = runtime.function(
            self,
            "BudgetReset",
            package="budget_reset",
            handler="credgate_budget_reset.handler.handler",
            service="credgate-budget-reset",
            description="credgate monthly budget reset: closes the ended period (safe to run twice)",
            memory_size=512,
            timeout=Duration.minutes(5),
        )
        data.grant_table_read_write(self.budget_reset)

        self.rule = events.Rule(
            self,
            "MonthlyBudgetReset",
            description="credgate: close monthly partner budget periods",
            schedule=MONTHLY_AT_MIDNIGHT_UTC,
            # Spend is keyed by YYYY-MM, so a late or repeated run is harmless: retry generously.
            targets=[
                targets.LambdaFunction(
                    self.budget_reset.function, retry_attempts=3, max_event_age=Duration.hours(6)
                )
            ],
        )
