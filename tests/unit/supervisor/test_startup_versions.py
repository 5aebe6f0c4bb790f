"""The supervisor's start-up against control planes with and without versions:
a contract of another checksum is refused with the sentence of any contract for another version
(run `stateous init supervisor` again) when the control plane has
no `GET /workflow/versions` (one checksum only, as before) or when its versions lack it.

The control plane here is an httpx transport standing in for both kinds (the real one is tested
in tests/integration/supervisor/test_versions_side_by_side.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from stateous.supervisor.folder import Settings
from stateous.supervisor.loop import StartError, Supervisor, Timings
from stateous.supervisor.outbox import Outbox
from stateous.supervisor.remote import Remote

URL = "http://control.test"
MINE = "sha256:" + "a" * 64
SERVED = "sha256:" + "b" * 64


class Plane:
    """`/health` serving SERVED; `/workflow/versions` answers `versions` (None: no route)."""

    def __init__(self, versions: list[dict[str, Any]] | None) -> None:
        self.versions = versions
        self.paths: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.paths.append(request.url.path)
        if request.url.path == "/health":
            return httpx.Response(200, json={"status": "ok", "checksum": SERVED})
        if request.url.path == "/workflow/versions" and self.versions is not None:
            return httpx.Response(200, json=self.versions)
        return httpx.Response(404, json={"error": "there is no such route", "code": "not_found"})


@pytest.fixture
def outbox(tmp_path: Path) -> Iterator[Outbox]:
    """The supervisor's outbox in a temporary folder."""
    box = Outbox(tmp_path)
    yield box
    box.close()


async def refusal(tmp_path: Path, outbox: Outbox, plane: Plane) -> str:
    """The sentence of a start-up refused by `plane`."""
    settings = Settings(folder=tmp_path, url=URL, tasks=1, name="box-1", checksum=MINE)
    sup = Supervisor(settings, outbox, url=URL, timings=Timings(max_retry=0.05))
    sup.remote = Remote(URL, transport=httpx.MockTransport(plane))
    try:
        with pytest.raises(StartError) as raised:
            await sup.start()
    finally:
        await sup.remote.aclose()
    return raised.value.message


def another_version(tmp_path: Path) -> str:
    folder = tmp_path.resolve()
    return (
        f"{folder}/contract.py is for another version of the workflow ({MINE}; the control "
        f"plane serves {SERVED}): run `stateous init supervisor {URL} {folder}` again"
    )


async def test_a_control_plane_without_versions_serves_its_one_checksum(
    tmp_path: Path, outbox: Outbox
) -> None:
    plane = Plane(versions=None)
    assert await refusal(tmp_path, outbox, plane) == another_version(tmp_path)
    assert plane.paths == ["/health", "/workflow/versions"]


async def test_a_checksum_never_served_is_refused_with_the_same_sentence(
    tmp_path: Path, outbox: Outbox
) -> None:
    versions = [
        {"checksum": SERVED, "structure": SERVED, "current": True, "live": 3},
        {"checksum": "sha256:" + "c" * 64, "structure": "sha256:" + "c" * 64, "live": 1},
    ]
    plane = Plane(versions=versions)
    assert await refusal(tmp_path, outbox, plane) == another_version(tmp_path)


async def test_versions_that_are_not_a_list_are_no_control_planes_answer(
    tmp_path: Path, outbox: Outbox
) -> None:
    plane = Plane(versions=None)
    plane.versions = {"checksum": MINE}  # type: ignore[assignment]  # a wrong answer on purpose
    assert await refusal(tmp_path, outbox, plane) == (
        f"{URL} did not answer as a Stateous control plane: its versions are not a list of versions"
    )
