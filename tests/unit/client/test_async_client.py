"""`AsyncClient` against scripted servers on real sockets: `Client`'s methods, requests, errors
and fail-over, each checked on both faces."""

from __future__ import annotations

import inspect
import json
import socket
from typing import Any

import pytest

from stateous.client import AsyncClient, Client, ClientError, NotFound, Refused, Unreachable
from tests.unit.client.conftest import Script

TOKEN = {"token": "T-1", "state": "draft", "status": "active", "visit": 1, "context": {}}
NOT_SERVING = {"error": "this control plane serves no database now", "code": "not_serving"}

# (method, args, kwargs, the answer's JSON): every method of `Client` that sends a request.
CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any], Any]] = [
    ("start", ("T-1", {"title": "x"}), {"reason": "from a test"}, TOKEN),
    ("get", ("a/b c",), {}, TOKEN),
    ("tokens", (), {"status": "active", "parent": "P-1", "limit": 5}, []),
    ("history", ("T-1",), {}, [{"seq": 1}]),
    ("fire", ("T-1", "done"), {"key": "gh-delivery-81231"}, TOKEN),
    ("fire", ("T-1", "passed", {"passed": 1}), {}, {"duplicate": True, "token": TOKEN}),
    ("pause", ("T-1",), {"reason": "hold it"}, TOKEN),
    ("resume", ("T-1",), {}, TOKEN),
    ("cancel", ("T-1",), {}, TOKEN),
    ("retry", ("T/1",), {}, TOKEN),
    ("move", ("T-1", "review", {"title": "y"}), {"reason": "by hand"}, TOKEN),
    ("why", ("T-1",), {}, {"token": TOKEN, "findings": []}),
    ("bulk", ("fire", {"state": "draft"}), {"event": "submitted", "payload": {}}, {"job": 3}),
    ("bulk", ("pause", None), {"dry_run": True}, {"matched": 0, "tokens": []}),
    ("bulk_job", (3,), {}, {"job": 3, "status": "running"}),
    ("bulk_jobs", (), {"limit": 10}, []),
    ("stop_bulk", (3,), {}, {"job": 3, "status": "stopped"}),
    ("audit", (), {"actor": "alice", "since": "2026-01-01T00:00:00Z", "limit": 2}, []),
    (
        "export",
        ("2026-01-01T00:00:00Z",),
        {"after": "T-1", "limit": 2},
        {"tokens": [], "next": None},
    ),
    ("prune", (["T-1"], "2026-01-01T00:00:00Z"), {"reason": "old"}, {"pruned": 1, "skipped": {}}),
    (
        "import_tokens",
        ([{"token": {"token": "T-1"}, "history": [], "children": []}],),
        {"reason": "restore"},
        {"imported": 1, "skipped": 0, "keys_pending": 0},
    ),
    ("add_schedule", ("nightly", "0 9 * * *"), {"tz": "Europe/Paris", "paused": True}, {"n": 1}),
    ("schedules", (), {}, [{"name": "nightly"}]),
    ("schedule", ("night/ly",), {}, {"name": "night/ly"}),
    ("replace_schedule", ("nightly", "0 9 * * *"), {"id": "{at}", "reason": "new"}, {"n": 1}),
    ("pause_schedule", ("nightly",), {"reason": "month end"}, {"paused": True}),
    ("resume_schedule", ("nightly",), {}, {"paused": False}),
    ("remove_schedule", ("nightly",), {}, {"name": "nightly"}),
    ("report", (7, "passed", {"passed": 12, "failed": 0}), {"attempt": 1}, TOKEN),
    ("inbox", (), {"state": "review", "limit": 3}, []),
    ("supervisors", (), {}, []),
    ("stats", (), {}, {"tokens": {"active": 1}, "states": {}}),
    ("workflow", (), {}, {"workflow": "orders"}),
    ("workflow", (), {"checksum": "sha256:99ab"}, {"workflow": "orders"}),
    ("versions", (), {}, [{"checksum": "sha256:99ab", "live": 2}]),
    ("migrate", ("T-1",), {"states": {"review": "checking"}, "key": "m-1"}, TOKEN),
    ("migrate", ("T-1", "sha256:77ef", None, {"title": "z"}), {"reason": "new form"}, TOKEN),
    (
        "bulk",
        ("migrate", {"state": "review"}),
        {"to": "sha256:77ef", "dry_run": True},
        {"matched": 0, "tokens": [], "refused": {}, "examples": {}},
    ),
]


