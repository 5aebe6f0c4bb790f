"""The disk under a SQLite database turns read-only under load (issue 9): every answer is a
success or `503 database_busy`, and after the disk is checked and mounted again no token is lost.

A bind mount cannot be remounted read-only while `serve` has the database open for writing (the
kernel answers "mount point is busy"), so the disk is a small ext4 image of the test's own,
loop-mounted (`errors=remount-ro`, no journal) inside a mount namespace of the serve alone. The
fault is the kernel's own: `/sys/fs/ext4/<loop>/trigger_fs_error` makes ext4 report an error and
remount itself read-only at once, open files included, as a failing disk does. That read-only
state is an emergency one that no remount undoes, so the disk becomes writable again as an
operator makes it: stop `serve`, `e2fsck` the disk, mount it and start `serve` again.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.faults.harness import (
    SDLC_GRAPH,
    SERVE_ENV,
    AnswerProbe,
    Figures,
    Load,
    Plane,
    failures,
    make_folder,
    odd_answers,
    outbox_count,
    scaled,
    supervise,
    supervisor_figures,
)
from tests.support import free_port
from tests.support.processes import ROOT, serve_command, start_piped

TOOLS = ("unshare", "nsenter", "losetup", "mkfs.ext4", "e2fsck", "findmnt", "mount")
MOUNT_OPTIONS = "loop,errors=remount-ro"
#: Mount the disk in a new mount namespace, then become the given command (`exec` keeps the pid).
IN_NAMESPACE = f'img=$1; mnt=$2; shift 2; mount -o {MOUNT_OPTIONS} "$img" "$mnt" && exec "$@"'


def make_disk(image: Path, mount_point: Path) -> None:
    """A 64 MiB ext4 file system without a journal (so its error does not abort a journal)."""
    mount_point.mkdir(exist_ok=True)
    with image.open("wb") as out:
        out.truncate(64 * 1024 * 1024)
    run("mkfs.ext4", "-q", "-O", "^has_journal", str(image))


def run(*argv: str) -> subprocess.CompletedProcess[str]:
    """A program that must succeed; failing with its output."""
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    assert done.returncode == 0, f"{argv}: {done.stdout}{done.stderr}"
    return done


def in_namespace(image: Path, mount_point: Path, argv: list[str]) -> list[str]:
    """`argv` run in a mount namespace of its own where `image` is mounted on `mount_point`."""
    unshare = ["unshare", "-m", "--propagation", "private"]
    return [*unshare, "sh", "-c", IN_NAMESPACE, "sh", str(image), str(mount_point), *argv]


def turn_read_only(pid: int, mount_point: Path) -> None:
    """Make the disk that process `pid` sees on `mount_point` fail into read-only."""
    seen = Path(f"/proc/{pid}/root") / mount_point.relative_to("/")
    source = run("findmnt", "-n", "-o", "SOURCE", "--task", str(pid), str(mount_point)).stdout
    device = Path(source.strip()).name
    Path(f"/sys/fs/ext4/{device}/trigger_fs_error").write_text("stateous read-only test\n")
    assert _write_fails(seen), "the disk is still writable"


def _write_fails(folder: Path) -> bool:
    try:
        (folder / "probe").write_text("x")
    except OSError:
        return True
    return False


def why_no_read_only_disk(folder: Path) -> str | None:
    """The reason this machine cannot make a read-only disk for the test, or None."""
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return f"missing programs to make a loop-mounted disk: {', '.join(missing)}"
    if os.geteuid() != 0:
        return "loop mounts in a mount namespace need root"
    image, mount_point = folder / "probe.img", folder / "probe"
    make_disk(image, mount_point)
    probe = in_namespace(
        image, mount_point, ["sh", "-c", f"touch {mount_point}/x && exec sleep 30"]
    )
    child = subprocess.Popen(probe, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 10
        while not (Path(f"/proc/{child.pid}/root") / mount_point.relative_to("/") / "x").exists():
            if child.poll() is not None or time.monotonic() > deadline:
                error = child.stderr.read() if child.stderr is not None else ""
                return f"cannot loop-mount a disk in a mount namespace: {error.strip()}"
            time.sleep(0.1)
        try:
            turn_read_only(child.pid, mount_point)
        except (OSError, AssertionError) as exc:
            return f"cannot make an ext4 disk fail into read-only: {exc}"
        return None
    finally:
        child.kill()
        child.wait()
        if child.stderr is not None:
            child.stderr.close()
        wait_detached(image)
        image.unlink()


@dataclass
class DiskPlane(Plane):
    """A Plane whose database lives on `image`, mounted on `mount_point` for this serve alone."""

    image: Path = Path()
    mount_point: Path = Path()

    def _popen(self) -> subprocess.Popen[str]:
        argv = serve_command(SDLC_GRAPH, self.db_url, f"127.0.0.1:{self.port}")
        return start_piped(
            in_namespace(self.image, self.mount_point, argv),
            env={**SERVE_ENV, **self.env},
            cwd=self.cwd,
        )

    @property
    def pid(self) -> int:
        """The serve's pid (the namespace's first process became serve)."""
        assert self.served is not None
        return self.served.process.pid

    def check(self) -> Figures:
        """`PRAGMA integrity_check` and the invariants, run in the serve's mount namespace.

        Not through `/proc/<pid>/root`: SQLite resolves that link to `/`, outside the namespace.
        """
        script = (
            "import json, sqlite3, sys\n"
            "from tests.faults.harness import check_invariants\n"
            "path = sys.argv[1]\n"
            "conn = sqlite3.connect(f'file:{path}?mode=rw', uri=True)\n"
            "assert conn.execute('PRAGMA integrity_check').fetchone() == ('ok',)\n"
            "conn.close()\n"
            "print(json.dumps(vars(check_invariants(f'sqlite:///{path}'))))\n"
        )
        path = str(self.mount_point / "stateous.db")
        argv = ["nsenter", "-t", str(self.pid), "-m", sys.executable, "-c", script, path]
        done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=ROOT)
        assert done.returncode == 0, done.stdout + done.stderr
        return Figures(**json.loads(done.stdout))


@dataclass
class Probe(AnswerProbe):
    """Probes while `on`; a 503 is not asked again (serve is restarted on purpose)."""

    asked: set[str] = field(default_factory=set)
    on: threading.Event = field(default_factory=threading.Event)

    def stop(self) -> None:
        """End the probing."""
        self.on.clear()
        super().stop()

    def _run(self) -> None:
        n = 1
        with httpx.Client(base_url=self.url, timeout=30) as http:
            while not self._stop.is_set():
                if not self.on.wait(0.1):
                    continue
                self._ask(http, "GET", "/tokens", params={"limit": "5"})
                name = f"P-{n}"
                n += 1
                self.asked.add(name)
                body = {"token": name, "context": {"repo": f"r/{name}"}}
                if self._ask(http, "POST", "/tokens", json=body) in (200, 201):
                    self.started.add(name)
                time.sleep(0.1)


@contextmanager
def disk_plane(tmp_path: Path) -> Iterator[DiskPlane]:
    """A started DiskPlane on a new disk; stopped (or killed) at the end."""
    image, mount_point = tmp_path / "disk.img", tmp_path / "disk"
    make_disk(image, mount_point)
    cp = DiskPlane(
        f"sqlite:///{mount_point}/stateous.db",
        free_port(),
        tmp_path,
        image=image,
        mount_point=mount_point,
    )
    cp.start_retrying()
    try:
        yield cp
    finally:
        if cp.served is not None and cp.served.process.poll() is None:
            try:
                cp.stop()
            except subprocess.TimeoutExpired:
                cp.kill()


def fail_and_repair(cp: DiskPlane, probe: Probe, down: float) -> tuple[int, list[str]]:
    """Turn the disk read-only under load for `down` seconds; then stop serve, check the disk
    and start serve again. Answers serve's exit code and its stderr lines."""
    assert cp.served is not None
    probe.on.set()
    time.sleep(0.5)
    turn_read_only(cp.pid, cp.mount_point)
    time.sleep(down)
    probe.on.clear()
    time.sleep(0.5)  # the probe's last call ends
    # It keeps answering (reads, and `503 database_busy` for writes) until it is stopped.
    assert cp.served.process.poll() is None, cp.served.read_lines(1.0)[-40:]
    code = cp.stop()
    lines = list(cp.served.lines)
    wait_detached(cp.image)
    # e2fsck answers 0 for a clean disk, 1 when it fixed errors (the one ext4 recorded).
    fsck = subprocess.run(
        ["e2fsck", "-f", "-y", str(cp.image)], capture_output=True, text=True, check=False
    )
    assert fsck.returncode in (0, 1), fsck.stdout + fsck.stderr
    cp.start_retrying()
    return code, lines


