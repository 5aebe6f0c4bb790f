"""The supervisor's start-up (spec 40 §4.2 steps 3 to 7): health, checksum, routines."""

from __future__ import annotations

import logging

from stateous.model.errors import StateousError
from stateous.supervisor.folder import load_routines
from stateous.supervisor.remote import Answer, UnreadableAnswer
from stateous.supervisor.shared import Shared

__all__ = ["StartError", "start"]

log = logging.getLogger("stateous.supervisor")


class StartError(StateousError):
    """The supervisor does not start; the message is the sentence after `error: `."""

    code = "supervisor_start"


async def start(shared: Shared) -> None:
    """Check health and checksum, import the routines, and log what this supervisor serves."""
    try:
        answer = await shared.persist(lambda: shared.remote.call("GET", "/health"))
    except UnreadableAnswer as exc:
        answer = Answer(exc.status, None)
    if answer is None:
        raise StartError(f"{shared.url} did not answer as a Stateous control plane: stopped")
    served = _served_checksum(shared.url, answer)
    settings = shared.settings
    folder = settings.folder.resolve()
    if served != settings.checksum:
        raise StartError(
            f"{folder}/contract.py is for another version of the workflow "
            f"({settings.checksum}; the control plane serves {served}): "
            f"run `stateous init supervisor {shared.url} {folder}` again"
        )
    shared.registry = load_routines(settings.folder)
    log.info(
        "%s serves %s; the control plane is %s",
        settings.name,
        ", ".join(shared.registry.states),
        shared.url,
    )


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
