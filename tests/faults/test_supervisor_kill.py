"""Many sdlc tokens (coding has retries=2) while the supervisor is SIGKILLed and restarted."""

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
from tests.support import free_port, sqlite_url


def test_supervisor_sigkilled_under_load(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path)
    kills = scaled(2, 6)
    with plane(db, free_port(), tmp_path) as cp:
        folder = make_folder(tmp_path, cp.url, "box-1")
        runs = [supervise(folder)]
        load = Load(cp.url, scaled(8, 500))
        load.start()
        try:
            for _ in range(kills):
                time.sleep(scaled(1, 5))
                runs[-1].kill()
                runs.append(supervise(folder))
            # Paused tokens have not moved while paused; then they are resumed and end too.
            load.run_out(
                cp.url,
                while_paused=lambda: check_invariants(db, paused=load.paused, all_ended=False),
            )
        finally:
            code = runs[-1].stop()
    assert code == 0, runs[-1].lines
    assert outbox_count(folder) == 0
    figures = check_invariants(db)
    assert figures.tokens == load.tokens
    assert figures.duplicates_answered == 0
    figures.duplicates_answered = load.duplicates
    figures.faults = kills
    supervisor_figures(figures, *runs)
    figures.write("supervisor_sigkill")
