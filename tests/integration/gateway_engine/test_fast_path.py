"""Hooks that can decide without waiting (decide_now) are acted on from the parsing callback;
anything they leave undecided takes the awaited path with the same outcomes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from credgate_gateway.proxy import Forward, ProxyRequest, Respond

from .fakes import TOKEN, RecordingHooks


LEAKED = "-".join(("sk", "should", "not", "leak"))  # built at run time: a traceback's source lines don't show it


@dataclass
class FastHooks(RecordingHooks):
    decided_now: list[str] = field(default_factory=list)

    def decide_now(self, token: str | None, request: ProxyRequest) -> tuple[Any, Forward | Respond] | None:
        if token != TOKEN:
            return None
        if request.path == "/boom":
            raise RuntimeError(f"hook bug quoting a credential {LEAKED}")
        if request.path == "/refuse":
            self.decided_now.append(request.path)
            return "agent-1", Respond(403, [("content-type", "application/json")], b'{"error":"blocked_by_policy"}', "blocked_by_policy")
        if request.path.startswith("/fast"):
            self.decided_now.append(request.path)
            return "agent-1", Forward(request.method, request.target, [*request.headers, ("X-Decided", "now")], note="fast")
        return None


@pytest.fixture
def hooks() -> FastHooks:
    return FastHooks()


def test_requests_decided_now_reach_the_upstream_without_the_awaited_hooks(setup, hooks):
    s = setup()
    with s.client() as client:
        first = client.get("https://api.example.test/fast/1")
        second = client.get("https://api.example.test/fast/2")
    assert (first.status_code, second.status_code) == (200, 200)
    assert [r.header("x-decided") for r in s.upstream.requests] == ["now", "now"]
    assert hooks.decided_now == ["/fast/1", "/fast/2"]
    assert hooks.requests == []  # on_request never ran
    assert s.upstream.accepts == 1  # the second went over the pooled connection, also from the fast path
    records = hooks.wait_records(2)
    assert [(r.path, r.status, r.note) for r in records] == [("/fast/1", 200, "fast"), ("/fast/2", 200, "fast")]


def test_an_undecided_request_takes_the_awaited_path(setup, hooks):
    s = setup()
    with s.client() as client:
        response = client.get("https://api.example.test/slow")
    assert response.status_code == 200
    assert [r.path for r in hooks.requests] == ["/slow"]
    assert s.upstream.requests[0].header("x-credgate-agent") == "agent-1"


def test_a_refusal_decided_now_is_answered_without_the_upstream(setup, hooks):
    s = setup()
    with s.client() as client:
        response = client.get("https://api.example.test/refuse")
    assert (response.status_code, response.json()) == (403, {"error": "blocked_by_policy"})
    assert s.upstream.requests == []
    (record,) = hooks.wait_records(1)
    assert (record.status, record.error) == (403, "blocked_by_policy")


def test_a_failing_fast_path_answers_500_without_its_text(setup, hooks, caplog):
    s = setup()
    with s.client() as client:
        response = client.get("https://api.example.test/boom")
    assert response.status_code == 500
    assert response.json()["error"] == "internal_error"
    assert LEAKED not in response.text
    assert "RuntimeError" in caplog.text and LEAKED not in caplog.text
