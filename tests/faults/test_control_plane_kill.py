"""The control plane SIGKILLed and restarted under load, on SQLite and on Postgres."""

from __future__ import annotations

import time
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


def test_control_plane_sigkilled_under_load(tmp_path: Path, backend: str, db_url: str) -> None:
    kills = scaled(2, 5)
    with plane(db_url, free_port(), tmp_path) as cp:
        folder = make_folder(tmp_path, cp.url, "box-1")
        run = supervise(folder)
        load = Load(cp.url, scaled(8, 500), prefix=backend)
        load.start()
        try:
            for _ in range(kills):
                time.sleep(scaled(1, 5))
                cp.kill()
                # SQLite: the new one waits for the dead one's hold to lapse (2 s here).
                cp.start_retrying()
            load.run_out(
                cp.url,
                while_paused=lambda: check_invariants(db_url, paused=load.paused, all_ended=False),
            )
        finally:
            code = run.stop()
    assert code == 0, run.lines
    assert outbox_count(folder) == 0
    figures = check_invariants(db_url)
    assert figures.tokens == load.tokens
    figures.duplicates_answered = load.duplicates
    figures.faults = kills
    supervisor_figures(figures, run)
    assert figures.retried_calls > 0  # the supervisor did see the control plane go away
    figures.write(f"control_plane_sigkill_{backend}")
