"""Agent Setup: what a container needs to send its traffic through the gateway."""
from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from credgate.domain.models import ContainerConfig
from credgate.errors import DependencyUnavailable
from credgate.ports import ItemStore
from credgate.services import agents
from credgate.services.core import Core, Principal
from credgate.store import schema

CONTAINER_CA_PATH = "/etc/credgate/ca.pem"
# SDKs refuse to start without a key; the gateway replaces these with the real credential.
PLACEHOLDER_KEYS = {
    "ANTHROPIC_API_KEY": "sk-ant-credgate-placeholder",
    "OPENAI_API_KEY": "sk-credgate-placeholder",
}


def ca_certificate_from_store(store: ItemStore) -> str | None:
    """The gateway CA as every gateway task shares it (cloud); only the public certificate."""
    item = store.get(schema.gateway_ca())
    return item["certPem"] if item else None


def _proxy_url(gateway_url: str, token: str) -> str:
    parts = urlsplit(gateway_url)
    return urlunsplit((parts.scheme, f"agent:{token}@{parts.netloc}", "", "", ""))


def container_config(core: Core, principal: Principal, identifier: str | None, ca_pem: str | None) -> ContainerConfig:
    if ca_pem is None:
        raise DependencyUnavailable("The gateway has not created its certificate authority yet. Retry shortly.")
    if identifier:
        agent = agents.find_agent_by_identifier(core, principal, identifier)
    else:
        agent = agents.default_agent(core, principal)
    proxy = _proxy_url(core.settings.gateway_url, agents.agent_token(core, principal, agent))
    env = {
        "HTTPS_PROXY": proxy,
        "HTTP_PROXY": proxy,
        "https_proxy": proxy,
        "http_proxy": proxy,
        "NO_PROXY": "localhost,127.0.0.1,::1",
        "no_proxy": "localhost,127.0.0.1,::1",
        "NODE_EXTRA_CA_CERTS": CONTAINER_CA_PATH,
        "NODE_USE_ENV_PROXY": "1",
        "REQUESTS_CA_BUNDLE": CONTAINER_CA_PATH,
        "SSL_CERT_FILE": CONTAINER_CA_PATH,
        "CURL_CA_BUNDLE": CONTAINER_CA_PATH,
        "GIT_SSL_CAINFO": CONTAINER_CA_PATH,
        **PLACEHOLDER_KEYS,
    }
    return ContainerConfig(
        agentId=agent["id"],
        identifier=agent["identifier"],
        gatewayUrl=core.settings.gateway_url,
        caCertPath=CONTAINER_CA_PATH,
        env=env,
        caCert=ca_pem,
    )
