"""Manual approval through the real gateway: a held request shows up for a person (with a scrubbed body
preview), and completes, is refused, or expires according to their decision."""
from __future__ import annotations

import json
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Iterator

import httpx
import pytest

from .gateway_support import Gateway, running_gateway, unique, wait_until

pytestmark = pytest.mark.e2e

HOSTS = ("approve.example.test", "refuse.example.test", "expire.example.test")



@pytest.fixture
def short_hold_gateway(tmp_path) -> Iterator[Gateway]:
    """A gateway that gives up on a held request after 2 s."""
    with running_gateway(tmp_path, HOSTS, "--approval-timeout", "2") as running:
        yield running
        running.assert_log_holds_no_credential()


@pytest.fixture
def in_background() -> Iterator[Any]:
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="held-request") as pool:
        yield pool.submit


def send_as_agent(gw: Gateway, method: str, url: str, **kwargs: Any) -> httpx.Response:
    with gw.agent() as client:
        return client.request(method, url, **kwargs)


def wait_for_approval(gw: Gateway, path: str) -> dict[str, Any]:
    def pending() -> dict[str, Any] | None:
        listed = gw.api.get("/approvals")
        assert listed.status_code == 200, listed.text
        return next((approval for approval in listed.json() if approval["path"] == path), None)

    return wait_until(pending, timeout=10, what=f"a pending approval for {path}")


def decide(gw: Gateway, approval_id: str, decision: str) -> httpx.Response:
    return gw.api.post(f"/approvals/{approval_id}/decision", json={"decision": decision})


def test_a_held_request_is_listed_with_a_scrubbed_preview_and_completes_once_approved(gw, in_background):
    stored = unique("stored-secret")
    gw.header_secret("approve.example.test", "X-Key", stored)
    rule = gw.rule(hostPattern="approve.example.test", pathPattern="/v1/payments", method="POST", action="manual_approval")
    gw.sync()
    body = {"prompt": "pay the invoice", "api_key": "abc", "nested": {"access_token": "t0k-e2e"}, "note": f"use {stored}"}

    held: Future[httpx.Response] = in_background(send_as_agent, gw, "POST", "https://approve.example.test/v1/payments?id=7", json=body)
    approval = wait_for_approval(gw, "/v1/payments")

    assert not held.done()
    assert gw.upstream.requests("approve.example.test") == []
    assert (approval["status"], approval["method"], approval["host"], approval["path"]) == (
        "pending", "POST", "approve.example.test", "/v1/payments",
    )
    assert (approval["agentId"], approval["ruleId"], approval["ruleName"]) == (gw.bootstrap["agentId"], rule["id"], rule["name"])
    preview = approval["bodyPreview"]
    assert json.loads(preview) == {
        "prompt": "pay the invoice", "api_key": "[REDACTED]", "nested": {"access_token": "[REDACTED]"}, "note": "use [REDACTED]",
    }
    assert approval["id"] in [a["id"] for a in gw.org_api.get("/org/approvals").json()]

    decided = decide(gw, approval["id"], "approve")
    response = held.result(timeout=10)

    assert decided.status_code == 200 and decided.json()["status"] == "approved"
    assert response.status_code == 200
    assert response.headers["x-upstream"] == "fake"
    received = gw.upstream.requests("approve.example.test")
    assert [(r.method, r.target) for r in received] == [("POST", "/v1/payments?id=7")]
    assert json.loads(received[0].received_body) == body
    assert gw.api.get("/approvals").json() == []


def test_an_approved_request_with_a_large_body_goes_upstream_whole_after_a_truncated_preview(gw, in_background):
    gw.rule(hostPattern="approve.example.test", pathPattern="/v1/upload", action="manual_approval")
    gw.sync()
    body = b"".join(f"line {n:07d}\n".encode() for n in range(80_000))  # ~1 MiB, far beyond the preview

    held: Future[httpx.Response] = in_background(send_as_agent, gw, "PUT", "https://approve.example.test/v1/upload", content=body)
    approval = wait_for_approval(gw, "/v1/upload")

    assert approval["bodyPreview"].startswith("line 0000000\nline 0000001\n")
    assert approval["bodyPreview"].endswith("…") and len(approval["bodyPreview"]) < 4096
    assert decide(gw, approval["id"], "approve").status_code == 200
    response = held.result(timeout=10)
    assert response.status_code == 200
    assert response.json()["bodyLength"] == len(body)
    assert [r.received_body for r in gw.upstream.requests("approve.example.test", "/v1/upload")] == [body]


def test_a_denied_request_gets_403_and_never_reaches_the_upstream(gw, in_background):
    gw.rule(hostPattern="refuse.example.test", action="manual_approval")
    gw.sync()

    held: Future[httpx.Response] = in_background(send_as_agent, gw, "DELETE", "https://refuse.example.test/v1/db")
    approval = wait_for_approval(gw, "/v1/db")
    assert approval["bodyPreview"] is None

    decided = decide(gw, approval["id"], "deny")
    response = held.result(timeout=10)

    assert decided.status_code == 200 and decided.json()["status"] == "denied"
    assert response.status_code == 403
    assert response.json()["error"] == "manual_approval_denied"
    assert response.headers["x-should-retry"] == "false"
    assert gw.upstream.requests("refuse.example.test") == []
    assert decide(gw, approval["id"], "approve").status_code == 409


def test_a_request_nobody_decides_on_is_refused_when_the_hold_expires(short_hold_gateway, in_background):
    gw = short_hold_gateway
    gw.rule(hostPattern="expire.example.test", action="manual_approval")
    gw.sync()

    held: Future[httpx.Response] = in_background(send_as_agent, gw, "GET", "https://expire.example.test/v1/slow")
    approval = wait_for_approval(gw, "/v1/slow")
    response = held.result(timeout=15)

    assert response.status_code == 403
    assert response.json()["error"] == "manual_approval_denied"
    assert gw.upstream.requests("expire.example.test") == []
    assert gw.api.get("/approvals").json() == []
    late = decide(gw, approval["id"], "approve")
    assert late.status_code == 410, late.text
