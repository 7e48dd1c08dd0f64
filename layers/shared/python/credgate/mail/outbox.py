"""Local mail: one JSON file per message in the outbox folder."""
from __future__ import annotations

import json
import os
from pathlib import Path

from credgate.keys import new_id


class OutboxMailer:
    def __init__(self, folder: Path) -> None:
        self._folder = folder
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)

    def send(self, to: str, subject: str, text: str, links: list[str]) -> None:
        message = {"to": to, "subject": subject, "text": text, "links": links}
        name = new_id("mail")
        temporary = self._folder / f".{name}.tmp"
        # Written then renamed, so a reader never sees half a message.
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(message, handle, indent=2)
        os.replace(temporary, self._folder / f"{name}.json")
