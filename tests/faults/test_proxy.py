"""A chaos TCP proxy between the supervisor and the control plane: every report arrives through
the outbox, and no report applies twice."""

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
from tests.faults.proxy import ChaosProxy
from tests.support import free_port, sqlite_url


def test_reports_cross_a_proxy_that_drops_delays_and_cuts(tmp_path: Path) -> None:
    db = sqlite_url(tmp_path)
    with plane(db, free_port(), tmp_path) as cp:
        proxy = ChaosProxy(upstream=cp.port)
        proxy.start()
        folder = make_folder(tmp_path, f"http://127.0.0.1:{proxy.port}", "box-1")
        run = supervise(folder)
        load = Load(cp.url, scaled(8, 300))
        load.start()
        try:
            load.run_out(cp.url)
            # The stop's single tries must not meet the chaos: messages would stay.
            proxy.drop = proxy.cut = proxy.delay = 0.0
            time.sleep(1.0)
        finally:
            code = run.stop()
            proxy.close()
    assert code == 0, run.lines
    assert outbox_count(folder) == 0
    figures = check_invariants(db)
    assert figures.tokens == load.tokens
    assert proxy.faults["cut"] > 0 and proxy.faults["drop"] > 0, proxy.faults
    figures.duplicates_answered = load.duplicates
    figures.faults = sum(proxy.faults.values())
    supervisor_figures(figures, run)
    assert figures.retried_calls > 0
    figures.write("chaos_proxy")
