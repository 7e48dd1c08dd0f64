"""What every credgate Lambda shares (runtime, layer, settings) and what each keeps to itself (role, logs)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from aws_cdk import Duration
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.nag import acknowledge

RUNTIME = lambda_.Runtime.PYTHON_3_12
ARCHITECTURE = lambda_.Architecture.ARM_64
LOG_RETENTION = logs.RetentionDays.THREE_MONTHS


class CredgateFunction(Construct):
    """A function with its own role, holding nothing but write access to its own log group."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        package_dir: Path,
        handler: str,
        layer: lambda_.ILayerVersion,
        environment: Mapping[str, str],
        description: str,
        memory_size: int,
        timeout: Duration,
    ) -> None:
        super().__init__(scope, construct_id)
        if not package_dir.is_dir():
            raise FileNotFoundError(f"function package directory missing: {package_dir}")

        self.log_group = logs.LogGroup(self, "Logs", retention=LOG_RETENTION)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description=f"Runs {description}",
        )
        self.log_group.grant_write(self.role)
        self.function = lambda_.Function(
            self,
            "Function",
            description=description,
            runtime=RUNTIME,
            architecture=ARCHITECTURE,
            handler=handler,
            code=lambda_.Code.from_asset(str(package_dir), exclude=["**/__pycache__", "*.pyc"]),
            layers=[layer],
            role=self.role,
            log_group=self.log_group,
            environment=dict(environment),
            memory_size=memory_size,
            timeout=timeout,
        )
        acknowledge(
            self.function.node.default_child,
            "AwsSolutions-L1",
            "Pinned to python3.12 on purpose: infra/bundle.py builds the shared layer's cp312 arm64 "
            "wheels; the runtime and the layer build move together.",
        )

    @property
    def grant_principal(self) -> iam.IPrincipal:
        return self.role


class FunctionRuntime(Construct):
    """The shared layer (third-party wheels + the `credgate` core) and the settings every function reads."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        layer_dir: Path,
        functions_dir: Path,
        environment: Mapping[str, str],
    ) -> None:
        super().__init__(scope, construct_id)
        self._functions_dir = functions_dir
        self._environment = dict(environment)
        self.layer = lambda_.LayerVersion(
            self,
            "SharedLayer",
            description="credgate core and its runtime dependencies (arm64, python3.12)",
            code=lambda_.Code.from_asset(str(layer_dir)),  # with its Python 3.12 bytecode (infra/bundle.py)
            compatible_runtimes=[RUNTIME],
            compatible_architectures=[ARCHITECTURE],
        )

    def function(
        self,
        scope: Construct,
        construct_id: str,
        *,
        package: str,
        handler: str,
        service: str,
        description: str,
        memory_size: int = 512,
        timeout: Duration = Duration.seconds(10),
    ) -> CredgateFunction:
        return CredgateFunction(
            scope,
            construct_id,
            package_dir=self._functions_dir / package,
            handler=handler,
            layer=self.layer,
            environment={**self._environment, "POWERTOOLS_SERVICE_NAME": service},
            description=description,
            memory_size=memory_size,
            timeout=timeout,
        )
