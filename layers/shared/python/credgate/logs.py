"""Structured JSON logs (one object per line) for every process: Lambda, gateway task, local server."""
from __future__ import annotations

import logging
import sys
from typing import TextIO

from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter


def configure_logging(service: str, level: str = "INFO", stream: TextIO | None = None) -> None:
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(LambdaPowertoolsFormatter(service=service))
    logger = logging.getLogger("credgate")
    logger.handlers = [handler]
    logger.setLevel(level)
    logger.propagate = False
