"""Secrets at project and organization level. Values are write-only: sealed on the way in, never shown."""
from __future__ import annotations

from typing import Any

from credgate.domain.injection import injection_to_json, parse_injection_config
from credgate.domain.models import (
    OrgSecretCreate,
    Scope,
    Secret,
    SecretCreate,
    SecretPatch,
    SecretType,
    ValueSource,
    check_injection_for_type,
)
from credgate.errors import ConditionFailed, NotFound, ValidationFailed
from credgate.keys import new_id
from credgate.policy import SecretSpec
from credgate.services.core import Core, Principal, config_changed
from credgate.services.owners import Owner, organization_owner, project_owner
from credgate.services.records import Item, key_item
from credgate.store.ops import Absent, Delete, Exists, Put, Update

SECRET_NOT_FOUND = "Secret not found"
_MASK = "••••••••"


def preview(value: str) -> str:
    """At most the first 4 and last 4 characters of a value of 12+ characters, else only a mask."""
    return f"{value[:4]}…{value[-4:]}" if len(value) >= 12 else _MASK


def secret_view(item: Item, scope: Scope, read_only: bool) -> Secret:
    return Secret(
        id=item["id"],
        name=item["name"],
        type=item["type"],
        valueSource=item["valueSource"],
        opRef=item.get("opRef"),
        hostPattern=item["hostPattern"],
        pathPattern=item.get("pathPattern"),
        injectionConfig=item.get("injectionConfig"),
        preview=item.get("preview"),
        scope=scope,
        readOnly=read_only,
        createdAt=item["createdAt"],
        updatedAt=item["updatedAt"],
    )


def _items(core: Core, owner: Owner) -> list[Item]:
    return core.store.query(owner.partition, "SECRET#")


def _secret(core: Core, owner: Owner, secret_id: str) -> Item:
    item = core.store.get(owner.item_key("SECRET", secret_id))
    if item is None:
        raise NotFound(SECRET_NOT_FOUND)
    return item


def get_secret(core: Core, owner: Owner, secret_id: str) -> Secret:
    return secret_view(_secret(core, owner, secret_id), owner.scope, False)


def list_secrets(core: Core, principal: Principal) -> list[Secret]:
    """The project's view: its own secrets, then the organization's (read-only here)."""
    project = [secret_view(item, Scope.PROJECT, False) for item in _items(core, project_owner(principal))]
    org = [secret_view(item, Scope.ORGANIZATION, True) for item in _items(core, organization_owner(principal))]
    return project + org


def list_organization_secrets(core: Core, principal: Principal) -> list[Secret]:
    return [secret_view(item, Scope.ORGANIZATION, False) for item in _items(core, organization_owner(principal))]


def visible_secret_ids(core: Core, principal: Principal) -> set[str]:
    return {secret.id for secret in list_secrets(core, principal)}


def _sealed_value(core: Core, owner: Owner, secret_id: str, value: str) -> dict[str, Any]:
    return {
        "valueCiphertext": core.keyring.encrypt(value.encode(), owner.encryption_context(secret_id)),
        "preview": preview(value),
    }


def create_secret(core: Core, owner: Owner, request: SecretCreate | OrgSecretCreate) -> Secret:
    secret_id = new_id("sec")
    now = core.now_iso()
    item = key_item(
        owner.item_key("SECRET", secret_id),
        id=secret_id,
        name=request.name,
        type=request.type.value,
        valueSource=request.valueSource.value,
        hostPattern=request.hostPattern,
        pathPattern=request.pathPattern,
        injectionConfig=injection_to_json(request.injectionConfig),
        createdAt=now,
        updatedAt=now,
        **owner.context,
    )
    op_ref = getattr(request, "opRef", None)
    if request.valueSource is ValueSource.ONEPASSWORD:
        item.update(opRef=op_ref, preview=None)
    else:
        assert request.value is not None  # the request model guarantees it
        item.update(_sealed_value(core, owner, secret_id, request.value))
    core.store.write(Put(item, Absent()), *config_changed(core, owner.organization_id))
    return secret_view(item, owner.scope, False)


def update_secret(core: Core, owner: Owner, secret_id: str, patch: SecretPatch) -> Secret:
    item = _secret(core, owner, secret_id)
    changes = patch.changes()
    merged_type = SecretType(item["type"])
    injection = parse_injection_config(changes["injectionConfig"] if "injectionConfig" in changes else item.get("injectionConfig"))
    try:
        check_injection_for_type(merged_type, injection)
    except ValueError as error:
        raise ValidationFailed(str(error)) from None
    inline = item["valueSource"] == ValueSource.INLINE.value
    if "value" in changes and not inline:
        raise ValidationFailed("value cannot be set on a 1Password secret; change opRef instead")
    if "opRef" in changes and inline:
        raise ValidationFailed("opRef is only used with valueSource onepassword")
    fields: dict[str, Any] = {name: value for name, value in changes.items() if name not in ("value", "injectionConfig")}
    if "injectionConfig" in changes:
        fields["injectionConfig"] = injection_to_json(injection)
    if "value" in changes:
        fields.update(_sealed_value(core, owner, secret_id, changes["value"]))
    fields["updatedAt"] = core.now_iso()
    try:
        core.store.write(Update(owner.item_key("SECRET", secret_id), set=fields), *config_changed(core, owner.organization_id))
    except ConditionFailed:
        raise NotFound(SECRET_NOT_FOUND) from None
    return secret_view({**item, **fields}, owner.scope, False)


def delete_secret(core: Core, owner: Owner, secret_id: str) -> None:
    try:
        core.store.write(Delete(owner.item_key("SECRET", secret_id), Exists()), *config_changed(core, owner.organization_id))
    except ConditionFailed:
        raise NotFound(SECRET_NOT_FOUND) from None


def reveal(core: Core, context: dict[str, str], item: Item) -> str:
    """The plaintext of a stored value, for the gateway's in-memory config only."""
    return core.keyring.decrypt(item["valueCiphertext"], {**context, "secretId": item["id"]}).decode()


def secret_spec(item: Item, scope: Scope, value: str) -> SecretSpec:
    """A stored secret as the gateway's matching and injection take it."""
    return SecretSpec(
        id=item["id"],
        scope=scope,
        type=item["type"],
        host_pattern=item["hostPattern"],
        path_pattern=item.get("pathPattern"),
        injection=parse_injection_config(item.get("injectionConfig")),
        value=value,
        created_at=item["createdAt"],
    )
