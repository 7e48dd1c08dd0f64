#!/usr/bin/env python3
"""AWS composition root: `npm ci && npx cdk deploy [-c key=value ...]` runs it through cdk.json
(context keys: infra/config.py); tests call `build`."""
from __future__ import annotations

import os
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

import aws_cdk as cdk  # noqa: E402
from cdk_nag import AwsSolutionsChecks  # noqa: E402

from infra.bundle import build_layer  # noqa: E402
from infra.config import DeploymentConfig, deployment_region  # noqa: E402
from infra.stack import CredgateStack  # noqa: E402


def build(outdir: str | None = None, context: dict | None = None) -> tuple[cdk.App, CredgateStack]:
    app = cdk.App(outdir=outdir or os.environ.get("CDK_OUTDIR") or str(REPO_ROOT / "cdk.out"), context=context)
    stack = CredgateStack(
        app,
        "Credgate",
        env=cdk.Environment(region=deployment_region(app.node, os.environ)),
        repo_root=REPO_ROOT,
        layer_dir=build_layer(REPO_ROOT),
        config=DeploymentConfig.from_context(app.node),
    )
    # Runs at synth: unacknowledged errors fail `cdk synth`/`deploy`; acknowledgments (with their
    # reasons) are recorded in the cloud assembly's Credgate.metadata.json.
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app, verbose=True))
    return app, stack


if __name__ == "__main__":
    build()[0].synth()
