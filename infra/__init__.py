"""The AWS deployment of credgate (CDK); `cdk_app.py` is the composition root."""
