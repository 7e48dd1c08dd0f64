"""Changes made through the API reach the running gateway within 2 s: new, changed and deleted secrets,
new rules, regenerated agent tokens. Each is measured from just before the API call to the first request
through the gateway that shows it."""
from __future__ import annotations

import time
from typing import Any, Callable

import httpx
import pytest

from tests.integration.gateway_engine.fakes import basic

from .gateway_support import connect, unique, wait_until

pytestmark = pytest.mark.e2e

HOSTS = ("added.example.test", "patched.example.test", "deleted.example.test", "ruled.example.test", "token.example.test")
DEADLINE = 2.0



def seconds_until_observed(change: Callable[[], Any], observed: Callable[[], bool], what: str) -> float:
    """Make the change, then poll through the gateway until it shows; the seconds that took."""
    started = time.monotonic()
    change()
    wait_until(observed, timeout=DEADLINE + 5, what=what)  # longer than the deadline, to report how late it was
    return time.monotonic() - started


def injected(response: httpx.Response, header: str = "x-key") -> str | None:
    """The value of `header` the upstream received (the fake upstream echoes its request)."""
    assert response.status_code == 200, response.text
    values = [value for name, value in response.json()["headers"] if name.lower() == header]
    assert len(values) <= 1, values
    return values[0] if values else None


def test_a_new_secret_is_injected_within_two_seconds(gw):
    value = unique("added")
    url = "https://added.example.test/x"
    assert injected(gw.client.get(url)) is None

    took = seconds_until_observed(
        lambda: gw.header_secret("added.example.test", "X-Key", value),
        lambda: injected(gw.client.get(url)) == value,
        "the new secret being injected",
    )

    assert took < DEADLINE, f"the new secret took {took:.2f} s to reach the gateway"


def test_a_changed_secret_value_is_injected_within_two_seconds(gw):
    old, new = unique("old"), unique("new")
    url = "https://patched.example.test/x"
    secret = gw.header_secret("patched.example.test", "X-Key", old)
    wait_until(lambda: injected(gw.client.get(url)) == old, timeout=10, what="the secret before its change")
    gw.issued.append(new)

    def change() -> None:
        assert gw.api.patch(f"/secrets/{secret['id']}", json={"value": new}).status_code == 200

    took = seconds_until_observed(change, lambda: injected(gw.client.get(url)) == new, "the changed value being injected")

    assert took < DEADLINE, f"the changed value took {took:.2f} s to reach the gateway"


def test_a_deleted_secret_stops_being_injected_within_two_seconds(gw):
    value = unique("deleted")
    url = "https://deleted.example.test/x"
    secret = gw.header_secret("deleted.example.test", "X-Key", value)
    wait_until(lambda: injected(gw.client.get(url)) == value, timeout=10, what="the secret before its deletion")

    def change() -> None:
        assert gw.api.delete(f"/secrets/{secret['id']}").status_code == 204

    took = seconds_until_observed(change, lambda: injected(gw.client.get(url)) is None, "the deleted secret no longer injected")

    assert took < DEADLINE, f"the deletion took {took:.2f} s to reach the gateway"


def test_a_new_block_rule_applies_within_two_seconds(gw):
    url = "https://ruled.example.test/v1/x"
    assert gw.client.get(url).status_code == 200

    took = seconds_until_observed(
        lambda: gw.rule(hostPattern="ruled.example.test", action="block"),
        lambda: gw.client.get(url).status_code == 403,
        "the block rule applying",
    )

    assert took < DEADLINE, f"the block rule took {took:.2f} s to reach the gateway"


def test_a_regenerated_token_stops_the_old_one_within_two_seconds_and_the_new_one_works(gw):
    agent = gw.new_agent("rotated")
    old = agent["accessToken"]
    with gw.agent(old) as open_tunnel:
        assert open_tunnel.get("https://token.example.test/before").status_code == 200
        tokens: list[str] = []

        took = seconds_until_observed(
            lambda: tokens.append(gw.regenerate_token(agent["id"])),
            lambda: connect(gw.port, "token.example.test", basic(old)).status == 407,
            "the old token being refused",
        )

        assert took < DEADLINE, f"the old token still worked {took:.2f} s after regeneration"
        assert open_tunnel.get("https://token.example.test/old-tunnel").status_code == 407
    with gw.agent(tokens[0]) as client:
        assert client.get("https://token.example.test/after").status_code == 200
    assert [r.target for r in gw.upstream.requests("token.example.test")] == ["/before", "/after"]
