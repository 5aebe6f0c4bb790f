"""`stateous token find KEY=VALUE ...` as a real process against a real
`stateous serve` whose graph searches by `customer` and `order_id`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.test_token_commands import stateous
from tests.support import serve_process, sqlite_url
from tests.support.graphs import SDLC, variant, write_graph

CUT = "(--limit N to see more)"


def searching() -> dict[str, Any]:
    """`sdlc` whose context has a customer and an order id to search by, written by hand as the
    compiler writes `flow.search("customer", "order_id")`."""
    doc = variant(SDLC)
    ticket = doc["schemas"]["Ticket"]
    ticket["properties"]["customer"] = {"type": "string"}
    ticket["properties"]["order_id"] = {"type": "integer"}
    doc["search"] = ["customer", "order_id"]
    return doc


STARTS = [
    ("O-1", {"repo": "a", "customer": "acme", "order_id": 4711}),
    ("O-2", {"repo": "b", "customer": "acme", "order_id": 4712}),
    ("O-3", {"repo": "c", "customer": "globex", "order_id": 4711}),
    ("O-4", {"repo": "d", "customer": "acme", "order_id": 4713}),
    ("O-5", {"repo": "e", "customer": "4711", "order_id": 1}),
]


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A control plane with O-1 … O-5 in coding, O-2 paused."""
    folder = tmp_path_factory.mktemp("find")
    graph = write_graph(folder, searching())
    with serve_process(graph, sqlite_url(folder), cwd=folder) as served:
        try:
            for token, context in STARTS:
                answer = httpx.post(
                    f"{served.url}/tokens", json={"token": token, "context": context}
                )
                assert answer.status_code == 201, answer.text
            assert httpx.post(f"{served.url}/tokens/O-2/pause", json={}).status_code == 200
            yield served.url
        finally:
            served.stop()
            for pipe in (served.process.stdout, served.process.stderr):
                if pipe is not None:
                    pipe.close()


def ok(*args: str, url: str) -> list[str]:
    """The stdout lines of a command that must succeed with nothing on stderr."""
    code, out, err = stateous(*args, url=url)
    assert (code, err) == (0, ""), (args, code, out, err)
    return out.splitlines()


def test_find_by_one_key_and_by_two(url: str) -> None:
    assert ok("token", "find", "customer=acme", url=url) == [
        "O-4: coding, active",
        "O-2: coding, paused",
        "O-1: coding, active",
    ]
    assert ok("token", "find", "customer=acme", "order_id=4711", url=url) == ["O-1: coding, active"]
    assert ok("token", "find", "order_id=4711", url=url) == [
        "O-3: coding, active",
        "O-1: coding, active",
    ]


def test_a_value_is_json_when_it_reads_as_json(url: str) -> None:
    # 4711 is the number; the text "4711" is written in JSON quotes.
    assert ok("token", "find", 'customer="4711"', url=url) == ["O-5: coding, active"]
    assert ok("token", "find", "customer=4711", url=url) == ["no tokens"]
    assert ok("token", "find", 'customer="acme"', "order_id=4712", url=url) == [
        "O-2: coding, paused"
    ]
    assert ok("token", "find", "customer=initech", url=url) == ["no tokens"]


def test_status_and_a_cut_page(url: str) -> None:
    assert ok("token", "find", "customer=acme", "--status", "paused", url=url) == [
        "O-2: coding, paused"
    ]
    found = ("token", "find", "customer=acme", "--status", "active", "--limit", "1")
    code, out, err = stateous(*found, url=url)
    assert (code, out.splitlines()) == (0, ["O-4: coding, active", f"… and 1 more {CUT}"])
    assert err.startswith("next page: --after "), err
    after = err.removeprefix("next page: --after ").strip()
    assert ok(*found, "--after", after, url=url) == ["O-1: coding, active"]
    assert ok("token", "find", "customer=acme", "--limit", "3", url=url)[-1] == (
        "O-1: coding, active"
    )


def test_a_key_that_is_not_searchable_is_one_error_line(url: str) -> None:
    code, out, err = stateous("token", "find", "repo=a", url=url)
    assert (code, out) == (1, "")
    assert err.startswith(f"error: the control plane at {url} refused (422): "), err
    assert "'repo'" in err and "customer, order_id" in err, err
    assert err.count("\n") == 1, err


def test_mistakes_of_the_command_line(url: str, tmp_path: Path) -> None:
    code, out, err = stateous("token", "find", url=url)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == "Error: Missing argument 'KEY=VALUE...'."
    code, out, err = stateous("token", "find", "acme", url=url)
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        "Error: Invalid value for 'KEY=VALUE...': 'acme' is not KEY=VALUE, such as customer=acme"
    )
