"""`Client.retry`, `Client.move` and `Client.why`: the exact requests they send."""

from __future__ import annotations

import json

from stateous.client import Client
from tests.unit.client.conftest import Script

TOKEN = {"token": "T/1", "state": "coding", "status": "active", "visit": 2, "context": {}}
WHY = {"token": TOKEN, "findings": [{"code": "claimed", "sentence": "'box' works on task 2"}]}


def test_retry_move_and_why_send_one_request_each(server: tuple[str, Script]) -> None:
    url, script = server
    for _ in range(4):
        script.answer(200, json.dumps(TOKEN))
    script.answer(200, json.dumps(WHY))
    with Client(url) as c:
        assert c.retry("T/1") == TOKEN
        c.move("T/1", "testing")
        c.move("T/1", "coding", {"repo": "acme/web"})
        c.move("T/1", "coding", reason="coding was done by hand")
        assert c.why("T/1") == WHY
    seen = [(r.method, r.path, r.body) for r in script.requests]
    assert seen[:3] == [
        ("POST", "/tokens/T%2F1/retry", b"{}"),
        ("POST", "/tokens/T%2F1/move", b'{"to":"testing"}'),
        ("POST", "/tokens/T%2F1/move", b'{"to":"coding","context":{"repo":"acme/web"}}'),
    ]
    body = json.loads(script.requests[3].body)
    assert body["to"] == "coding"
    assert body["by"]["reason"] == "coding was done by hand"
    assert body["by"]["via"] == "client"
    assert seen[4] == ("GET", "/tokens/T%2F1/why", b"")


def test_an_actor_goes_with_retry(server: tuple[str, Script]) -> None:
    url, script = server
    script.answer(200, json.dumps(TOKEN))
    with Client(url, actor="alice") as c:
        c.retry("T/1", reason="the vendor is back")
    assert json.loads(script.requests[0].body) == {
        "by": {"actor": "alice", "reason": "the vendor is back", "via": "client"}
    }
