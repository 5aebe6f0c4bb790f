"""Supervisors of two versions side by side, as real processes on each backend.

`serve` the orders graph (A) and start two tokens; stop; `serve` a changed structure (B, an added
event) and start two more. A folder of each version (`init supervisor --checksum A` for the old
one) runs beside the other: each gets only its own version's tasks and every token completes. A
claim without a checksum (the published supervisor) gets only the current version's tasks; one
with a checksum never served is refused; a folder of a version never served does not start.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx

from stateous.model.graph import Graph, load_graph
from tests.integration.supervisor.procs import entries, wait_until
from tests.support import ROOT, Supervise, serve_process, start_supervise
from tests.support.graphs import ORDERS, graph_text, variant, write_graph

CTX = {"title": "an order"}
NEVER = "sha256:" + "0" * 64
#: The routines of both versions' folders: `draft` submits, `review` approves.
DRAFT = """
from stateous import on_state

from contract import ItemContext, events, states


@on_state(states.draft)
def draft(ctx: ItemContext) -> events.submitted:
    return events.submitted()
"""
REVIEW = """
from stateous import on_state

from contract import ItemContext, Verdict, events, states


@on_state(states.review)
def review(ctx: ItemContext) -> events.reviewed:
    return events.reviewed(Verdict(approved=True))
