"""The supervisor's start-up after its folder is read and its outbox locked: health, the
contract's version, routines."""

from __future__ import annotations

import logging
from typing import Any

from stateous.model.errors import StateousError
from stateous.model.versions import short
from stateous.supervisor.folder import load_routines
from stateous.supervisor.remote import Answer, UnreadableAnswer
from stateous.supervisor.shared import Shared

__all__ = ["StartError", "older_version_line", "start"]

log = logging.getLogger("stateous.supervisor")

_NO_ROUTE = (404, 405)  # a control plane of before versions


class StartError(StateousError):
    """The supervisor does not start; the message is the sentence after `error: `."""

    code = "supervisor_start"


async def start(shared: Shared) -> None:
    """Check health and checksum, import the routines, and log what this supervisor serves.

    A contract of the version the control plane serves starts at once; one of another version
    starts when that version is on record, and says so once.
    """
    answer = await _get(shared, "/health")
    if answer is None:
        raise StartError(f"{shared.url} did not answer as a Stateous control plane: stopped")
    served = _served_checksum(shared.url, answer)
    shared.served = served
    settings = shared.settings
    if served != settings.checksum:
        log.info("%s", await _older_version(shared, served))
    shared.registry = load_routines(settings.folder)
    log.info(
        "%s serves %s; the control plane is %s",
        settings.name,
        ", ".join(shared.registry.states),
        shared.url,
    )


async def _get(shared: Shared, path: str) -> Answer | None:
    """`GET path`, until an answer comes (None: a stop began first)."""
    try:
        return await shared.persist(lambda: shared.remote.call("GET", path))
    except UnreadableAnswer as exc:
        return Answer(exc.status, None)


def _other_version(shared: Shared, served: str) -> StartError:
    """The refusal when the contract is of a version the control plane cannot run."""
    folder = shared.settings.folder.resolve()
    return StartError(
        f"{folder}/contract.py is for another version of the workflow "
        f"({shared.settings.checksum}; the control plane serves {served}): "
        f"run `stateous init supervisor {shared.url} {folder}` again"
    )


async def _older_version(shared: Shared, served: str) -> str:
    """The line of a supervisor of an older version on record; StartError for a checksum
    never served, or a control plane without versions (`404`: one checksum only)."""
    answer = await _get(shared, "/workflow/versions")
    if answer is None:
        raise StartError(f"{shared.url} did not answer as a Stateous control plane: stopped")
    if answer.status in _NO_ROUTE:
        raise _other_version(shared, served)
    line = older_version_line(_version_rows(shared.url, answer), shared.settings.checksum, served)
    if line is None:
        raise _other_version(shared, served)
    return line


def older_version_line(rows: list[dict[str, Any]], mine: str, served: str) -> str | None:
    """The line of a supervisor of the version `mine` beside the current one, from the rows of
    `GET /workflow/versions` (newest first); None when `mine` is not on record."""
    found = next((row for row in rows if row.get("checksum") == mine), None)
    if found is None:
        return None
    # `live` is counted once per structure, on its newest checksum: the first row of it.
    newest = next(row for row in rows if row.get("structure") == found.get("structure"))
    current = next((row["checksum"] for row in rows if row.get("current") is True), served)
    return (
        f"this supervisor serves an older version (sha256:{short(mine)}…); new tokens start "
        f"on sha256:{short(str(current))}…; it runs the {newest.get('live', 0)} live token(s) "
        "of its version"
    )


def _version_rows(url: str, answer: Answer) -> list[dict[str, Any]]:
    """The rows of `GET /workflow/versions` (newest first)."""
    if not answer.ok:
        detail = f", {answer.code}: {answer.sentence}" if answer.code else ""
        raise StartError(
            f"{url} did not answer as a Stateous control plane: it answered {answer.status}{detail}"
        )
    body = answer.body
    if not isinstance(body, list) or not all(isinstance(row, dict) for row in body):
        raise StartError(
            f"{url} did not answer as a Stateous control plane: "
            "its versions are not a list of versions"
        )
    return body


def _served_checksum(url: str, answer: Answer) -> str:
    def refuse(message: str) -> StartError:
        return StartError(f"{url} did not answer as a Stateous control plane: {message}")

    if not answer.ok:
        detail = f", {answer.code}: {answer.sentence}" if answer.code else ""
        raise refuse(f"it answered {answer.status}{detail}")
    if not isinstance(answer.body, dict):
        raise refuse("the control plane's answer is not a JSON object")
    checksum = answer.body.get("checksum")
    if not isinstance(checksum, str):
        raise refuse("the control plane's answer has no checksum")
    return checksum
