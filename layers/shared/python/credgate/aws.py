"""boto3 clients for the cloud entry points."""
from __future__ import annotations

import threading
from typing import Any


class LazyClient:
    """A boto3 client created on first use: a cold start pays only for the clients a request needs."""

    def __init__(self, service: str, **options: Any) -> None:
        self._service = service
        self._options = options
        self._client: Any = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import boto3

                    self._client = boto3.client(self._service, **self._options)
        return getattr(self._client, name)