"""


def _changed(event: str) -> dict[str, Any]:
    """ORDERS with one more event out of `draft`: another structure."""
    doc = variant(ORDERS)
    doc["states"]["draft"]["emits"] = ["submitted", event]
    doc["events"][event] = {}
    doc["transitions"].append({"from": "draft", "to": "__end__", "on": event})
    return doc


OLD: Graph = load_graph(graph_text(ORDERS))
NEW_DOC = _changed("withdrawn")
NEW: Graph = load_graph(graph_text(NEW_DOC))
UNSERVED_DOC = _changed("held")


def stateous(*args: str) -> subprocess.CompletedProcess[str]:
    """`stateous ARGS` to its end, with this checkout on PYTHONPATH."""
    return subprocess.run(
        [sys.executable, "-m", "stateous", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
        check=False,
    )


def folder_for(url: str, folder: Path, name: str, *extra: str) -> Path:
    """`init supervisor URL FOLDER EXTRA...`, the routines written, named `name`."""
    done = stateous("init", "supervisor", url, str(folder), *extra)
    assert done.returncode == 0, done.stderr
    (folder / "draft.py").write_text(DRAFT, encoding="utf-8")
    (folder / "review.py").write_text(REVIEW, encoding="utf-8")
    (folder / "stateous.yaml").write_text(f"url: {url}\nname: {name}\n", encoding="utf-8")
    return folder


def start_tokens(url: str, *tokens: str) -> None:
    for token in tokens:
        answer = httpx.post(f"{url}/tokens", json={"token": token, "context": CTX}, timeout=30)
        assert answer.status_code == 201, answer.text


def claimed_by(url: str, token: str) -> list[str]:
    """Who claimed each task of the token, in order."""
    found = httpx.get(f"{url}/tokens/{token}/history", timeout=30).json()
    return [e["data"]["supervisor"] for e in found if e["kind"] == "task_claimed"]


def status(url: str, token: str) -> str:
    return str(httpx.get(f"{url}/tokens/{token}", timeout=30).json()["status"])


def first_finding(url: str, token: str) -> dict[str, Any]:
    found: dict[str, Any] = httpx.get(f"{url}/tokens/{token}/why", timeout=30).json()
    return dict(found["findings"][0])


def claim(url: str, **extra: Any) -> httpx.Response:
    """A claim of `draft` by `raw-box`, as a supervisor of before versions sends it."""
    body = {"supervisor": "raw-box", "states": ["draft"], "request": uuid.uuid4().hex, "max": 10}
    return httpx.post(f"{url}/tasks/claim", json={**body, **extra}, timeout=30)


def no_supervisor(task: int, graph: Graph) -> str:
    return (
        f"task {task} is queued for 'draft', and no live supervisor of version "
        f"{graph.checksum[7:15]} serves 'draft'; start one with 'draft' in its folder"
    )


def test_supervisors_of_two_versions_each_run_their_own_tokens(tmp_path: Path, db_url: str) -> None:
    graph = write_graph(tmp_path, ORDERS)
    with serve_process(graph, db_url, cwd=tmp_path) as served:
        start_tokens(served.url, "OLD-1", "OLD-2")
    write_graph(tmp_path, NEW_DOC)
    with serve_process(graph, db_url, cwd=tmp_path) as served:
        url = served.url
        start_tokens(url, "NEW-1", "NEW-2", "NEW-3")
        versions = httpx.get(f"{url}/workflow/versions", timeout=30).json()
        assert [(v["checksum"], v["current"], v["live"]) for v in versions] == [
            (NEW.checksum, True, 3),
            (OLD.checksum, False, 2),
        ]
        # why names each token's version while no supervisor runs.
        assert first_finding(url, "OLD-1")["sentence"] == no_supervisor(1, OLD)
        assert first_finding(url, "NEW-1")["sentence"] == no_supervisor(3, NEW)
        _claims_without_and_with_an_unknown_checksum(url)
        _refusals(url, tmp_path)
        old = start_supervise(
            folder_for(url, tmp_path / "old", "old-box", "--checksum", OLD.checksum)
        )
        new = start_supervise(folder_for(url, tmp_path / "new", "new-box"))
        try:
            _run_side_by_side(url, old, new)
        finally:
            assert old.stop() == 0
            assert new.stop() == 0


def _claims_without_and_with_an_unknown_checksum(url: str) -> None:
    """The published supervisor's claim gets the current version's tasks only (the NEW
    tokens' drafts); it reports them, so that their reviews are the new supervisor's."""
    answer = claim(url)
    assert answer.status_code == 200, answer.text
    grants = answer.json()["grants"]
    assert [(g["token"], g["task"]) for g in grants] == [("NEW-1", 3), ("NEW-2", 4), ("NEW-3", 5)]
    for grant in grants:
        report = {"kind": "event", "event": "submitted", "attempt": 1, "supervisor": "raw-box"}
        done = httpx.post(f"{url}/tasks/{grant['task']}/report", json=report, timeout=30)
        assert (done.status_code, done.json()["state"]) == (200, "review")
    assert claim(url).status_code == 204  # OLD-1 and OLD-2's drafts are not for it
    refused = claim(url, checksum=NEVER)
    assert (refused.status_code, refused.json()) == (
        422,
        {"error": f"'checksum' {NEVER!r} is not a version on record", "code": "invalid_argument"},
    )


def _refusals(url: str, tmp_path: Path) -> None:
    """`init supervisor --checksum` of a version never served, and a folder of one: refused."""
    done = stateous("init", "supervisor", url, str(tmp_path / "nope"), "--checksum", NEVER)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        f"error: {url} never served the version {NEVER}: `stateous versions --url {url}` lists "
        "the versions on record\n",
    )
    assert not (tmp_path / "nope").exists()
    unserved = write_graph(tmp_path, UNSERVED_DOC, "unserved.json")
    folder = folder_for(str(unserved), tmp_path / "unserved", "stray-box")
    (folder / "stateous.yaml").write_text(f"url: {url}\nname: stray-box\n", encoding="utf-8")
    started = stateous("supervise", str(folder))
    checksum = load_graph(graph_text(UNSERVED_DOC)).checksum
    where = folder.resolve()
    assert started.returncode == 1
    assert started.stderr.splitlines()[-1] == (
        f"error: {where}/contract.py is for another version of the workflow ({checksum}; the "
        f"control plane serves {NEW.checksum}): run `stateous init supervisor {url} {where}` "
        "again"
    )


def _run_side_by_side(url: str, old: Supervise, new: Supervise) -> None:
    old.wait_for("old-box serves draft, review")
    new.wait_for("new-box serves draft, review")
    assert (
        f"this supervisor serves an older version (sha256:{OLD.checksum[7:15]}…); new tokens "
        f"start on sha256:{NEW.checksum[7:15]}…; it runs the 2 live token(s) of its version"
    ) in old.messages()
    assert not any("older version" in m for m in new.messages())
    tokens = ("OLD-1", "OLD-2", "NEW-1", "NEW-2", "NEW-3")
    wait_until(
        lambda: all(status(url, t) == "completed" for t in tokens), timeout=60, what="all done"
    )
    assert {t: claimed_by(url, t) for t in tokens} == {
        "OLD-1": ["old-box", "old-box"],
        "OLD-2": ["old-box", "old-box"],
        "NEW-1": ["raw-box", "new-box"],
        "NEW-2": ["raw-box", "new-box"],
        "NEW-3": ["raw-box", "new-box"],
    }
    versions = httpx.get(f"{url}/workflow/versions", timeout=30).json()
    assert [v["live"] for v in versions] == [0, 0]
    wait_until(
        lambda: {e["supervisor"] for e in entries(url)} >= {"old-box", "new-box"},
        timeout=10,
        what="both beats",
    )
    assert {e["supervisor"]: e["checksum"] for e in entries(url)} == {
        "old-box": OLD.checksum,
        "new-box": NEW.checksum,
    }
