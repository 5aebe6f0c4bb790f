"""The progress bar of the long commands (`token start --file`, `prune`, `import`): drawn on
stderr when it is a terminal, while stdout (a pipe here) carries the summary alone. Real
processes against a real `serve`, stderr on a pseudo-terminal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support import serve_process, sqlite_url
from tests.support.graphs import SDLC, write_graph


def on_a_terminal(*args: str, cwd: Path) -> tuple[int, str, str]:
    """`python -m stateous ARGS` with stderr on a pseudo-terminal: (exit code, stdout, what the
    terminal showed)."""
    primary, secondary = os.openpty()
    env = {k: v for k, v in os.environ.items() if k not in ("STATEOUS_URL", "NO_COLOR")}
    command = subprocess.Popen(
        [sys.executable, "-m", "stateous", *args], cwd=cwd, env=env,
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=secondary, text=True,
    )  # fmt: skip
    os.close(secondary)
    shown = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the command ended
            break
        if not chunk:
            break
        shown += chunk
    os.close(primary)
    out, _ = command.communicate(timeout=60)
    return command.returncode, out, shown.decode(errors="replace")


def test_start_prune_and_import_draw_their_bar_on_a_terminal(tmp_path: Path) -> None:
    starts = tmp_path / "starts.jsonl"
    starts.write_text(
        "".join(f'{{"token": "B-{n}", "context": {{"repo": "r"}}}}\n' for n in range(30))
    )
    archive = tmp_path / "archive.jsonl"
    with serve_process(write_graph(tmp_path, SDLC), sqlite_url(tmp_path), cwd=tmp_path) as served:
        code, out, shown = on_a_terminal(
            "token", "start", "--file", str(starts), "--url", served.url, cwd=tmp_path
        )
        assert (code, out) == (0, "started 30, already there 0, refused 0\n")
        assert "starting" in shown
        cancelled = on_a_terminal(
            "token",
            "cancel",
            "--where",
            "--status",
            "active",
            "--yes",
            "--url",
            served.url,
            cwd=tmp_path,
        )
        assert cancelled[0] == 0, cancelled
        code, out, shown = on_a_terminal(
            "prune", "--ended-before", "2999-01-01T00:00:00Z", "--export", str(archive), "--yes",
            "--url", served.url, cwd=tmp_path,
        )  # fmt: skip
        assert code == 0 and out.startswith("pruned 30 tokens ("), (out, shown)
        assert "pruning" in shown
    code, out, shown = on_a_terminal(
        "import", str(archive), "--db", sqlite_url(tmp_path, "restored.db"), cwd=tmp_path
    )
    assert code == 0, shown
    assert out == (
        f"imported 30 tokens into {sqlite_url(tmp_path, 'restored.db')}, skipped 0 (already "
        "there); 30 are of a graph this database has not served: their search keys are indexed "
        "at its first serve\n"
    )
    assert "importing" in shown
