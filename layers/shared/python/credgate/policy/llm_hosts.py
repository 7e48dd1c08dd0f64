"""The hosts of the built-in `anthropic` and `openai` secret types: exempt from the organization's default-deny."""
from __future__ import annotations

from credgate.policy.matching import normalize_host

# The official SDKs' default base URLs (anthropic-sdk-*, openai-*).
LLM_HOSTS = frozenset({"api.anthropic.com", "api.openai.com"})
# OpenAI's data-residency endpoints: one region label in front of api.openai.com (us., eu., jp., ...);
# the list of regions grows, the shape does not.
LLM_REGIONAL_SUFFIXES = (".api.openai.com",)


def is_llm_host(host: str) -> bool:
    host = normalize_host(host)
    if host in LLM_HOSTS:
        return True
    for suffix in LLM_REGIONAL_SUFFIXES:
        if host.endswith(suffix) and "." not in host[: -len(suffix)] and len(host) > len(suffix):
            return True
    return False
