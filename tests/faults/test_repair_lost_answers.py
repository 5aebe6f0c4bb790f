"""Retry and move whose answers are lost: the caller cannot tell whether they applied.

Every answer through the proxy is cut in half. A retry sent again after a lost answer applies
once (the second is refused: the token is active by then); a move's lost answer leaves exactly
one `moved` row, and the token where the move put it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.faults.proxy import ChaosProxy
from tests.support.app import RunningApi, running_api
from tests.support.graphs import SDLC


@pytest.fixture
def api(migrated_db_url: str) -> Iterator[RunningApi]:
    with running_api(migrated_db_url, SDLC, migrate_first=False) as running:
        yield running


@pytest.fixture
def cutting(api: RunningApi) -> Iterator[str]:
    """The URL of a proxy that cuts every answer in the middle."""
    port = int(api.url.rsplit(":", 1)[1])
    proxy = ChaosProxy(upstream=port, drop=0.0, delay=0.0, cut=1.0, every=10**9)
    proxy.start()
    yield f"http://127.0.0.1:{proxy.port}"
    proxy.close()


def kinds(http: httpx.Client, token: str) -> list[str]:
    return [entry["kind"] for entry in http.get(f"/tokens/{token}/history").json()]


def lost(url: str, path: str, body: dict[str, Any]) -> None:
    """Send a request whose answer never arrives whole."""
    with pytest.raises(httpx.HTTPError):
        httpx.post(f"{url}{path}", json=body, timeout=10).json()


def test_a_retry_whose_answer_was_lost_applies_once(api: RunningApi, cutting: str) -> None:
    with httpx.Client(base_url=api.url, timeout=30) as http:
        http.post("/tokens", json={"token": "T", "context": {"repo": "acme/api"}})
        for _ in range(3):
            grant = http.post("/tasks/claim", json={"supervisor": "box", "states": ["coding"]})
            body = {"kind": "failed", "error": "the vendor is down", "supervisor": "box"}
            http.post(f"/tasks/{grant.json()['task']}/report", json=body)
        lost(cutting, "/tokens/T/retry", {})
        again = http.post("/tokens/T/retry", json={})
        assert (again.status_code, again.json()["code"]) == (409, "token_not_failed")
        assert kinds(http, "T").count("retried") == 1
        assert http.get("/tokens/T").json()["visit"] == 2


def test_a_move_whose_answer_was_lost_applied_once(api: RunningApi, cutting: str) -> None:
    with httpx.Client(base_url=api.url, timeout=30) as http:
        http.post("/tokens", json={"token": "T", "context": {"repo": "acme/api"}})
        lost(cutting, "/tokens/T/move", {"to": "testing"})
        token = http.get("/tokens/T").json()
        assert (token["state"], token["visit"]) == ("testing", 1)
        assert kinds(http, "T").count("moved") == 1
