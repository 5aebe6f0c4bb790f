"""`stateous inbox` as a real process against a real `stateous serve`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from stateous.model.history import local_datetime
from tests.e2e.test_token_commands import serving, stateous

BOX = "build-box-1"


def post(url: str, path: str, body: dict[str, Any]) -> Any:
    answer = httpx.post(f"{url}{path}", json=body, timeout=30)
    assert answer.status_code in (200, 201, 204), answer.text
    return answer.json() if answer.content else None


def waiting(url: str, state: str, note: str | None) -> None:
    """Claim the oldest task of `state` as build-box-1, note `note`, report it waiting."""
    grant = post(url, "/tasks/claim", {"supervisor": BOX, "states": [state]})
    if note is not None:
        post(url, f"/tasks/{grant['task']}/note", {"text": note})
    post(url, f"/tasks/{grant['task']}/report", {"kind": "waiting", "supervisor": BOX})


def test_the_inbox_as_a_table_then_empty(tmp_path: Path) -> None:
    with serving(tmp_path) as served:
        url = served.url
        assert stateous("inbox", url=url) == (
            0,
            "the inbox is empty: no token waits for a person\n",
            "",
        )
        for token in ("T-1", "T-2"):
            post(url, "/tokens", {"token": token, "context": {"repo": "acme/api"}})
        waiting(url, "coding", "which branch, main or next?")
        grant = post(url, "/tasks/claim", {"supervisor": BOX, "states": ["coding"]})
        post(url, f"/tasks/{grant['task']}/report", {"kind": "event", "event": "done",
                                                      "supervisor": BOX})  # fmt: skip
        waiting(url, "testing", None)
        post(url, "/tokens/T-2/pause", {})
        since = [local_datetime(e["since"]) for e in httpx.get(f"{url}/inbox").json()]
        code, out, err = stateous("inbox", url=url)
        assert (code, err) == (0, "")
        assert [line.rstrip() for line in out.splitlines()] == [
            "token          state     waiting since         the question                  "
            "the events it takes",
            "─" * 125,
            f"T-1            coding    {since[0]}   which branch, main or next?   done, stuck",
            f"T-2 (paused)   testing   {since[1]}   -                             "
            "passed {passed, failed}, failed {passed, failed}",
            "answer one with: stateous token fire ID EVENT [PAYLOAD_JSON] --reason TEXT",
        ]
        code, out, err = stateous("inbox", "--state", "testing", url=url)
        assert (code, err) == (0, "")
        assert [line.split()[0] for line in out.splitlines()[2:-1]] == ["T-2"]
        assert stateous("token", "fire", "T-1", "done", url=url)[0] == 0
        post(url, "/tokens/T-2/cancel", {})
        assert stateous("inbox", url=url) == (
            0,
            "the inbox is empty: no token waits for a person\n",
            "",
        )


def test_refusals_are_one_sentence(tmp_path: Path) -> None:
    with serving(tmp_path) as served:
        code, out, err = stateous("inbox", "--limit", "0", url=served.url)
        assert (code, out) == (2, "")
        assert err.startswith("Usage: stateous inbox ")
        assert err.endswith(
            "\nError: Invalid value for '--limit': 0 is not a whole number from 1 to 1000\n"
        )
        code, out, err = stateous("inbox", "--state", "s" * 130, url=served.url)
        assert (code, out) == (1, "")
        assert err == (
            f"error: the control plane at {served.url} refused (422): "
            "'state' is a text of 1 to 129 characters\n"
        )


def test_a_state_the_workflow_does_not_have(tmp_path: Path) -> None:
    """Refused as the bulk filter refuses it, not shown as an empty inbox."""
    with serving(tmp_path) as served:
        assert stateous("inbox", "--state", "nope", url=served.url) == (
            1,
            "",
            "error: --state names 'nope', which is not a state of the workflow\n",
        )
        assert stateous("inbox", "--state", "testing", url=served.url) == (
            0,
            "the inbox is empty: no token waits for a person\n",
            "",
        )
