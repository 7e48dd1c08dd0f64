"""The proxy: Fargate tasks (arm64) behind a TCP pass-through NLB; TLS interception happens in the task."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from aws_cdk import Duration, IgnoreMode, Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_ecs as ecs
from aws_cdk import aws_elasticloadbalancingv2 as elbv2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from infra.capabilities.data import Data
from infra.capabilities.functions import LOG_RETENTION
from infra.nag import acknowledge

PROXY_PORT = 10255
TLS_LISTENER_PORT = 443
HEALTH_PATH = "/healthz"
CONTAINER_NAME = "proxy"
_HEALTH_PROBE = (
    "import sys, urllib.request; "
    f"sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:{PROXY_PORT}{HEALTH_PATH}', timeout=2).status == 200 else 1)"
)


class Gateway(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        data: Data,
        repo_root: Path,
        environment: Mapping[str, str],
        desired_count: int,
        ingress_cidr: str,
        certificate_arn: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        # With a certificate the NLB terminates TLS (agents' proxy credentials travel encrypted);
        # without one it passes TCP through and agents speak plain HTTP to the proxy port.
        listener_port = TLS_LISTENER_PORT if certificate_arn else PROXY_PORT

        flow_logs = logs.LogGroup(self, "VpcFlowLogs", retention=LOG_RETENTION)
        self.vpc = ec2.Vpc(
            self,
            "Vpc",
            max_azs=2,
            nat_gateways=1,
            subnet_configuration=[
                ec2.SubnetConfiguration(name="public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=24),
                ec2.SubnetConfiguration(name="tasks", subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS, cidr_mask=22),
            ],
            # Table traffic stays inside AWS's network instead of crossing the NAT gateway.
            gateway_endpoints={"DynamoDb": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.DYNAMODB)},
            flow_logs={"All": ec2.FlowLogOptions(destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_logs))},
        )

        self.load_balancer_security_group = ec2.SecurityGroup(
            self,
            "LoadBalancerSecurityGroup",
            vpc=self.vpc,
            description="credgate gateway NLB: proxy connections from agents in, to tasks out",
            allow_all_outbound=False,
        )
        self.load_balancer_security_group.add_ingress_rule(
            ec2.Peer.ipv4(ingress_cidr), ec2.Port.tcp(listener_port), "proxy connections from agents"
        )
        self.task_security_group = ec2.SecurityGroup(
            self,
            "TaskSecurityGroup",
            vpc=self.vpc,
            description="credgate gateway tasks: proxy port from the NLB only; any upstream out",
            # A forward proxy reaches whatever hosts and ports agents ask for.
            allow_all_outbound=True,
        )
        self.task_security_group.add_ingress_rule(
            self.load_balancer_security_group, ec2.Port.tcp(PROXY_PORT), "proxy traffic and health checks from the NLB"
        )
        self.load_balancer_security_group.add_egress_rule(
            self.task_security_group, ec2.Port.tcp(PROXY_PORT), "to the gateway tasks"
        )

        self.cluster = ecs.Cluster(
            self, "Cluster", vpc=self.vpc, container_insights_v2=ecs.ContainerInsights.ENABLED
        )

        self.task_role = iam.Role(
            self,
            "TaskRole",
            assumed_by=iam.ServicePrincipal("ecs-tasks.amazonaws.com"),
            description="credgate gateway task: rate-limit counters, CA and approvals in the table; secret decryption",
        )
        data.grant_table_read_write(self.task_role)
        data.grant_key(self.task_role, "kms:Decrypt", "kms:GenerateDataKey")

        self.task_definition = ecs.FargateTaskDefinition(
            self,
            "TaskDefinition",
            cpu=512,
            memory_limit_mib=1024,
            runtime_platform=ecs.RuntimePlatform(
                cpu_architecture=ecs.CpuArchitecture.ARM64,
                operating_system_family=ecs.OperatingSystemFamily.LINUX,
            ),
            task_role=self.task_role,
        )
        self.log_group = logs.LogGroup(self, "Logs", retention=LOG_RETENTION)
        self.container = self.task_definition.add_container(
            "Proxy",
            container_name=CONTAINER_NAME,
            image=ecs.ContainerImage.from_asset(
                str(repo_root),
                file="gateway/Dockerfile",
                platform=ecr_assets.Platform.LINUX_ARM64,
                # The allow-list lives in the repository's .dockerignore (docker build reads it too).
                ignore_mode=IgnoreMode.DOCKER,
            ),
            command=["python", "-m", "credgate_gateway.cloud"],
            port_mappings=[ecs.PortMapping(container_port=PROXY_PORT, protocol=ecs.Protocol.TCP)],
            # The process writes one JSON object per line; awslogs forwards the lines unchanged.
            logging=ecs.LogDrivers.aws_logs(stream_prefix="gateway", log_group=self.log_group),
            health_check=ecs.HealthCheck(
                command=["CMD", "python", "-c", _HEALTH_PROBE],
                interval=Duration.seconds(15),
                timeout=Duration.seconds(5),
                retries=3,
                start_period=Duration.seconds(30),
            ),
            environment={
                **environment,
                "CREDGATE_REGION": Stack.of(self).region,
                "POWERTOOLS_SERVICE_NAME": "credgate-gateway",
            },
            stop_timeout=Duration.seconds(60),
        )

        self.service = ecs.FargateService(
            self,
            "Service",
            cluster=self.cluster,
            task_definition=self.task_definition,
            desired_count=desired_count,
            min_healthy_percent=100,
            max_healthy_percent=200,
            security_groups=[self.task_security_group],
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            assign_public_ip=False,
            circuit_breaker=ecs.DeploymentCircuitBreaker(enable=True, rollback=True),
            health_check_grace_period=Duration.seconds(60),
        )

        self.load_balancer = elbv2.NetworkLoadBalancer(
            self,
            "LoadBalancer",
            vpc=self.vpc,
            internet_facing=True,
            cross_zone_enabled=True,
            security_groups=[self.load_balancer_security_group],
            vpc_subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PUBLIC),
        )
        if certificate_arn:
            self.listener = self.load_balancer.add_listener(
                "Proxy",
                port=TLS_LISTENER_PORT,
                protocol=elbv2.Protocol.TLS,
                certificates=[elbv2.ListenerCertificate.from_arn(certificate_arn)],
                ssl_policy=elbv2.SslPolicy.RECOMMENDED_TLS,
            )
        else:
            # TCP pass-through: agents speak plain HTTP proxy (CONNECT) to the task, which intercepts TLS.
            self.listener = self.load_balancer.add_listener("Proxy", port=PROXY_PORT, protocol=elbv2.Protocol.TCP)
        self.target_group = self.listener.add_targets(
            "Tasks",
            port=PROXY_PORT,
            protocol=elbv2.Protocol.TCP,
            targets=[self.service.load_balancer_target(container_name=CONTAINER_NAME, container_port=PROXY_PORT)],
            health_check=elbv2.HealthCheck(
                protocol=elbv2.Protocol.HTTP,
                path=HEALTH_PATH,
                port=str(PROXY_PORT),
                healthy_threshold_count=2,
                unhealthy_threshold_count=2,
                interval=Duration.seconds(10),
                timeout=Duration.seconds(5),
            ),
            # Long SSE streams get time to finish when a task is replaced.
            deregistration_delay=Duration.seconds(120),
        )

        scheme = "https" if certificate_arn else "http"
        self.url = f"{scheme}://{self.load_balancer.load_balancer_dns_name}:{listener_port}"
        self.container.add_environment("CREDGATE_GATEWAY_URL", self.url)

        self._suppress_findings(open_to_internet=ingress_cidr in ("0.0.0.0/0", "::/0"))

    def _suppress_findings(self, *, open_to_internet: bool) -> None:
        acknowledge(
            self.load_balancer.node.default_child,
            "AwsSolutions-ELB2",
            "Every proxied request is logged by the gateway tasks themselves (one JSON line with agent, host, "
            "method, path, status, injected secret ids and duration); NLB connection logs would add nothing.",
        )
        execution_policy = self.task_definition.obtain_execution_role().node.find_child("DefaultPolicy")
        acknowledge(
            execution_policy.node.default_child,
            "AwsSolutions-IAM5[Resource::*]",
            "ecr:GetAuthorizationToken has no resource-level permissions; the image pull and log "
            "actions beside it are scoped to the asset repository and the task's log group.",
        )
        acknowledge(
            self.task_definition.node.default_child,
            "AwsSolutions-ECS2",
            "The environment holds configuration only (table name, key ARN, public URLs); secrets stay "
            "in the table under KMS envelope encryption.",
        )
        if open_to_internet:
            acknowledge(
                self.load_balancer_security_group.node.default_child,
                "AwsSolutions-EC23",
                "Public forward proxy for agents anywhere; every request is authenticated by its agent "
                "token (407 otherwise). Narrow it with context gatewayIngressCidr.",
            )