def _seen(script: Script) -> list[tuple[str, str, Any, str | None, str | None]]:
    return [
        (
            r.method,
            r.path,
            json.loads(r.body) if r.body else None,
            r.headers.get("idempotency-key"),
            r.headers.get("authorization"),
        )
        for r in script.requests
    ]


def _public(cls: type) -> dict[str, Any]:
    return {name: getattr(cls, name) for name in dir(cls) if not name.startswith("_")}


def test_the_async_client_has_the_clients_methods_as_coroutines() -> None:
    mine, theirs = _public(AsyncClient), _public(Client)
    assert mine.keys() == theirs.keys()
    assert {call[0] for call in CALLS} | {"start_many", "close", "by", "every"} == set(theirs)
    # `every` walks pages: an async generator of the async listings (test_pages.py)
    assert inspect.isasyncgenfunction(mine.pop("every"))
    assert inspect.isgeneratorfunction(theirs["every"])
    for name, method in mine.items():
        assert inspect.signature(method) == inspect.signature(theirs[name]), name
        assert inspect.iscoroutinefunction(method) == (name != "by"), name
        assert not inspect.iscoroutinefunction(theirs[name])


async def test_each_method_sends_what_the_client_sends(server: tuple[str, Script]) -> None:
    url, script = server
    options: dict[str, Any] = {"auth_token": "s3cret", "actor": "alice"}
    for _ in range(2):
        for *_, answer in CALLS:
            script.answer(200, json.dumps(answer))
    with Client(url, **options) as sync:
        answers = [getattr(sync, name)(*args, **kwargs) for name, args, kwargs, _ in CALLS]
    sent, script.requests = _seen(script), []
    async with AsyncClient(url, **options) as client:
        for (name, args, kwargs, _), expected in zip(CALLS, answers, strict=True):
            assert await getattr(client, name)(*args, **kwargs) == expected
    assert _seen(script) == sent
    assert [answer for *_, answer in CALLS] == answers
    assert sent[0] == (
        "POST",
        "/tokens",
        {
            "token": "T-1",
            "context": {"title": "x"},
            "by": {"actor": "alice", "reason": "from a test", "via": "client"},
        },
        None,
        "Bearer s3cret",
    )
    assert sent[1][:2] == ("GET", "/tokens/a%2Fb%20c")
    by = {"actor": "alice", "via": "client"}
    schedules = [entry for entry in sent if "/schedules" in entry[1]]
    assert schedules == [
        ("POST", "/schedules", {"name": "nightly", "cron": "0 9 * * *", "tz": "Europe/Paris",
                                "paused": True, "by": by}, None, "Bearer s3cret"),
        ("GET", "/schedules", None, None, "Bearer s3cret"),
        ("GET", "/schedules/night%2Fly", None, None, "Bearer s3cret"),
        ("PUT", "/schedules/nightly", {"cron": "0 9 * * *", "id": "{at}",
                                       "by": {**by, "reason": "new"}}, None, "Bearer s3cret"),
        ("POST", "/schedules/nightly/pause", {"by": {**by, "reason": "month end"}}, None,
         "Bearer s3cret"),
        ("POST", "/schedules/nightly/resume", {"by": by}, None, "Bearer s3cret"),
        ("DELETE", "/schedules/nightly", {"by": by}, None, "Bearer s3cret"),
    ]  # fmt: skip
    assert sent[4][3] == "gh-delivery-81231"
    assert sent[-5:] == [
        ("GET", "/workflow?checksum=sha256%3A99ab", None, None, "Bearer s3cret"),
        ("GET", "/workflow/versions", None, None, "Bearer s3cret"),
        ("POST", "/tokens/T-1/migrate", {"states": {"review": "checking"}, "by": by}, "m-1",
         "Bearer s3cret"),
        ("POST", "/tokens/T-1/migrate",
         {"to": "sha256:77ef", "context": {"title": "z"}, "by": {**by, "reason": "new form"}},
         None, "Bearer s3cret"),
        ("POST", "/bulk", {"action": "migrate", "filter": {"state": "review"}, "dry_run": True,
                           "to": "sha256:77ef", "by": by}, None, "Bearer s3cret"),
    ]  # fmt: skip


