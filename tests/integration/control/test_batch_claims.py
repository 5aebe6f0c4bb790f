"""`max` on `POST /tasks/claim` over a real socket, on SQLite and Postgres:
several grants in one operation, their rows, every refusal, and the replay of a lost answer."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from stateous.control.clock import FakeClock, iso
from tests.support.app import RunningApi, running_api
from tests.support.graphs import ORDERS

BOX = "box-1"
LEASE = 120


@pytest.fixture
def served(migrated_db_url: str, clock: FakeClock) -> Iterator[RunningApi]:
    """The orders starter on a fake clock."""
    with running_api(migrated_db_url, ORDERS, clock, migrate_first=False) as running:
        yield running


@pytest.fixture
def client(served: RunningApi) -> Iterator[httpx.Client]:
    """A client of the served app."""
    with httpx.Client(base_url=served.url, timeout=30) as http:
        yield http


def start_orders(http: httpx.Client, count: int) -> None:
    """Start O-1 … O-<count>: task i is O-i's `draft`."""
    for number in range(1, count + 1):
        answer = http.post("/tokens", json={"token": f"O-{number}", "context": {"title": "t"}})
        assert answer.status_code == 201


def claim(http: httpx.Client, **body: Any) -> httpx.Response:
    """`POST /tasks/claim` for BOX on both states of orders, with `body`'s fields on top."""
    return http.post(
        "/tasks/claim", json={"supervisor": BOX, "states": ["draft", "review"], **body}
    )


def rows(served: RunningApi, query: str) -> list[tuple[Any, ...]]:
    """Rows of a query on the served database."""
    with served.plane.store.engine.connect() as conn:
        return [tuple(row) for row in conn.execute(text(query))]


def tasks(served: RunningApi) -> list[tuple[Any, ...]]:
    """(id, status, attempt, claimed_by, lease_until as text) of every task."""
    found = rows(
        served, "SELECT id, status, attempt, claimed_by, lease_until FROM tasks ORDER BY id"
    )
    return [(i, s, a, c, None if u is None else iso(_time(u))) for i, s, a, c, u in found]


def _time(value: Any) -> Any:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def claimed_rows(http: httpx.Client, token: str) -> list[dict[str, Any]]:
    """The `task_claimed` rows of a token's history."""
    return [e for e in http.get(f"/tokens/{token}/history").json() if e["kind"] == "task_claimed"]


def grant_of(task: int, token: str, attempt: int = 1) -> dict[str, Any]:
    """The grant of an orders `draft` task."""
    return {
        "task": task,
        "token": token,
        "state": "draft",
        "visit": 1,
        "attempt": attempt,
        "context": {"title": "t", "verdict": None},
        "memory": {},
        "entered_by": {"name": "__started__"},
    }


def test_a_claim_with_max_grants_the_oldest_tasks_each_with_its_row_and_lease(
    served: RunningApi, client: httpx.Client, clock: FakeClock
) -> None:
    start_orders(client, 5)
    answer = claim(client, max=3, request="r1")
    assert answer.status_code == 200
    assert answer.json() == {"grants": [grant_of(1, "O-1"), grant_of(2, "O-2"), grant_of(3, "O-3")]}
    until = iso(clock.now() + timedelta(seconds=LEASE))
    assert tasks(served) == [
        (1, "claimed", 1, BOX, until),
        (2, "claimed", 1, BOX, until),
        (3, "claimed", 1, BOX, until),
        (4, "queued", 0, None, None),
        (5, "queued", 0, None, None),
    ]
    at = iso(clock.now())
    for number in (1, 2, 3):
        assert claimed_rows(client, f"O-{number}") == [
            {
                "seq": 5,
                "at": at,
                "kind": "task_claimed",
                "data": {"task": number, "supervisor": BOX, "attempt": 1},
            }
        ]
    # The `claims` row holds the first grant; claim_grants the others, in order.
    assert rows(served, "SELECT supervisor, request, task_id, attempt FROM claims") == [
        (BOX, "r1", 1, 1)
    ]
    assert rows(served, "SELECT * FROM claim_grants ORDER BY position") == [
        (BOX, 2, 2, 1),
        (BOX, 3, 3, 1),
    ]


