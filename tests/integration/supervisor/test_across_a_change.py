"""A supervisor that keeps running while its control plane changes under it, as real processes.

One `stateous supervise` of the orders graph (A) runs through four control planes on one port:
A on a first database; then a changed structure (B) on a new database, which has never served A
and refuses its claims; then A on that database; then B again, with one token of A still live.
Its log says each thing once, at the pace of the retries (1, 2, 4 seconds here): the refusal
of a version not on record with what to do, that the control plane answers again, and that it
now serves an older version, as a supervisor started beside a newer one says at its start.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import httpx

from stateous.model.graph import load_graph
from tests.integration.supervisor.procs import wait_until
from tests.integration.supervisor.test_versions_side_by_side import (
    DRAFT,
    NEW_DOC,
    stateous,
)
from tests.support import Supervise, free_port, serve_process, sqlite_url, start_supervise
from tests.support.graphs import ORDERS, graph_text, write_graph

OLD = load_graph(graph_text(ORDERS)).checksum
NEW = load_graph(graph_text(NEW_DOC)).checksum
#: The retries of this test: 1, 2, 4, 4... seconds; the version looked at every 0.3 s.
TIMINGS = {"STATEOUS_SUPERVISOR_MAX_RETRY": "4", "STATEOUS_SUPERVISOR_BEAT": "0.3"}
ANSWERS_AGAIN = "the control plane at {url} answers again"


def _folder(tmp_path: Path, url: str) -> Path:
    """A folder of version A that runs `draft` only: its tokens wait, live, in `review`."""
    folder = tmp_path / "orders-supervisor"
    done = stateous("init", "supervisor", str(tmp_path / "orders.json"), str(folder))
    assert done.returncode == 0, done.stderr
    (folder / "review.py").unlink()
    (folder / "draft.py").write_text(DRAFT, encoding="utf-8")
    (folder / "stateous.yaml").write_text(f"url: {url}\nname: old-box\n", encoding="utf-8")
    return folder


def _since(running: Supervise, mark: int) -> list[str]:
    """The supervisor's messages after the first `mark` ones."""
    return running.messages()[mark:]


def _refusals(messages: list[str]) -> list[str]:
    return [m for m in messages if m.startswith("the control plane refused a claim")]


def test_a_supervisor_through_a_plane_without_its_version_and_a_new_version(
    tmp_path: Path,
) -> None:
    a_file = write_graph(tmp_path, ORDERS)
    b_file = write_graph(tmp_path, NEW_DOC, "changed.json")
    listen = f"127.0.0.1:{free_port()}"
    url = f"http://{listen}"
    first_db, second_db = sqlite_url(tmp_path, "first.db"), sqlite_url(tmp_path, "second.db")
    with serve_process(a_file, first_db, cwd=tmp_path, listen=listen):
        folder = _folder(tmp_path, url)
        running = start_supervise(folder, env=TIMINGS)
        running.wait_for("^old-box serves draft; the control plane is ")
    try:
        mark = len(running.messages())
        with serve_process(b_file, second_db, cwd=tmp_path, listen=listen):
            _refused_at_the_pace_of_the_retries(running, mark, url, folder.resolve())
        mark = len(running.messages())
        with serve_process(a_file, second_db, cwd=tmp_path, listen=listen):
            running.wait_for(f"^{ANSWERS_AGAIN.format(url=url)}$")
            answer = httpx.post(f"{url}/tokens", json={"token": "OLD-1", "context": {"title": "t"}})
            assert answer.status_code == 201, answer.text
            wait_until(lambda: _state(url, "OLD-1") == "review", timeout=30, what="review")
            assert _since(running, mark).count(ANSWERS_AGAIN.format(url=url)) == 1
            assert _refusals(_since(running, mark)) == []
            mark = len(running.messages())
        with serve_process(b_file, second_db, cwd=tmp_path, listen=listen):
            _told_once_of_the_newer_version(running, mark, url)
    finally:
        assert running.stop() == 0


