"""The Python `Client` against a scripted server on a real socket: requests and error mapping."""

from __future__ import annotations

import json
import socket

import pytest

import stateous
from stateous.client import Client, ClientError, NotFound, Refused, Unreachable
from tests.unit.client.conftest import Script

TOKEN = {"token": "T-1", "state": "coding", "status": "active", "visit": 1, "context": {}}


def test_the_package_exports_exactly_the_clients_and_their_errors() -> None:
    import stateous.client as package

    assert sorted(package.__all__) == [
        "AsyncClient",
        "Client",
        "ClientError",
        "NotFound",
        "Page",
        "Refused",
        "Unreachable",
    ]
    assert stateous.Client is Client
    assert issubclass(NotFound, Refused) and issubclass(Refused, ClientError)
    assert issubclass(Unreachable, ClientError) and ClientError.__bases__ == (Exception,)


def test_each_method_sends_one_request(server: tuple[str, Script]) -> None:
    url, script = server
    for _ in range(11):
        script.answer(200, json.dumps(TOKEN))
    script.answers[2] = (200, "[]", "application/json")
    script.answers[3] = (200, "[]", "application/json")
    with Client(url + "/") as c:
        assert c.url == url
        assert c.start("T-1") == TOKEN
        c.get("a/b c")
        c.tokens(status="active", limit=5)
        c.history("T-1")
        c.fire("T-1", "done", key="gh-delivery-81231")
        c.fire("T-1", "passed", {"passed": 1})
        c.pause("T-1")
        c.resume("T-1")
        c.cancel("T-1")
        c.report(7, "passed", {"passed": 12, "failed": 0}, attempt=1)
        c.workflow()
    seen = [(r.method, r.path, r.body) for r in script.requests]
    assert seen == [
        ("POST", "/tokens", b'{"token":"T-1","context":{}}'),
        ("GET", "/tokens/a%2Fb%20c", b""),
        ("GET", "/tokens?status=active&limit=5", b""),
        ("GET", "/tokens/T-1/history", b""),
        ("POST", "/tokens/T-1/events/done", b"{}"),
        ("POST", "/tokens/T-1/events/passed", b'{"payload":{"passed":1}}'),
        ("POST", "/tokens/T-1/pause", b"{}"),
        ("POST", "/tokens/T-1/resume", b"{}"),
        ("POST", "/tokens/T-1/cancel", b"{}"),
        (
            "POST",
            "/tasks/7/report",
            b'{"kind":"event","event":"passed","payload":{"passed":12,"failed":0},"attempt":1}',
        ),
        ("GET", "/workflow", b""),
    ]
    assert script.requests[4].headers["idempotency-key"] == "gh-delivery-81231"
    assert "idempotency-key" not in script.requests[5].headers


def test_a_refusal_carries_status_message_and_code(server: tuple[str, Script]) -> None:
    url, script = server
    sentence = "token 'TICKET-4' is cancelled; it takes no events"
    script.answer(409, json.dumps({"error": sentence, "code": "token_not_active"}))
    with Client(url) as c, pytest.raises(Refused) as caught:
        c.fire("TICKET-4", "done")
    error = caught.value
    assert type(error) is Refused
    assert (error.status, error.message, error.code) == (409, sentence, "token_not_active")
    assert str(error) == f"the control plane at {url} refused (409): {sentence}"


def test_a_404_is_not_found(server: tuple[str, Script]) -> None:
    url, script = server
    script.answer(404, json.dumps({"error": "there is no token 'NOPE'", "code": "token_not_found"}))
    with Client(url) as c, pytest.raises(NotFound) as caught:
        c.get("NOPE")
    assert (
        str(caught.value) == f"the control plane at {url} refused (404): there is no token 'NOPE'"
    )
    assert caught.value.code == "token_not_found"


def test_a_refusal_without_an_error_shows_the_body_or_the_reason(
    server: tuple[str, Script],
) -> None:
    url, script = server
    script.answer(502, "  <html>bad\n gateway " + "x" * 300, "text/html")
    script.answer(503, "", "text/plain")
    with Client(url) as c:
        with pytest.raises(Refused) as caught:
            c.get("T-1")
        assert caught.value.code is None
        assert caught.value.message == "<html>bad gateway " + "x" * 181
        with pytest.raises(Refused) as caught:
            c.get("T-1")
        assert caught.value.message == "Service Unavailable"


def test_a_success_that_is_not_json(server: tuple[str, Script]) -> None:
    url, script = server
    script.answer(200, "<html>hello</html>", "text/html")
    script.answer(200, '{"a": NaN}')
    with Client(url) as c:
        for _ in range(2):
            with pytest.raises(ClientError) as caught:
                c.get("T-1")
            assert str(caught.value) == (
                f"the control plane at {url} answered 200 with something that is not JSON; "
                "check the URL"
            )


def test_an_answer_of_the_wrong_shape(server: tuple[str, Script]) -> None:
    url, script = server
    script.answer(200, "[1]")
    script.answer(200, "{}")
    with Client(url) as c:
        with pytest.raises(ClientError) as caught:
            c.get("T-1")
        assert str(caught.value) == (
            f"the control plane at {url} sent an answer of the wrong shape; check the URL"
        )
        with pytest.raises(ClientError):
            c.history("T-1")


def test_nothing_listening_is_unreachable() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with Client(url, timeout=2) as c, pytest.raises(Unreachable) as caught:
        c.get("T-1")
    assert str(caught.value).startswith(f"cannot reach the control plane at {url}: ")
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("url", "sentence"),
    [
        ("http://[::1", "http://[::1 is not a URL: "),
        ("ftp://host", "ftp://host is not a URL: "),
        ("127.0.0.1:8080", "127.0.0.1:8080 is not a URL: "),
        ("http://h:99999", "http://h:99999 is not a URL: "),
        ("http://", "http: is not a URL: "),
        (
            "http://my host:8000",
            "http://my host:8000 has a host that is not valid: a host has only letters, digits, "
            "'-' and '.', or is an IP address",
        ),
        ("http://h%C3%A9llo", "http://h%C3%A9llo has a host that is not valid: "),
        ("http://héllo", "http://héllo has a host that is not valid: "),
        ("http://a b" + "c" * 120, "http://a b" + "c" * 90 + "... has a host that is not valid"),
    ],
)
def test_a_bad_url_is_refused_at_construction(url: str, sentence: str) -> None:
    with pytest.raises(ClientError) as caught:
        Client(url)
    assert str(caught.value).startswith(sentence)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080",
        "https://cp.internal",
        "http://[::1]:8080",
        "http://build_box-1.example.:80",
        "http://localhost",
        "http://a" + "b" * 120,
    ],
)
def test_good_urls(url: str) -> None:
    with Client(url) as c:
        assert c.url == url


def test_a_key_with_a_control_character_is_refused_before_sending(
    server: tuple[str, Script],
) -> None:
    url, script = server
    with Client(url) as c, pytest.raises(ClientError) as caught:
        c.fire("T-1", "done", key="a\nb")
    assert str(caught.value) == "an idempotency key may not hold control characters"
    assert script.requests == []


def test_a_bearer_token_goes_with_every_request(server: tuple[str, Script]) -> None:
    url, script = server
    script.answer(200, "[]")
    with Client(url, auth_token="s3cret") as c:
        assert c.tokens() == []
    assert script.requests[0].headers["authorization"] == "Bearer s3cret"