REFUSALS = [
    (409, {"error": "token 'T-1' is cancelled; it takes no events", "code": "token_not_active"}),
    (404, {"error": "there is no token 'T-1'", "code": "token_not_found"}),
    (503, {"error": "the database is busy; try again", "code": "database_busy"}),
    (401, {"error": "a bearer token is required", "code": "unauthorized"}),
    (422, {"error": "the context breaks the schema", "code": "invalid_context"}),
]


@pytest.mark.parametrize(("status", "envelope"), REFUSALS, ids=[r[1]["code"] for r in REFUSALS])
async def test_every_refusal_is_rebuilt_from_its_code(
    server: tuple[str, Script], status: int, envelope: dict[str, str]
) -> None:
    url, script = server
    script.answer(status, json.dumps(envelope))
    script.answer(status, json.dumps(envelope))
    with Client(url) as sync, pytest.raises(Refused) as expected:
        sync.get("T-1")
    async with AsyncClient(url) as client:
        with pytest.raises(Refused) as caught:
            await client.get("T-1")
    error = caught.value
    assert type(error) is (NotFound if status == 404 else Refused)
    assert type(error) is type(expected.value)
    assert (error.status, error.message, error.code, error.url) == (
        status,
        envelope["error"],
        envelope["code"],
        url,
    )
    assert str(error) == str(expected.value)
    assert str(error) == f"the control plane at {url} refused ({status}): {envelope['error']}"


@pytest.mark.parametrize(
    ("status", "body", "content_type", "cls", "sentence"),
    [
        (502, "  <html>bad\n gateway</html>", "text/html", Refused, "refused (502): <html>bad"),
        (200, "<html>hello</html>", "text/html", ClientError, "answered 200 with something"),
        (200, '{"a": NaN}', "application/json", ClientError, "answered 200 with something"),
        (200, "[1]", "application/json", ClientError, "sent an answer of the wrong shape"),
    ],
    ids=["proxy", "not-json", "nan", "wrong-shape"],
)
async def test_answers_that_are_not_the_control_planes(
    server: tuple[str, Script],
    status: int,
    body: str,
    content_type: str,
    cls: type[ClientError],
    sentence: str,
) -> None:
    url, script = server
    script.answer(status, body, content_type)
    script.answer(status, body, content_type)
    with Client(url) as sync, pytest.raises(ClientError) as expected:
        sync.get("T-1")
    async with AsyncClient(url) as client:
        with pytest.raises(ClientError) as caught:
            await client.get("T-1")
    assert type(caught.value) is cls is type(expected.value)
    assert str(caught.value) == str(expected.value)
    assert str(caught.value).startswith(f"the control plane at {url} {sentence}")
    if isinstance(caught.value, Refused):
        assert (caught.value.code, caught.value.message) == (None, "<html>bad gateway</html>")


def _dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


async def test_nothing_listening_is_unreachable() -> None:
    url = _dead_url()
    async with AsyncClient(url, timeout=2) as client:
        with pytest.raises(Unreachable) as caught:
            await client.get("T-1")
    error = caught.value
    assert error.detail and "\n" not in str(error)
    assert str(error) == f"cannot reach the control plane at {url}: {error.detail}"


async def test_fail_over_when_the_first_url_is_down(server: tuple[str, Script]) -> None:
    url, script = server
    dead = _dead_url()
    script.answer(200, json.dumps(TOKEN))
    script.answer(200, json.dumps(TOKEN))
    async with AsyncClient(f"{dead}, {url}") as client:
        assert client.url == dead
        assert await client.get("T-1") == TOKEN
        assert client.url == url
        assert await client.get("T-1") == TOKEN
    assert [r.path for r in script.requests] == ["/tokens/T-1", "/tokens/T-1"]