def test_max_takes_what_is_queued_and_204_when_nothing_is(
    served: RunningApi, client: httpx.Client
) -> None:
    start_orders(client, 2)
    answer = claim(client, max=64, request="r1")
    assert [g["task"] for g in answer.json()["grants"]] == [1, 2]
    empty = claim(client, max=64, request="r2")
    assert (empty.status_code, empty.content) == (204, b"")
    assert rows(served, "SELECT supervisor, request, task_id, attempt FROM claims") == [
        (BOX, "r2", None, None)
    ]
    assert rows(served, "SELECT * FROM claim_grants") == []
    # Without a request id nothing is kept; with no states and no request: 204 at once.
    assert claim(client, max=2).status_code == 204
    nothing = client.post("/tasks/claim", json={"supervisor": BOX, "states": [], "max": 2})
    assert nothing.status_code == 204


def test_max_with_wait_ends_with_204(client: httpx.Client) -> None:
    answer = claim(client, max=4, wait=0.3, request="r1")
    assert (answer.status_code, answer.content) == (204, b"")


@pytest.mark.parametrize("most", [0, 65, -1, 2.5, "3", True, [], {}])
def test_a_max_that_is_not_1_to_64_is_invalid_body(
    served: RunningApi, client: httpx.Client, most: Any
) -> None:
    start_orders(client, 1)
    answer = claim(client, max=most, request="r1")
    assert answer.status_code == 422
    assert answer.json() == {
        "error": "'max' is a whole number from 1 to 64",
        "code": "invalid_body",
    }
    assert tasks(served)[0][1] == "queued"
    assert rows(served, "SELECT * FROM claims") == []


def test_a_null_max_is_a_claim_of_spec_20(client: httpx.Client) -> None:
    start_orders(client, 2)
    answer = claim(client, max=None, request="r1")
    assert answer.json() == grant_of(1, "O-1")


def test_the_other_refusals_of_a_claim_come_first(client: httpx.Client) -> None:
    answer = client.post("/tasks/claim", json={"supervisor": "", "states": ["draft"], "max": 0})
    assert (answer.status_code, answer.json()["code"]) == (422, "invalid_argument")
    answer = client.post("/tasks/claim", json={"supervisor": BOX, "states": "draft", "max": 2})
    assert (answer.status_code, answer.json()["code"]) == (422, "invalid_body")


def test_a_repeated_request_id_answers_the_same_grants_with_leases_renewed(
    served: RunningApi, client: httpx.Client, clock: FakeClock
) -> None:
    start_orders(client, 4)
    first = claim(client, max=3, request="r1")
    assert first.status_code == 200
    clock.advance(60)  # the answer was lost; the supervisor sends the same request again
    again = claim(client, max=3, request="r1")
    assert again.json() == first.json()
    until = iso(clock.now() + timedelta(seconds=LEASE))
    assert [t[4] for t in tasks(served)[:3]] == [until, until, until]
    assert tasks(served)[3][1] == "queued"  # never a new task
    assert [len(claimed_rows(client, f"O-{n}")) for n in (1, 2, 3, 4)] == [1, 1, 1, 0]
    # Also with no states: the repeat needs none.
    bare = client.post(
        "/tasks/claim", json={"supervisor": BOX, "states": [], "request": "r1", "max": 3}
    )
    assert bare.json() == first.json()


def test_a_replay_leaves_out_the_tasks_no_longer_held(
    served: RunningApi, client: httpx.Client, clock: FakeClock
) -> None:
    start_orders(client, 4)
    first = claim(client, max=3, request="r1").json()["grants"]
    done = client.post(
        "/tasks/2/report", json={"kind": "event", "event": "submitted", "attempt": 1}
    )
    assert done.status_code == 200
    again = claim(client, max=3, request="r1")
    assert again.json() == {"grants": [first[0], first[2]]}
    # Once every lease has ended, nothing of that claim is held: the same id claims anew
    # (as a single claim's id does), oldest first: O-4's draft, then O-2's review.
    # (No clock runs here, so tasks 1 and 3 stay claimed with ended leases.)
    clock.advance(LEASE + 1)
    later = claim(client, max=3, request="r1").json()["grants"]
    assert [(g["task"], g["token"], g["state"], g["attempt"]) for g in later] == [
        (4, "O-4", "draft", 1),
        (5, "O-2", "review", 1),
    ]


