"""The agent token in Proxy-Authorization: Basic base64(user:password), password first, else user."""
from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from credgate_gateway.proxy import proxy_token


def basic(credentials: str) -> str:
    return "Basic " + base64.b64encode(credentials.encode()).decode()


@pytest.mark.parametrize(
    ("header", "token"),
    [
        (basic("x:aoc_123"), "aoc_123"),
        (basic("aoc_123:"), "aoc_123"),
        (basic("aoc_123"), "aoc_123"),
        (basic(":aoc_123"), "aoc_123"),
        (basic("x:aoc:with:colons"), "aoc:with:colons"),
        ("basic " + base64.b64encode(b"x:aoc_1").decode(), "aoc_1"),
        ("BASIC   " + base64.b64encode(b"x:aoc_1").decode() + "  ", "aoc_1"),
        (basic(":"), None),
        (basic(""), None),
        (None, None),
        ("", None),
        ("Bearer aoc_123", None),
        ("Basic", None),
        ("Basic !!!not-base64!!!", None),
        ("Basic " + base64.b64encode(b"\xff\xfe:\xff").decode(), None),
        (basic("x:aoc_1").encode(), "aoc_1"),
    ],
)
def test_proxy_token_table(header, token):
    assert proxy_token(header) == token


credential_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(user=credential_text.filter(lambda user: ":" not in user), password=credential_text)
def test_password_wins_and_user_is_the_fallback(user, password):
    expected = password or user or None
    assert proxy_token(basic(f"{user}:{password}")) == expected


@given(st.binary(max_size=64))
def test_arbitrary_bytes_never_raise(raw):
    result = proxy_token(b"Basic " + base64.b64encode(raw))
    assert result is None or isinstance(result, str)


@given(st.text(max_size=80))
def test_arbitrary_header_text_never_raises(text):
    result = proxy_token(text)
    assert result is None or isinstance(result, str)
