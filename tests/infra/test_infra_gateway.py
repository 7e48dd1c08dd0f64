"""The proxy on Fargate: arm64 tasks, health-checked, behind a TCP NLB on the proxy port."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.infra

PROXY_PORT = 10255


def _container(synthesized) -> dict:
    _, task = synthesized.only("AWS::ECS::TaskDefinition")
    (container,) = task["Properties"]["ContainerDefinitions"]
    return container


def test_task_runs_on_fargate_arm64(synthesized):
    _, task = synthesized.only("AWS::ECS::TaskDefinition")
    props = task["Properties"]
    assert props["RequiresCompatibilities"] == ["FARGATE"]
    assert props["RuntimePlatform"] == {"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"}


def test_container_runs_the_cloud_entrypoint_on_the_proxy_port(synthesized):
    container = _container(synthesized)
    assert container["Command"] == ["python", "-m", "credgate_gateway.cloud"]
    assert container["PortMappings"] == [{"ContainerPort": PROXY_PORT, "Protocol": "tcp"}]
    assert container["LogConfiguration"]["LogDriver"] == "awslogs"


def test_container_health_check_probes_healthz(synthesized):
    health = _container(synthesized)["HealthCheck"]
    assert health["Command"][:2] == ["CMD", "python"]
    assert f"http://127.0.0.1:{PROXY_PORT}/healthz" in health["Command"][-1]


def test_container_reads_the_deployment_settings(synthesized):
    env = {e["Name"] for e in _container(synthesized)["Environment"]}
    assert {
        "CREDGATE_TABLE_NAME",
        "CREDGATE_KMS_KEY_ID",
        "CREDGATE_API_URL",
        "CREDGATE_APP_URL",
        "CREDGATE_GATEWAY_URL",
        "POWERTOOLS_SERVICE_NAME",
    } <= env


def test_nlb_passes_tcp_through_to_the_tasks_proxy_port(synthesized):
    _, nlb = synthesized.only("AWS::ElasticLoadBalancingV2::LoadBalancer")
    _, listener = synthesized.only("AWS::ElasticLoadBalancingV2::Listener")
    target_group_id, target_group = synthesized.only("AWS::ElasticLoadBalancingV2::TargetGroup")
    assert nlb["Properties"]["Type"] == "network"
    assert nlb["Properties"]["Scheme"] == "internet-facing"
    assert listener["Properties"]["Protocol"] == "TCP"
    assert listener["Properties"]["DefaultActions"] == [{"TargetGroupArn": {"Ref": target_group_id}, "Type": "forward"}]
    props = target_group["Properties"]
    assert (props["Protocol"], props["Port"], props["TargetType"]) == ("TCP", PROXY_PORT, "ip")


def test_nlb_health_check_is_http_get_healthz_on_the_proxy_port(synthesized):
    _, target_group = synthesized.only("AWS::ElasticLoadBalancingV2::TargetGroup")
    props = target_group["Properties"]
    assert props["HealthCheckProtocol"] == "HTTP"
    assert props["HealthCheckPath"] == "/healthz"
    assert props["HealthCheckPort"] == str(PROXY_PORT)


def test_service_runs_two_private_tasks_registered_with_the_nlb(synthesized):
    target_group_id, _ = synthesized.only("AWS::ElasticLoadBalancingV2::TargetGroup")
    _, service = synthesized.only("AWS::ECS::Service")
    props = service["Properties"]
    assert props["DesiredCount"] == 2
    assert props["LoadBalancers"] == [
        {"ContainerName": "proxy", "ContainerPort": PROXY_PORT, "TargetGroupArn": {"Ref": target_group_id}}
    ]
    assert props["NetworkConfiguration"]["AwsvpcConfiguration"]["AssignPublicIp"] == "DISABLED"
    assert props["DeploymentConfiguration"]["DeploymentCircuitBreaker"] == {"Enable": True, "Rollback": True}


def test_tasks_accept_the_proxy_port_from_the_nlb_security_group_only(synthesized):
    _, nlb = synthesized.only("AWS::ElasticLoadBalancingV2::LoadBalancer")
    _, service = synthesized.only("AWS::ECS::Service")
    (nlb_group,) = nlb["Properties"]["SecurityGroups"]
    (task_group,) = service["Properties"]["NetworkConfiguration"]["AwsvpcConfiguration"]["SecurityGroups"]
    task_group_id = task_group["Fn::GetAtt"][0]
    assert not synthesized.resources[task_group_id]["Properties"].get("SecurityGroupIngress")
    ingress = [
        r["Properties"]
        for r in synthesized.of_type("AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"]["GroupId"] == task_group
    ]
    assert ingress and all(
        (rule["SourceSecurityGroupId"], rule["FromPort"], rule["ToPort"]) == (nlb_group, PROXY_PORT, PROXY_PORT)
        for rule in ingress
    )


def test_vpc_spans_two_zones_with_one_nat_gateway(synthesized):
    subnets = synthesized.of_type("AWS::EC2::Subnet").values()
    zones = {json.dumps(s["Properties"]["AvailabilityZone"], sort_keys=True) for s in subnets}
    assert len(zones) == 2
    assert len(synthesized.of_type("AWS::EC2::NatGateway")) == 1
    assert synthesized.of_type("AWS::EC2::FlowLog")


def test_image_is_built_for_arm64_from_the_repository_root(synthesized):
    (image,) = synthesized.assets_manifest()["dockerImages"].values()
    assert image["source"]["dockerFile"] == "gateway/Dockerfile"
    assert image["source"]["platform"] == "linux/arm64"


def test_image_context_holds_only_what_the_image_needs(synthesized):
    (image,) = synthesized.assets_manifest()["dockerImages"].values()
    context = synthesized.outdir / image["source"]["directory"]
    assert sorted(p.name for p in context.iterdir()) == [".dockerignore", "gateway", "layers", "pyproject.toml"]
    assert (context / "gateway" / "Dockerfile").is_file()
    assert (context / "gateway" / "credgate_gateway" / "__init__.py").is_file()
    assert (context / "layers" / "shared" / "python" / "credgate" / "__init__.py").is_file()
    assert sorted(p.name for p in (context / "layers" / "shared" / "python").iterdir()) == ["credgate"]
    assert not list(context.rglob("__pycache__"))


@pytest.fixture(scope="module")
def with_certificate(tmp_path_factory):
    """The stack as deployed with context gatewayCertificateArn: the NLB then terminates TLS."""
    from aws_cdk.assertions import Template

    from infra.cdk_app import build
    from tests.infra.conftest import REPO_ROOT

    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    context["gatewayCertificateArn"] = CERTIFICATE_ARN
    _, stack = build(outdir=str(tmp_path_factory.mktemp("cdk.out.tls")), context=context)
    return Template.from_stack(stack).to_json()["Resources"]


CERTIFICATE_ARN = "arn:aws:acm:us-east-1:123456789012:certificate/11111111-2222-3333-4444-555555555555"


def test_with_a_certificate_agents_reach_the_proxy_over_tls(with_certificate):
    (listener,) = [r for r in with_certificate.values() if r["Type"] == "AWS::ElasticLoadBalancingV2::Listener"]
    properties = listener["Properties"]
    assert (properties["Protocol"], properties["Port"]) == ("TLS", 443)
    assert properties["Certificates"] == [{"CertificateArn": CERTIFICATE_ARN}]
    (target_group,) = [r for r in with_certificate.values() if r["Type"] == "AWS::ElasticLoadBalancingV2::TargetGroup"]
    assert (target_group["Properties"]["Protocol"], target_group["Properties"]["Port"]) == ("TCP", 10255)
    ingress = [
        rule
        for r in with_certificate.values()
        if r["Type"] == "AWS::EC2::SecurityGroup"
        for rule in r["Properties"].get("SecurityGroupIngress", [])
        if rule.get("CidrIp") == "0.0.0.0/0"
    ]
    assert [(rule["FromPort"], rule["ToPort"]) for rule in ingress] == [(443, 443)]
    (task,) = [r for r in with_certificate.values() if r["Type"] == "AWS::ECS::TaskDefinition"]
    environment = {e["Name"]: e["Value"] for e in task["Properties"]["ContainerDefinitions"][0]["Environment"]}
    url = json.dumps(environment["CREDGATE_GATEWAY_URL"])
    assert '"https://"' in url and ":443" in url
