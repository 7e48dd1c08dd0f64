"""Issuing and revoking API keys and agent tokens: stored as a SHA-256 lookup item, never as plaintext."""
from __future__ import annotations

from typing import Any

from credgate.keys import KeyKind, key_hash, new_key
from credgate.services.core import Core
from credgate.services.records import key_item
from credgate.store import schema
from credgate.store.ops import Absent, Delete, Exists, Put


def issue(core: Core, kind: KeyKind, **owner: Any) -> tuple[str, Put]:
    """A fresh key and the write that makes it valid."""
    key = new_key(kind)
    item = key_item(schema.credential(key_hash(key)), kind=kind.value, createdAt=core.now_iso(), **owner)
    return key, Put(item, Absent())


def revoke(key_hash_value: str) -> Delete:
    return Delete(schema.credential(key_hash_value), Exists())


def seal(core: Core, key: str, context: dict[str, str]) -> str:
    """The encrypted copy kept where the owner may see a key again."""
    return core.keyring.encrypt(key.encode(), context)


def unseal(core: Core, ciphertext: str, context: dict[str, str]) -> str:
    return core.keyring.decrypt(ciphertext, context).decode()


def project_key_context(org_id: str, project_id: str, user_id: str) -> dict[str, str]:
    return {"organizationId": org_id, "projectId": project_id, "userId": user_id, "purpose": "project-key"}


def agent_token_context(org_id: str, project_id: str, agent_id: str) -> dict[str, str]:
    return {"organizationId": org_id, "projectId": project_id, "agentId": agent_id, "purpose": "agent-token"}