async def test_fail_over_from_a_control_plane_that_serves_no_database(
    server: tuple[str, Script], second_server: tuple[str, Script]
) -> None:
    (first, refusing), (second, serving) = server, second_server
    refusing.answer(503, json.dumps(NOT_SERVING))
    serving.answer(200, json.dumps(TOKEN))
    async with AsyncClient([first, second]) as client:
        assert await client.fire("T-1", "done") == TOKEN
        assert client.url == second
    assert len(refusing.requests) == len(serving.requests) == 1
    # On the last URL, `not_serving` is the answer.
    serving.answer(503, json.dumps(NOT_SERVING))
    async with AsyncClient(second) as client:
        with pytest.raises(Refused) as caught:
            await client.get("T-1")
    assert (caught.value.status, caught.value.code) == (503, "not_serving")


async def test_a_request_that_may_have_been_applied_is_not_sent_again(
    server: tuple[str, Script], second_server: tuple[str, Script]
) -> None:
    (first, dropping), (second, serving) = server, second_server
    dropping.answer(0, "")  # read, then the connection closes without an answer
    serving.answer(200, json.dumps(TOKEN))
    async with AsyncClient([first, second]) as client:
        with pytest.raises(Unreachable) as caught:
            await client.fire("T-1", "done")
        assert str(caught.value).startswith(f"cannot reach the control plane at {first}: ")
        assert client.url == second  # the next call goes on to the next URL
        assert serving.requests == []
        assert await client.get("T-1") == TOKEN
    assert [r.path for r in dropping.requests] == ["/tokens/T-1/events/done"]


async def test_every_url_down_is_unreachable_and_starts_again_at_the_first() -> None:
    first, second = _dead_url(), _dead_url()
    async with AsyncClient([first, second], timeout=2) as client:
        with pytest.raises(Unreachable) as caught:
            await client.get("T-1")
        assert str(caught.value).startswith(f"cannot reach the control plane at {second}: ")
        assert client.url == first


async def test_start_many_falls_back_to_one_start_a_request(server: tuple[str, Script]) -> None:
    url, script = server
    script.answer(404, json.dumps({"error": "no such route", "code": "not_found"}))
    script.answer(201, json.dumps(TOKEN))
    script.answer(409, json.dumps({"error": "no", "code": "token_not_active", "extra": 1}))
    seen: list[list[dict[str, Any]]] = []
    async with AsyncClient(url) as client:
        answers = await client.start_many([("T-1", None), ("T-2", {"a": 1})], progress=seen.append)
    assert answers == [
        {"status": 201, "body": TOKEN},
        {"status": 409, "body": {"error": "no", "code": "token_not_active"}},
    ]
    assert seen == [answers]
    assert [(r.method, r.path, json.loads(r.body)) for r in script.requests] == [
        (
            "POST",
            "/tokens/batch",
            {"tokens": [{"token": "T-1", "context": {}}, {"token": "T-2", "context": {"a": 1}}]},
        ),
        ("POST", "/tokens", {"token": "T-1", "context": {}}),
        ("POST", "/tokens", {"token": "T-2", "context": {"a": 1}}),
    ]


async def test_start_many_in_batches(server: tuple[str, Script]) -> None:
    url, script = server
    script.answer(200, json.dumps({"answers": [{"status": 201, "body": TOKEN}] * 2}))
    script.answer(200, json.dumps({"answers": [{"status": 200, "body": TOKEN}]}))
    async with AsyncClient(url) as client:
        answers = await client.start_many([(f"T-{i}", None) for i in range(3)], batch_size=2)
        assert [a["status"] for a in answers] == [201, 201, 200]
        script.answer(200, json.dumps({"answers": []}))
        with pytest.raises(ClientError, match="wrong shape"):
            await client.start_many([("T-9", None)])
        with pytest.raises(ValueError, match="batch_size is 1 to 1000"):
            await client.start_many([("T-9", None)], batch_size=0)
    assert [len(json.loads(r.body)["tokens"]) for r in script.requests] == [2, 1, 1]