def wait_detached(image: Path, timeout: float = 20.0) -> None:
    """Wait until no loop device holds `image` (its namespace ended with serve, and the mount
    with it): checking or mounting a disk that is still mounted would corrupt it."""
    deadline = time.monotonic() + timeout
    while run("losetup", "-j", str(image)).stdout.strip():
        assert time.monotonic() < deadline, f"{image} is still on a loop device"
        time.sleep(0.1)


@pytest.mark.skipif(os.environ.get("STATEOUS_TEST_DB") == "postgres", reason="SQLite only")
@pytest.mark.timeout(scaled(120, 1800))
def test_a_read_only_disk_is_database_busy_and_loses_nothing(tmp_path: Path) -> None:
    reason = why_no_read_only_disk(tmp_path)
    if reason is not None:
        pytest.skip(reason)
    rounds = scaled(1, 3)
    lines: list[str] = []
    codes: list[int] = []
    with disk_plane(tmp_path) as cp:
        folder = make_folder(tmp_path, cp.url, "box-1")
        run = supervise(folder)
        load = Load(cp.url, scaled(8, 300))
        probe = Probe(cp.url)
        load.start()
        probe.start()
        try:
            for _ in range(rounds):
                time.sleep(scaled(1, 3))
                code, seen = fail_and_repair(cp, probe, down=scaled(2, 4))
                codes.append(code)
                lines.extend(seen)
            probe.stop()
            load.run_out(cp.url)
        finally:
            probe.stop()
            supervised = run.stop()
        figures = cp.check()
        assert cp.served is not None
        lines.extend(cp.served.read_lines(0.2))
    assert not probe.wrong, probe.wrong[:20]
    assert probe.answers["503 database_busy"] > 0, probe.answers  # the read-only disk was seen
    assert not failures(lines), "\n".join(failures(lines)[:80])
    assert not odd_answers(run.messages()), odd_answers(run.messages())
    assert codes == [0] * rounds, (codes, lines[-40:])
    assert supervised == 0, run.lines
    assert outbox_count(folder) == 0
    # A start answered 503 was not applied, or was and ended as the others did.
    assert load.tokens + len(probe.started) <= figures.tokens
    assert figures.tokens <= load.tokens + len(probe.asked)
    figures.duplicates_answered = load.duplicates
    figures.faults = rounds
    supervisor_figures(figures, run)
    figures.write("read_only_disk_sqlite")
