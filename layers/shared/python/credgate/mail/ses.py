"""SES mail for the cloud deployment."""
from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from credgate.errors import DependencyUnavailable


class SesMailer:
    def __init__(self, client: Any, sender: str) -> None:
        self._client = client
        self._sender = sender

    def send(self, to: str, subject: str, text: str, links: list[str]) -> None:
        try:
            self._client.send_email(
                Source=self._sender,
                Destination={"ToAddresses": [to]},
                Message={"Subject": {"Data": subject, "Charset": "UTF-8"}, "Body": {"Text": {"Data": text, "Charset": "UTF-8"}}},
            )
        except (ClientError, BotoCoreError) as error:
            raise DependencyUnavailable("The email could not be sent. Retry with exponential backoff.") from error