def test_a_replay_after_an_ended_lease_is_a_new_claim(
    served: RunningApi, client: httpx.Client, clock: FakeClock
) -> None:
    start_orders(client, 3)
    claim(client, max=2, request="r1")
    clock.advance(LEASE + 1)  # the leases ended; the clock would retry them, but has not yet
    again = claim(client, max=2, request="r1")
    assert [(g["task"], g["attempt"]) for g in again.json()["grants"]] == [(3, 1)]
    assert rows(served, "SELECT supervisor, request, task_id, attempt FROM claims") == [
        (BOX, "r1", 3, 1)
    ]
    assert rows(served, "SELECT * FROM claim_grants") == []


def test_a_new_request_id_claims_new_tasks_and_a_single_claim_clears_the_grants(
    served: RunningApi, client: httpx.Client
) -> None:
    start_orders(client, 5)
    claim(client, max=2, request="r1")
    second = claim(client, max=2, request="r2")
    assert [g["task"] for g in second.json()["grants"]] == [3, 4]
    assert rows(served, "SELECT * FROM claim_grants") == [(BOX, 2, 4, 1)]
    single = claim(client, request="r3")
    assert single.json() == grant_of(5, "O-5")
    assert rows(served, "SELECT supervisor, request, task_id, attempt FROM claims") == [
        (BOX, "r3", 5, 1)
    ]
    assert rows(served, "SELECT * FROM claim_grants") == []
    # A single claim repeating the id of a claim with max answers its first grant.
    claim(client, max=2, request="r4")
    assert claim(client, request="r2").status_code == 204


def test_a_paused_token_s_task_is_not_granted(client: httpx.Client) -> None:
    start_orders(client, 3)
    assert client.post("/tokens/O-2/pause").status_code == 200
    answer = claim(client, max=3, request="r1")
    assert [g["token"] for g in answer.json()["grants"]] == ["O-1", "O-3"]


def test_concurrent_claims_with_max_never_share_a_task(
    served: RunningApi, client: httpx.Client
) -> None:
    start_orders(client, 40)
    answers: list[list[int]] = []
    lock = threading.Lock()

    def take(name: str) -> None:
        with httpx.Client(base_url=served.url, timeout=30) as http:
            while True:
                answer = http.post(
                    "/tasks/claim",
                    json={
                        "supervisor": name,
                        "states": ["draft"],
                        "max": 7,
                        "request": f"{name}-{len(answers)}",
                    },
                )
                if answer.status_code == 204:
                    return
                with lock:
                    answers.append([g["task"] for g in answer.json()["grants"]])

    threads = [threading.Thread(target=take, args=(f"box-{n}",)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    taken = sorted(task for grants in answers for task in grants)
    assert taken == list(range(1, 41))
    claimed = rows(served, "SELECT count(*) FROM ledger WHERE kind = 'task_claimed'")
    assert claimed == [(40,)]


def test_a_claim_whose_answer_is_lost_on_a_closed_connection_is_replayed(
    served: RunningApi, client: httpx.Client
) -> None:
    start_orders(client, 4)
    body = json.dumps(
        {"supervisor": BOX, "states": ["draft"], "max": 3, "request": "lost-1"}
    ).encode()
    host, port = served.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as raw:
        raw.sendall(
            b"POST /tasks/claim HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
            + f"content-length: {len(body)}\r\n\r\n".encode()
            + body
        )
        raw.shutdown(socket.SHUT_WR)  # the supervisor goes away before reading the answer
    deadline = time.monotonic() + 10
    while rows(served, "SELECT request FROM claims") != [("lost-1",)]:
        assert time.monotonic() < deadline, "the claim was not applied"
        time.sleep(0.05)
    again = claim(client, max=3, request="lost-1")
    assert [(g["task"], g["attempt"]) for g in again.json()["grants"]] == [(1, 1), (2, 1), (3, 1)]
    assert rows(served, "SELECT count(*) FROM ledger WHERE kind = 'task_claimed'") == [(3,)]
    assert tasks(served)[3][1] == "queued"
