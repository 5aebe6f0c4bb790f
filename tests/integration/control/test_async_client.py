"""`AsyncClient` against a real `serve`: the orders flow, its refusals rebuilt as `Client` rebuilds
them, and fail-over from a URL where nothing listens."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from stateous.client import AsyncClient, Client, NotFound, Refused, Unreachable
from tests.support import ServeProcess, serve_process, sqlite_url
from tests.support.graphs import ORDERS, write_graph


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServeProcess]:
    """One `serve` of the orders workflow on SQLite for the module."""
    folder = tmp_path_factory.mktemp("async-client")
    with serve_process(write_graph(folder, ORDERS), sqlite_url(folder)) as running:
        yield running


def _dead_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


async def test_a_token_from_start_to_its_end(served: ServeProcess) -> None:
    async with AsyncClient(served.url, actor="alice") as client:
        started = await client.start("A-1", {"title": "first"}, reason="a test")
        assert (started["token"], started["state"], started["status"]) == ("A-1", "draft", "active")
        assert await client.start("A-1", {"title": "again"}) == started  # unchanged
        moved = await client.fire("A-1", "submitted", key="delivery-1")
        assert moved["state"] == "review"
        again = await client.fire("A-1", "submitted", key="delivery-1")
        assert again == {"duplicate": True, "token": moved}
        assert (await client.pause("A-1"))["status"] == "paused"
        assert (await client.resume("A-1"))["status"] == "active"
        done = await client.fire("A-1", "reviewed", {"approved": True})
        assert done["status"] == "completed"
        assert await client.get("A-1") == done
        kinds = [entry["kind"] for entry in await client.history("A-1")]
        assert kinds[0] == "started" and kinds.count("event_accepted") == 3
        assert "A-1" in [t["token"] for t in await client.tokens(limit=1000)]
        assert (await client.workflow())["workflow"] == "orders"
        assert (await client.why("A-1"))["token"]["token"] == "A-1"
        audit = await client.audit(actor="alice")
        assert {entry["token"] for entry in audit} == {"A-1"}
        assert await client.supervisors() == []
        assert await client.inbox() == []
        preview = await client.bulk("pause", {"state": ["draft"]}, dry_run=True)
        assert preview == {"matched": 0, "tokens": []}, preview


async def test_refusals_are_rebuilt_as_the_client_rebuilds_them(served: ServeProcess) -> None:
    async with AsyncClient(served.url) as client:
        await client.start("A-2", {"title": "second"})
        await client.cancel("A-2")
        with pytest.raises(NotFound) as missing:
            await client.get("NOPE")
        with pytest.raises(Refused) as over:
            await client.fire("A-2", "submitted")
        with pytest.raises(Refused) as invalid:
            await client.start("A-3", {"title": 7})
    with Client(served.url) as sync:
        with pytest.raises(NotFound) as sync_missing:
            sync.get("NOPE")
        with pytest.raises(Refused) as sync_over:
            sync.fire("A-2", "submitted")
        with pytest.raises(Refused) as sync_invalid:
            sync.start("A-3", {"title": 7})
    assert (missing.value.status, missing.value.code) == (404, "token_not_found")
    assert (over.value.status, over.value.code) == (409, "token_not_active")
    assert (invalid.value.status, invalid.value.code) == (422, "invalid_context")
    for mine, theirs in [(missing, sync_missing), (over, sync_over), (invalid, sync_invalid)]:
        assert type(mine.value) is type(theirs.value)
        assert str(mine.value) == str(theirs.value)
        assert mine.value.code == theirs.value.code


async def test_fail_over_from_a_url_where_nothing_listens(served: ServeProcess) -> None:
    dead = _dead_url()
    async with AsyncClient([dead, served.url]) as client:
        assert (await client.start("A-4", {"title": "fourth"}))["token"] == "A-4"
        assert client.url == served.url
    async with AsyncClient(dead, timeout=5) as client:
        with pytest.raises(Unreachable) as caught:
            await client.get("A-4")
    assert str(caught.value).startswith(f"cannot reach the control plane at {dead}: ")


async def test_many_starts_in_one_request(served: ServeProcess, tmp_path: Path) -> None:
    async with AsyncClient(served.url) as client:
        answers = await client.start_many([(f"M-{i}", {"title": str(i)}) for i in range(5)])
        assert [a["status"] for a in answers] == [201] * 5
        again = await client.start_many([("M-0", {"title": "0"}), ("M-5", {"title": 5})])
    assert [a["status"] for a in again] == [200, 422]
    assert again[1]["body"]["code"] == "invalid_context"
