"""Where each record lives in the single table: the one place that spells pk/sk formats.

Project-scoped records share the project's partition, organization-scoped ones the
organization's, so a tenant's data is always read through its own partition key.
"""
from __future__ import annotations

from credgate.store.ops import Key

CONFIG_VERSIONS = "CONFIGVER"


def organization(org_id: str) -> Key:
    return Key(f"ORG#{org_id}", "META")


def organization_project(org_id: str, project_id: str) -> Key:
    return Key(f"ORG#{org_id}", f"PROJECT#{project_id}")


def project(project_id: str) -> Key:
    return Key(f"PROJECT#{project_id}", "META")


def agent(project_id: str, agent_id: str) -> Key:
    return Key(f"PROJECT#{project_id}", f"AGENT#{agent_id}")


def agent_identifier(project_id: str, identifier: str) -> Key:
    return Key(f"PROJECT#{project_id}", f"AGENTIDENT#{identifier}")


def default_agent(project_id: str) -> Key:
    return Key(f"PROJECT#{project_id}", "DEFAULTAGENT")


def owned_item(partition: str, kind: str, item_id: str) -> Key:
    """A secret or rule ("SECRET", "RULE") in its owner's partition (a project's or an organization's)."""
    return Key(partition, f"{kind}#{item_id}")


def user(user_id: str) -> Key:
    return Key(f"USER#{user_id}", "META")


def user_email(email: str) -> Key:
    return Key(f"EMAIL#{email}", "USER")


def member(org_id: str, user_id: str) -> Key:
    return Key(f"ORG#{org_id}", f"MEMBER#{user_id}")


def membership(user_id: str, org_id: str) -> Key:
    """The user-side copy of a membership, so a user's organizations are one query."""
    return Key(f"USER#{user_id}", f"MEMBER#{org_id}")


def credential(key_hash: str) -> Key:
    return Key(f"CRED#{key_hash}", "CRED")


def user_project_key(project_id: str, user_id: str) -> Key:
    """A user's project key lives in the project's partition, so deleting a project finds it."""
    return Key(f"PROJECT#{project_id}", f"USERKEY#{user_id}")


def organization_key(org_id: str, key_id: str) -> Key:
    return Key(f"ORG#{org_id}", f"ORGKEY#{key_id}")


def session(token_hash: str) -> Key:
    return Key(f"SESSION#{token_hash}", "SESSION")


def email_link(token_hash: str) -> Key:
    return Key(f"EMAILLINK#{token_hash}", "LINK")


def invitation(org_id: str, invitation_id: str) -> Key:
    return Key(f"ORG#{org_id}", f"INVITE#{invitation_id}")


def config_version(scope: str) -> Key:
    """The version the gateway polls to learn that an organization's config changed."""
    return Key(CONFIG_VERSIONS, scope)


def approval(org_id: str, approval_id: str) -> Key:
    """Approvals live with the organization; the project view filters by projectId."""
    return Key(f"ORG#{org_id}", f"APPROVAL#{approval_id}")


def rate_window(rule_id: str, agent_id: str, window_start: int) -> Key:
    return Key(f"RATE#{rule_id}#{agent_id}", str(window_start))


def gateway_ca() -> Key:
    return Key("GATEWAY", "CA")
