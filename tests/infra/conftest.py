"""Synthesizes the CDK app once per test session (it takes seconds) for every infra test."""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Must be set before the first aws_cdk import starts the jsii node process.
os.environ.setdefault("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")

import pytest  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))


@dataclass(frozen=True)
class SynthesizedApp:
    app: Any  # aws_cdk.App
    stack: Any  # infra.stack.CredgateStack
    template: Any  # aws_cdk.assertions.Template
    template_json: dict[str, Any]  # converted once: every to_json() is a round trip to the jsii process
    outdir: Path

    @property
    def resources(self) -> dict[str, dict[str, Any]]:
        return self.template_json["Resources"]

    def of_type(self, resource_type: str) -> dict[str, dict[str, Any]]:
        return {k: r for k, r in self.resources.items() if r["Type"] == resource_type}

    def only(self, resource_type: str) -> tuple[str, dict[str, Any]]:
        (found,) = self.of_type(resource_type).items()
        return found

    def function(self, handler: str) -> tuple[str, dict[str, Any]]:
        (found,) = (
            (k, r) for k, r in self.of_type("AWS::Lambda::Function").items() if r["Properties"].get("Handler") == handler
        )
        return found

    def policy_statements(self, role_logical_id: str) -> list[dict[str, Any]]:
        """Every statement granted to a role, inline or through attached AWS::IAM::Policy resources."""
        role = self.resources[role_logical_id]
        statements = [s for p in role["Properties"].get("Policies", []) for s in p["PolicyDocument"]["Statement"]]
        for policy in self.of_type("AWS::IAM::Policy").values():
            if {"Ref": role_logical_id} in policy["Properties"].get("Roles", []):
                statements += policy["Properties"]["PolicyDocument"]["Statement"]
        return statements

    def allowed_actions(self, role_logical_id: str) -> set[str]:
        actions: set[str] = set()
        for statement in self.policy_statements(role_logical_id):
            assert statement["Effect"] == "Allow"
            granted = statement["Action"]
            actions.update([granted] if isinstance(granted, str) else granted)
        return actions

    def assets_manifest(self) -> dict[str, Any]:
        return json.loads((self.outdir / f"{self.stack.artifact_id}.assets.json").read_text())

    def file_asset_dir(self, s3_key: str) -> Path:
        asset_hash = s3_key.removesuffix(".zip")
        return self.outdir / self.assets_manifest()["files"][asset_hash]["source"]["path"]


@pytest.fixture(scope="session")
def synthesized(tmp_path_factory: pytest.TempPathFactory) -> SynthesizedApp:
    from aws_cdk.assertions import Template

    from infra.cdk_app import build

    context = json.loads((REPO_ROOT / "cdk.json").read_text())["context"]
    outdir = tmp_path_factory.mktemp("cdk.out")
    app, stack = build(outdir=str(outdir), context=context)
    # Synthesizes the app, running cdk-nag as a validation plugin: unacknowledged errors raise here.
    template = Template.from_stack(stack)
    return SynthesizedApp(app=app, stack=stack, template=template, template_json=template.to_json(), outdir=outdir)
