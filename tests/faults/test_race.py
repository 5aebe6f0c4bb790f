"""Two supervisors on two folders racing for the same states: no attempt is held by both."""

from __future__ import annotations

from pathlib import Path

from tests.faults.harness import (
    Load,
    check_invariants,
    make_folder,
    outbox_count,
    plane,
    scaled,
    supervise,
    supervisor_figures,
)
from tests.support import free_port


def test_two_supervisors_race_for_the_same_states(
    tmp_path: Path, backend: str, db_url: str
) -> None:
    with plane(db_url, free_port(), tmp_path) as cp:
        folders = [make_folder(tmp_path, cp.url, name, tasks=4) for name in ("box-a", "box-b")]
        runs = [supervise(folder) for folder in folders]
        load = Load(cp.url, scaled(8, 400), prefix=backend)
        load.start()
        try:
            load.run_out(cp.url)
        finally:
            codes = [run.stop() for run in runs]
    assert codes == [0, 0]
    assert [outbox_count(folder) for folder in folders] == [0, 0]
    figures = check_invariants(db_url)
    assert figures.tokens == load.tokens
    took = [sum("attempt" in m and m.startswith("task ") for m in run.messages()) for run in runs]
    assert all(count > 0 for count in took), took  # both really raced
    supervisor_figures(figures, *runs)
    figures.write(f"two_supervisors_{backend}")