def _refused_at_the_pace_of_the_retries(
    running: Supervise, mark: int, url: str, folder: Path
) -> None:
    """The claims of a version not on record: one line a retry (1, 2, then 4 s), saying what to
    do; before them, once, that the control plane answers again."""
    running.wait_for(r"; trying again in 4s$", timeout=30)
    time.sleep(2.0)  # the next refusal comes 4 s after the third: none in these 2 s
    messages = _since(running, mark)
    refusal = (
        f"the control plane refused a claim: 'checksum' '{OLD}' is not a version on record "
        "(serve that version's graph file again, or run `stateous init supervisor "
        f"{url} {folder}` for the version it serves now); trying again in "
    )
    assert _refusals(messages) == [refusal + "1s", refusal + "2s", refusal + "4s"]
    first = messages.index(refusal + "1s")
    assert messages[:first].count(ANSWERS_AGAIN.format(url=url)) == 1
    assert messages[first - 1] == ANSWERS_AGAIN.format(url=url)
    assert messages[first:].count(ANSWERS_AGAIN.format(url=url)) == 0
    assert not any("older version" in m for m in messages)


def _told_once_of_the_newer_version(running: Supervise, mark: int, url: str) -> None:
    """B served beside A: the supervisor of A says once what a new one would say at its start."""
    older = (
        f"this supervisor serves an older version (sha256:{OLD[7:15]}…); new tokens start on "
        f"sha256:{NEW[7:15]}…; it runs the 1 live token(s) of its version"
    )
    running.wait_for(f"^{re.escape(older)}$", timeout=30)
    unreachable = any(m.startswith("cannot reach the control plane") for m in _since(running, mark))
    if unreachable:  # the claims' next try after their wait (up to its cap) says so
        again = ANSWERS_AGAIN.format(url=url)
        wait_until(lambda: again in _since(running, mark), timeout=30, what="answers again")
    time.sleep(1.5)  # five more looks at the version served: no second line
    messages = _since(running, mark)
    assert messages.count(older) == 1
    assert messages.count(ANSWERS_AGAIN.format(url=url)) == (1 if unreachable else 0)
    assert _refusals(messages) == []


def _state(url: str, token: str) -> str:
    return str(httpx.get(f"{url}/tokens/{token}", timeout=10).json()["state"])


#: A routine of the changed version (B): `draft` also emits `withdrawn`, unknown to A's contract.
WITHDRAW = """
from stateous import on_state

from contract import ItemContext, events, states


@on_state(states.draft)
def draft(ctx: ItemContext) -> events.withdrawn:
    return events.withdrawn()
"""
#: A routine of a version with a `checking` state, and one with a context model A lacks.
CHECKING = WITHDRAW.replace("states.draft", "states.checking")
MODEL = DRAFT.replace("ItemContext", "OrderContext")


def test_a_routine_of_another_version_is_named_with_the_contracts_version(
    tmp_path: Path,
) -> None:
    """A routine that names a state, an event or a model the folder's contract.py lacks (a
    contract.py copied over the new one's, or a routine from another version's folder) stops
    `supervise` with one sentence naming the file, the name and the contract's version."""
    write_graph(tmp_path, ORDERS)
    with serve_process(tmp_path / "orders.json", sqlite_url(tmp_path), cwd=tmp_path) as plane:
        folder = _folder(tmp_path, plane.url)
        where = folder.resolve()
        for routine, kind, name in (
            (CHECKING, "state", "checking"),
            (WITHDRAW, "event", "withdrawn"),
            (MODEL, "name", "OrderContext"),
        ):
            (folder / "draft.py").write_text(routine, encoding="utf-8")
            done = stateous("supervise", str(folder))
            assert (done.returncode, done.stderr.splitlines()[-1]) == (
                1,
                f"error: draft.py names the {kind} {name!r}, which the folder's contract.py "
                f"(version {OLD[7:15]}) does not have: the routine is for another version of "
                f"the workflow; write the contract of its version with `stateous init "
                f"supervisor URL {where}` (add `--checksum` for an older version)",
            )
